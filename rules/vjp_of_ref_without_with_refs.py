from __future__ import annotations

from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import REF_EVIDENCE, ref_name, where_from


class VjpOfRefWithoutWithRefs(Rule):
    """The VJP function of `jax.vjp(f, ..., x_ref, ...)` is called without `with_refs`.

    ## What it does
    Reports a call of the VJP function returned by `jax.vjp` when a primal argument of that
    `jax.vjp` call is a Ref (or a pytree holding one) and the VJP function is called directly,
    not through `vjp_fn.with_refs(...)`, which binds the gradient ref the ref's gradient is
    accumulated into.

    ## Why is this bad?
    The gradient with respect to a Ref-typed input must itself live in a Ref, so the VJP
    function cannot return it as a value. JAX 0.11 and later raise at the call ("its gradient
    must be accumulated into a ref ... `with_refs`"). JAX 0.10 and earlier cannot differentiate
    with respect to a Ref at all and fail with the obscure "Expected cotangent type
    Ref{float32[]} but got float32[]". Bind one entry per primal argument with `with_refs`: a
    gradient ref for each ref argument, `jax.ad.GradValue()` (or `jax.ad.DontWant()`) for the
    others.

    ## Example
    ```python
    import jax


    def f(x_ref):
        return x_ref[...] ** 2


    y, f_vjp = jax.vjp(f, jax.new_ref(2.0))
    f_vjp(1.0)
    ```

    ## Use instead
    ```python
    import jax


    def f(x_ref):
        return x_ref[...] ** 2


    y, f_vjp = jax.vjp(f, jax.new_ref(2.0))
    x_grad_ref = jax.new_ref(0.0)
    f_vjp.with_refs(x_grad_ref)(1.0)
    ```

    ## Known limits
    Only VJP functions the analysis follows from their `jax.vjp` call are checked (through
    variables, tuple unpacking and constant indexing, in the same module); a VJP function
    passed to another module's function, or a `jax.vjp` call with `*args`, is not.

    ## JAX versions
    `with_refs` exists from JAX 0.11.0; 0.12.0.1 raises the `ValueError` below at the direct
    call. On 0.10.2 and earlier every VJP with respect to a Ref fails, with or without a bound
    gradient ref (`with_refs` does not exist there): read the ref's value and differentiate the
    value instead.

    ## Runtime message
    JAX 0.12: `ValueError: the argument at position args[0] of the differentiated function f
    ... is Ref-typed, so its gradient must be accumulated into a ref ... with_refs`. JAX 0.10.2:
    `ValueError: Expected cotangent type Ref{float32[]} but got float32[]`.
    """

    code = "REF017"
    name = "vjp-of-ref-without-with-refs"
    triggers = (REF_EVIDENCE, r"\bvjp\b")

    def check(self, analysis):
        version = analysis.settings.target_jax_version
        for app in analysis.vjp_applications:
            if app.with_refs is not None:
                continue
            for i, (value, expr) in enumerate(app.vjp.primals):
                refs = list(iter_refs(value))
                if not refs:
                    continue
                ref, path = refs[0]
                name = ref_name(analysis, expr, ref) if expr is not None else f"argument {i}"
                line = analysis.line_of(app.vjp.node)
                at = f" on line {line}" if line else ""
                head = (f"the VJP function of jax.vjp{at} is called directly, but primal "
                        f"argument {i} ({name}{path}) is a Ref{where_from(analysis, ref)}")
                if version >= (0, 11):
                    msg = (f"{head}; its gradient must be accumulated into a ref, and JAX "
                           f"raises `ValueError: ... is Ref-typed, so its gradient must be "
                           f"accumulated into a ref` — bind one with "
                           f"`vjp_fn.with_refs(grad_ref, ...)` (one entry per primal argument; "
                           f"jax.ad.GradValue() for the others)")
                else:
                    msg = (f"{head}; JAX before 0.11 cannot differentiate with respect to a "
                           f"Ref and fails with `ValueError: Expected cotangent type Ref{{...}} "
                           f"but got ...` — pass its value ({name}[...]) to jax.vjp instead")
                yield Finding(app.node, msg, related_node=app.vjp.node,
                              related_message="jax.vjp called here")
                break
