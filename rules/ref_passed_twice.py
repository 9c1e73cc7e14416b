from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import REF_EVIDENCE, nnx_root_name, where_from

# The calls that reject aliased refs, and their words in messages.
CALL_KINDS = {a.name: a.call_word for a in api.APIS if a.checks_aliasing}


class RefPassedTwice(Rule):
    """The same Ref is passed more than once in one call to a traced function.

    ## What it does
    Reports a call that passes one Ref twice — positionally, by keyword, or nested in tuples,
    lists and dicts — to a jit-compiled, vmapped, pmapped or custom_vjp function, or as the
    operands of `lax.scan` (init and xs), `lax.cond` / `lax.switch`, `lax.while_loop` and
    `lax.fori_loop`.

    ## Why is this bad?
    JAX rules out aliasing: two parameters of a traced function may not refer to the same
    mutable memory, or writes through one would silently change the other. JAX rejects it at
    trace time; with mutable-array checks off it fails only when the compiled program runs
    (`Attempt to donate the same buffer twice`), and `vmap`/`custom_vjp` accept it silently.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def copy(dst_ref, src_ref):
        dst_ref[...] = src_ref[...]

    x_ref = jax.new_ref(jnp.zeros(3))
    copy(x_ref, x_ref)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def copy(dst_ref, src_ref):
        dst_ref[...] = src_ref[...]

    x_ref = jax.new_ref(jnp.zeros(3))
    y_ref = jax.new_ref(jnp.ones(3))
    copy(x_ref, y_ref)
    ```
    Pass each ref once; if the function needs the same buffer in two roles, give it one
    parameter and use it twice inside.

    ## Known limits
    Two different names are only known to alias when the analysis sees both bound to the same
    ref (same creation, same parameter). Refs created in a loop or comprehension are not
    compared. Flax NNX objects holding refs count with their Variables and sub-modules: one
    object passed twice, or holding one Variable at two attributes (`self.c = self.a`), is
    reported for `jax.jit`, not for `nnx.jit` (which accepts both); see docs/flax-nnx.md.

    ## JAX versions
    0.7.2+ raise at trace time for jit, vmap, custom_vjp, scan and cond. 0.7.1 (checks off):
    XLA `Attempt to donate the same buffer twice` at execution for jit/scan/cond; vmap and
    custom_vjp accept it and both writes land.

    ## Runtime message
    `ValueError: only one reference to a mutable array may be passed as an argument to a
    function, but when tracing copy at ... for jit the mutable array reference of type
    Ref{float32[3]} appeared at both dst_ref and src_ref.`
    """

    code = "REF002"
    name = "ref-passed-twice"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        for call in analysis.traced_calls:
            kinds = [t.kind for t in call.transforms] or [call.kind]
            kind = next((k for k in reversed(kinds) if k in CALL_KINDS), None)
            if kind is None:
                continue
            # Name each operand by the parameter it reaches (as JAX does), else by its text.
            params = {id(b.expr): b.param for bs in call.bindings.values()
                      for b in bs.values() if b.expr is not None and b.param}
            seen = {}
            for value, expr in call.operands:
                if expr is None:
                    label = ""
                elif id(expr) in params:
                    label = f"parameter {params[id(expr)]}"
                else:
                    label = analysis.module.code_for_node(expr).strip()
                for ref, path in iter_refs(value):
                    if not ref.unique:
                        continue
                    if ref.key in seen:
                        first = seen[ref.key]
                        name = ref.name or "a ref"
                        msg = (f"{name} is passed twice to {CALL_KINDS[kind]} "
                               f"(as {first} and as {label}{path}){where_from(analysis, ref)}; "
                               f"JAX forbids aliased refs — pass each ref once")
                        if ref.tree:
                            msg += _nnx_hint(first, f"{label}{path}", ref)
                        yield Finding(call.node, msg)
                        break
                    seen[ref.key] = f"{label}{path}"
                else:
                    continue
                break


def _nnx_hint(first: str, second: str, ref) -> str:
    """What a Flax user does about an NNX object's refs reaching a call twice."""
    if first.split(".", 1)[0] == second.split(".", 1)[0]:
        # Two attributes of one argument hold the same Variable or sub-module.
        obj = nnx_root_name(ref)
        return (f". {obj} holds the same {'Variable' if ref.tree == 'variable' else 'object'} "
                f"at two attributes (`nnx.find_duplicates({obj})` lists them): pass "
                f"`graphdef, state = nnx.split({obj})` instead (split keeps each Variable once) "
                f"and `nnx.merge(graphdef, state)` inside, or use `nnx.jit`")
    return ", or use `nnx.jit`, which accepts one NNX object passed twice"
