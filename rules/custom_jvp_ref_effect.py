from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE, ref_name, where_from

# Transforms under which a custom_jvp function touching a ref fails (measured: jit).
_STAGING = api.CACHING_TRANSFORMS


class CustomJvpRefEffect(Rule):
    """A `jax.custom_jvp` function reads or writes a ref and runs under `jit`.

    ## What it does
    Reports a read or write of a ref (closed over or passed as an argument) in the body of a
    function decorated with (or wrapped by) `jax.custom_jvp`, when that function runs under
    `jax.jit` or `pmap`: jitted itself or called from a jitted function.

    ## Why is this bad?
    JAX cannot stage a `custom_jvp` function with ref effects: under `jit` the call fails
    with "No state discharge rule implemented for primitive: custom_jvp_call", an error about
    JAX's internals that does not point at the ref. The same function works outside `jit`
    and under `jax.grad`. Read the ref outside the `custom_jvp` function and pass the value
    in (a `jax.custom_vjp` function may read a closed-over ref under `jit`).

    ## Example
    ```python
    import jax

    scale = jax.new_ref(2.0)


    @jax.custom_jvp
    def f(x):
        return x * scale[...]


    f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0] * 2.0))
    y = jax.jit(f)(1.0)
    ```

    ## Use instead
    ```python
    import jax

    scale = jax.new_ref(2.0)


    @jax.custom_jvp
    def f(x, s):
        return x * s


    f.defjvp(lambda primals, tangents: (f(*primals), tangents[0] * primals[1]))
    y = jax.jit(f)(1.0, scale[...])
    ```

    ## Known limits
    Only the body of the `custom_jvp` function itself is checked, not helpers it calls.

    ## JAX versions
    The same on JAX 0.10.2 and 0.12.0.1 (measured): a read or a write, of a closed-over ref or
    of a ref argument, fails under `jit`; outside `jit` (eagerly, under `jax.grad`) it works.

    ## Runtime message
    `NotImplementedError: No state discharge rule implemented for primitive:
    custom_jvp_call`. `reflint run` reports it as REF027.
    """

    code = "REF027"
    name = "custom-jvp-ref-effect"
    fixable = ""
    triggers = (REF_EVIDENCE, r"\bcustom_jvp\b")

    def check(self, analysis):
        seen = set()
        for acc in analysis.accesses:
            func = acc.func
            if func is None or func.is_module or not func.has_role(api.Role.CUSTOM_JVP):
                continue
            if acc.ref.tree or not (_STAGING & analysis.trace_kinds(func)):
                continue
            if id(func) in seen:
                continue
            seen.add(id(func))
            name = ref_name(analysis, acc.ref_expr, acc.ref)
            what = "writes" if acc.is_write else "reads"
            yield Finding(acc.node, (
                f"`{func.name}` is a custom_jvp function that {what} the ref "
                f"{name}{where_from(analysis, acc.ref)} and runs under jit: JAX fails with "
                f"\"No state discharge rule implemented for primitive: custom_jvp_call\". "
                f"Read the ref outside `{func.name}` and pass its value in"))
