from __future__ import annotations

from reflint._lazy import lazy
from reflint.rule import Finding, Rule
from reflint.values import RefVal

from ._common import REF_EVIDENCE, ref_name

cst = lazy("reflint.nodes")


class GradRefTypeMismatch(Rule):
    """A gradient ref given to `vjp_fn.with_refs` has another dtype or shape than its primal.

    ## What it does
    Reports an entry of `vjp_fn.with_refs(g_ref, ...)` that is a ref whose dtype or shape,
    both known to the shared dtype domain, differ from those of the primal at the same
    position of the `jax.vjp` call (a bfloat16 parameter with a float32 accumulator, a
    scalar ref for a vector).

    ## Why is this bad?
    JAX accumulates the primal's cotangent into the gradient ref with `+=`, which needs the
    same dtype and shape: the VJP fails, with an error that names `addupdate` (JAX 0.10.2)
    or only says "unexpected JAX type" (0.12). Make the gradient ref like the primal
    (`jax.new_ref(jnp.zeros_like(w))`), and cast when reading it if you want another dtype.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    w = jnp.ones(3, jnp.bfloat16)
    _, f_vjp = jax.vjp(lambda w: jnp.sum(w * w), w)
    g_ref = jax.new_ref(jnp.zeros(3, jnp.float32))
    f_vjp.with_refs(g_ref)(jnp.bfloat16(1.0))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    w = jnp.ones(3, jnp.bfloat16)
    _, f_vjp = jax.vjp(lambda w: jnp.sum(w * w), w)
    g_ref = jax.new_ref(jnp.zeros_like(w))
    f_vjp.with_refs(g_ref)(jnp.bfloat16(1.0))
    ```

    ## Known limits
    Only entries and primals whose dtypes (and shapes) the domain knows are compared;
    entries given with `*args` or by keyword are not checked.

    ## JAX versions
    `with_refs` exists from JAX 0.10.2 on; measured on 0.10.2 and 0.12.0.1: both fail when the
    VJP function is applied, with different messages.

    ## Runtime message
    JAX 0.12.0.1: `ValueError: unexpected JAX type (e.g. shape/dtype) for gradient ref passed
    to the VJP function's `with_refs` method for the argument at position args[0] ...`.
    JAX 0.10.2: `ValueError: Invalid dtype for `addupdate`. Ref dtype: float32. Value shape:
    bfloat16.` (or "Invalid shape for `addupdate`"). `reflint run` reports both as REF025.
    """

    code = "REF025"
    name = "grad-ref-type-mismatch"
    fixable = ""
    triggers = (REF_EVIDENCE, r"\bwith_refs\b")

    def check(self, analysis):
        if analysis.settings.target_jax_version < (0, 10, 2):
            return
        for w in analysis.with_refs_calls:
            if not w.entries:
                continue
            for i, (arg, value) in enumerate(w.entries):
                if not isinstance(value, RefVal) or value.tree or i >= len(w.vjp.primals):
                    continue
                grad = analysis.ref_aval(value)
                pvalue, pexpr = w.vjp.primals[i]
                primal = analysis.ref_aval(pvalue) if isinstance(pvalue, RefVal) else \
                    analysis.aval_of(pexpr)
                if grad is None or primal is None:
                    continue
                what = None
                if grad.dtype != primal.dtype:
                    what = f"dtype {grad.dtype}, the primal's is {primal.dtype}"
                elif grad.shape is not None and primal.shape is not None and \
                        grad.shape != primal.shape:
                    what = f"shape {grad.shape}, the primal's is {primal.shape}"
                if what is None:
                    continue
                name = ref_name(analysis, arg.value, value)
                ptext = analysis.text_of(pexpr)
                if len(ptext) > 30 or "\n" in ptext:
                    ptext = f"primal {i}"
                yield Finding(arg.value, (
                    f"gradient ref {name} has {what} (`{ptext}`): JAX accumulates the "
                    f"cotangent into it with `+=`, which fails when the VJP function is "
                    f"applied. Create it like the primal (`jax.new_ref(jnp.zeros_like(...))`)"))
