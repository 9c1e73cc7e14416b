from __future__ import annotations

from reflint import api
from reflint._lazy import lazy
from reflint.rule import Finding, Rule
from reflint.values import OneOf, iter_refs

from ._common import REF_EVIDENCE, nnx_root_name, via, where_from

cst = lazy("reflint.nodes")

# The calls that reject aliased refs, and their words in messages.
CALL_KINDS = {a.name: a.call_word for a in api.APIS if a.checks_aliasing}


class RefPassedTwice(Rule):
    """The same Ref is passed more than once in one call to a traced function.

    ## What it does
    Reports a call that passes one Ref twice — positionally, by keyword, or nested in tuples,
    lists and dicts — to a jit-compiled, vmapped, pmapped or custom_vjp function, or as the
    operands of `lax.scan` (init and xs), `lax.cond` / `lax.switch`, `lax.while_loop`,
    `lax.fori_loop` and `pl.kernel` (JAX: "Cannot pass the same ref into a mpmd map multiple
    times", measured on 0.10.2 and 0.12.0.1).

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
    ref (same creation, same parameter). Items of a list or dict built by a comprehension of
    new refs are compared by their constant index or key (`pool[0]` twice is reported,
    `pool[0], pool[1]` is not; `pool[i]` is compared with nothing). A name that holds one of
    several refs (`r = a_ref if c else b_ref`, a loop's ref) is reported only when that one
    name is passed twice. Flax NNX objects holding refs count with their Variables and sub-modules: one
    object passed twice, or holding one Variable at two attributes (`self.c = self.a`), is
    reported for `jax.jit`, not for `nnx.jit` (which accepts both); see docs/flax-nnx.md.
    Objects of the module's classes are made per site: two fields of one object bound to one
    ref are compared, the fields of two instances are not the same ref. A list of NNX objects
    held by a module (`nnx.data([nnx.Linear(...) for _ in range(n)])`) counts like an
    `nnx.List`. One Variable (or layer) given to the `__init__` of two modules built with refs
    on and held by both (`self.w = w`) is one ref in both; one held through anything else
    (set after construction, through a helper) is not compared.

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
                    label = analysis.text_of(expr)
                for ref, path in iter_refs(value):
                    key = ref.key
                    if not ref.unique:
                        # One of several refs (`r = a_ref if c else b_ref`, a loop's ref): the
                        # same one only where one name is passed twice.
                        if not isinstance(expr, cst.Name):
                            continue
                        key = ("name", expr.value, ref.key)
                    if key in seen:
                        first = seen[key]
                        name = key[1] if key is not ref.key else (ref.name or "a ref")
                        msg = (f"{name} is passed twice to {CALL_KINDS[kind]}"
                               f"{_which(analysis, call)} "
                               f"(as {first} and as {label}{path}){where_from(analysis, ref)}; "
                               f"JAX forbids aliased refs — pass each ref once")
                        if ref.tree:
                            msg += _nnx_hint(first, f"{label}{path}", ref)
                        yield Finding(call.node, msg)
                        break
                    seen[key] = f"{label}{path}"
                else:
                    continue
                break


def _which(analysis, call) -> str:
    """Which function the call reaches, when its callee is a name or item that may hold one
    of several (`kernel = a if c else b`, `fns[key]`, a transform picked from a table)."""
    out = via(call.transforms)
    if len(call.targets) != 1 or not isinstance(call.node, cst.Call):
        return out
    target = call.targets[0]
    if target.is_lambda or not isinstance(analysis.value_of(call.node.func), OneOf):
        return out
    text = analysis.text_of(call.node.func)
    if len(text) <= 40 and "\n" not in text and text.rsplit(".", 1)[-1] != target.name:
        out += f" (when `{text}` is {target.name})"
    return out


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
