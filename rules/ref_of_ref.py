from __future__ import annotations

from reflint._lazy import lazy
from reflint.rule import Finding, Rule
from reflint.values import RefVal

from ._common import REF_EVIDENCE, ref_name, where_from

cst = lazy("reflint.nodes")


class RefOfRef(Rule):
    """A ref constructor is given a Ref as its initial value (a ref of a ref).

    ## What it does
    Reports `jax.new_ref(x)` (any spelling: `jax.ref.new_ref`, the pre-0.7.2 `jax.array_ref`,
    `jax.empty_ref`...) when `x` is itself a Ref: a ref made by another constructor call, a
    ref parameter, a ref held in a variable, a list element or an attribute of `self`. Values
    read from a ref (`x_ref[...]`, `jax.freeze(x_ref)`) are Arrays and are not reported.

    ## Why is this bad?
    Refs hold Arrays, not other refs: the JAX docs rule out refs of refs. JAX does not say so.
    At top level the constructor fails with an empty `AssertionError`; inside `jit` the call is
    silently accepted, and the program fails later, when the outer ref is read, with a
    `JaxprInputEffect` error that prints a whole jaxpr. To copy a ref, read it first; to share
    it, pass the ref itself.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    copy_ref = jax.new_ref(x_ref)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    copy_ref = jax.new_ref(x_ref[...])
    ```

    ## Known limits
    Only refs the shared analysis can see are reported: a ref returned by a function of
    another module, or stored in a container the analysis does not follow, is unknown. Refs
    held in objects, dicts (`state.items()`) and NamedTuples are followed. A
    pytree holding refs (`new_ref((a_ref, b_ref))`) is not reported (JAX rejects any pytree
    with a `TypeError`).

    ## JAX versions
    Same behaviour on 0.7.2–0.10.2; on 0.7.1 the top-level error is `NotImplementedError: No
    state discharge rule implemented for primitive: copy` instead. Inside `jit` every version
    accepts an unused ref of a ref, and fails with the `JaxprInputEffect` error when it is read.

    ## Runtime message
    `AssertionError` with no message (top level, 0.7.2–0.10.2); inside `jit`: nothing, or
    ``ValueError: `JaxprInputEffect` Read<0> does not have corresponding jaxpr input`` once the
    outer ref is read.
    """

    code = "REF009"
    name = "ref-of-ref"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        traced = analysis.is_traced
        for c in analysis.creations:
            inner = c.init_value
            if not isinstance(inner, RefVal) or c.init_expr is None:
                continue
            name = ref_name(analysis, c.init_expr, inner)
            if traced(c.func):
                what = ("inside a traced function JAX accepts it silently and fails with a "
                        "`JaxprInputEffect` error once the outer ref is read")
            elif analysis.settings.target_jax_version < (0, 7, 2):
                what = ("JAX fails with `NotImplementedError: No state discharge rule "
                        "implemented for primitive: copy`")
            else:
                what = "JAX fails with an empty `AssertionError`"
            advice = ("pass the initial value itself" if isinstance(c.init_expr, cst.Call)
                      else f"pass {name}[...] to copy its value")
            origin = "" if isinstance(c.init_expr, cst.Call) else where_from(analysis, inner)
            msg = (f"{name} is a Ref{origin}, and a ref cannot hold a ref: "
                   f"{what}; {advice}")
            yield Finding(c.node, msg)
