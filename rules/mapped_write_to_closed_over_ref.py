from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import FuncVal

from ._common import REF_EVIDENCE, nnx_root_name, ref_name, role_word

cst = lazy("reflint.nodes")

_MAP_ORDER = api.in_role_order(api.roles_where("maps"))


class MappedWriteToClosedOverRef(Rule):
    """A function mapped by `vmap`, `pmap` or `shard_map` writes a Ref it closes over.

    ## What it does
    Reports a write (`x_ref[...] = v`, `x_ref[i] += v`, `jax.ref.set` / `swap` /
    `addupdate`) inside a function mapped by `jax.vmap`, `jax.pmap` or `shard_map` — or in a
    helper it calls, or a nested function that runs under the map — to a Ref the mapped
    function closes over: created outside it, or a parameter of an enclosing function. A ref
    argument that a `vmap` leaves unmapped (`in_axes=None`, or `None` at its position in a
    literal `in_axes` tuple) is shared the same way and reported too, as is a ref bound to the
    mapped function with `functools.partial` (`jax.vmap(partial(f, acc_ref))`: the partial's
    arguments are constants of the mapped function, not mapped arguments). Reading a
    closed-over ref
    is not reported, nor is writing a ref created inside the mapped function or passed to it as
    a mapped argument.

    ## Why is this bad?
    One closed-over ref is shared by every mapped element, so "write it once per element" has
    no meaning. `vmap` rejects a per-element value with a bare `Exception`, and before 0.8.0
    silently wrote an element-independent value once instead of once per element. `pmap` and
    `shard_map` give internal errors (`'AbstractRef' object has no attribute 'nospec'`,
    `_RepError`, an empty `AssertionError`), or, on 0.8–0.9, silently keep one device's write.
    Pass the ref as an argument of the mapped function (mapped with `in_axes`), or return the
    values and write them after the map.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    total_ref = jax.new_ref(0.0)

    def accumulate(x):
        total_ref[...] += x
        return x * 2

    ys = jax.vmap(accumulate)(jnp.arange(3.0))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    out_ref = jax.new_ref(jnp.zeros(3))

    def double_into(x, o_ref):
        o_ref[...] = x * 2

    jax.vmap(double_into)(jnp.arange(3.0), out_ref)
    ```

    ## Known limits
    `in_axes` is read only when it is a literal (`None`, or a tuple / list) and the function is
    not a `functools.partial`; pytree `in_axes` are not followed.
    Whether the written value depends on the mapped element is not analysed, so the message
    gives the behaviour of both cases. Writes made by a method of a closed-over object
    (`jax.vmap(lambda x: layer(x))` with `__call__` writing `self.num_calls[...]`), by a Flax
    BatchNorm in training (`use_running_average=False` given literally, also as an attribute
    of a module: `self.norm(x)`; not when the file may switch modes after construction:
    `.eval()`, `.train()`, `set_attributes`, `nnx.view`; not the default nor a non-literal
    mode) and by `Optimizer.update` are followed; Dropout's and Rngs' counters (Flax's
    `TraceContextError`) are not. Reads of closed-over refs are not reported,
    although `jit(shard_map)` / `pmap` fail on them too on 0.10.2. Refs whose origin the
    analysis cannot follow are not reported.

    ## JAX versions
    `vmap`, element-dependent value (closed-over ref, or ref argument with `in_axes=None`): an
    error on every version (0.7.1–0.10.2).
    `vmap`, element-independent value (e.g. a constant): silently written once on 0.7.1 and
    0.7.2, an error from 0.8.0. `pmap`: `Cannot lower jaxpr with effects` on 0.7.x, silently
    accepted on 0.8.0–0.9.0 (on 2 devices 0.8.0 kept one device's write), `AttributeError` on
    0.10.2. `jit(shard_map)`: silently accepted on a 1-device mesh and `_RepError` on 2
    devices up to 0.9.0, `AttributeError` on 0.10.2; eager `shard_map` with any ref fails with
    an empty `AssertionError` (0.7.2+).

    ## Runtime message
    `Exception: performing a set/swap operation with vmapped value on an unbatched array
    reference of type Ref{float32[]}. Move the array reference to be an argument to the
    vmapped function?` (vmap); `AttributeError: 'AbstractRef' object has no attribute
    'nospec'` (pmap, jit(shard_map), 0.10.2); `ValueError: Cannot lower jaxpr with effects:
    {ReadEffect(0), WriteEffect(0)}` (pmap, 0.7.x); no error at run time for an
    element-independent vmap write on 0.7.x, and for pmap / jit(shard_map) on 0.8.0–0.9.0.
    """

    code = "REF005"
    name = "mapped-write-to-closed-over-ref"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        mapped = [f for f in analysis.traced_functions() if f.role_kinds() & api.MAP_TRANSFORMS]
        if not mapped:
            return
        for acc in analysis.accesses:
            if not acc.is_write or not analysis.is_traced(acc.func):
                continue
            for m in mapped:
                if id(acc.func) not in analysis.trace_extent(m):
                    continue
                origins = analysis.ref_origins(acc.ref, m)
                if not origins:
                    continue
                if all(s == "outside" for s, _ in origins):
                    yield Finding(acc.node, self._message(analysis, acc, m, origins[0][1]),
                                  related_node=origins[0][1].node,
                                  related_message="the ref comes from here")
                    break
                if all(s == "argument" for s, _ in origins) and \
                        _partial_bound(analysis, m, [root for _, root in origins]):
                    yield Finding(acc.node, self._message(analysis, acc, m, origins[0][1],
                                                          partial=True))
                    break
                if all(s == "argument" for s, _ in origins) and \
                        _unmapped(analysis, m, [root for _, root in origins]):
                    yield Finding(acc.node, self._message(analysis, acc, m, origins[0][1],
                                                          unmapped=True))
                    break

    @staticmethod
    def _message(analysis, acc, m, root, unmapped=False, partial=False) -> str:
        name = ref_name(analysis, acc.ref_expr, acc.ref)
        kinds = m.role_kinds()
        kind = next(k for k in _MAP_ORDER if k in kinds)
        where = f"{m.name} ({role_word(kind)})"
        if unmapped:
            kind = api.Role.VMAP
            where = f"{m.name} ({role_word(kind)})"
            src = "a ref argument passed with in_axes=None"
        elif partial:
            src = "a ref bound to it with functools.partial (not a mapped argument)"
        elif root.tree and root.origin == "created" and root.node is not None:
            line = analysis.line_of(root.node)
            if acc.ref.root is not None:
                part = "a layer" if acc.ref.tree == "module" else "a Variable"
                src = (f"{part} of `{root.name or nnx_root_name(acc.ref)}`, an NNX module "
                       f"holding refs created outside it, on line {line}")
            elif root.tree == "module":
                src = f"an NNX module holding refs, created outside it, on line {line}"
            else:
                src = f"a Variable holding a ref, created outside it, on line {line}"
        elif root.origin == "created" and root.node is not None:
            src = f"a ref created outside it, {analysis.created_at(root)}"
        else:
            owner = root.scope.name if root.scope is not None else "an enclosing function"
            src = f"a ref parameter of {owner}"
        v = analysis.settings.target_jax_version
        runtime = api.by_version(api.role_info(kind).mapped_write_error, v)
        if kind == api.Role.VMAP:
            fix = "pass the ref as a mapped argument, or return the values and write them " \
                "after the vmap"
        else:
            fix = "return the values and write them after the map"
        shared = "unmapped" if unmapped else "closed-over"
        if unmapped:
            fix = "map the ref (in_axes=0) so each element writes its own slot, or return " \
                "the values and write them after the vmap"
        return (f"{where} writes {name}, {src}: all mapped elements share one {shared} ref, "
                f"so the write has no per-element meaning; {runtime}. Instead, {fix}")


def _partial_bound(analysis, m, roots) -> bool:
    """True if every root is a parameter of ``m`` that ``functools.partial`` binds in the
    function one of m's map transforms is applied to (``jax.vmap(partial(f, x_ref))``): a
    partial's arguments are constants of the mapped function, shared like a closure."""
    if m.is_method:
        return False
    positional = [p.name for p in m.params if p.kind in ("pos", "posonly")]
    bound: set = set()
    for role in m.roles.values():
        if not api.role_info(role.kind).maps or role.transform is None:
            continue
        node = role.transform.node
        if not isinstance(node, cst.Call) or not node.args:
            continue
        target = analysis.value_of(node.args[0].value)
        if isinstance(target, FuncVal) and target.info is m:
            bound.update(positional[:len(target.bound_args)])
            bound.update(target.bound_kwargs)
    if not bound:
        return False
    for root in roots:
        key = root.key
        if len(key) < 3 or key[2] not in bound:
            return False
    return True


def _unmapped(analysis, m, roots) -> bool:
    """True if every root is a top-level parameter of ``m`` that one of m's vmaps does not
    map (``in_axes=None``, or ``None`` at its position in a literal in_axes tuple)."""
    if m.is_method:
        return False
    positional = [p.name for p in m.params if p.kind in ("pos", "posonly")]
    for root in roots:
        key = root.key
        if len(key) < 3 or (len(key) > 3 and key[3]) or key[2] not in positional:
            return False
        index = positional.index(key[2])
        if not any(_axis_is_none(analysis, role.transform, index)
                   for role in m.roles.values()
                   if role.kind == api.Role.VMAP and role.transform is not None):
            return False
    return True


def _axis_is_none(analysis, transform, index) -> bool:
    node = transform.node
    if isinstance(node, cst.Call) and node.args:
        target = analysis.value_of(node.args[0].value)
        if isinstance(target, FuncVal) and (target.bound_args or target.bound_kwargs):
            return False  # functools.partial shifts the positions
    where = api.API[transform.kind].in_axes
    axes = transform.kwargs.get(where.kw)
    if axes is None and len(transform.args) >= where.pos:
        axes = transform.args[where.pos - 1]  # args: the positionals after the function
    if axes is None:
        return False  # default in_axes=0
    if isinstance(axes, cst.Name):
        return axes.value == "None"
    if isinstance(axes, (cst.Tuple, cst.List)):
        elements = axes.elements
        if any(isinstance(e, cst.StarredElement) for e in elements) or index >= len(elements):
            return False
        item = elements[index].value
        return isinstance(item, cst.Name) and item.value == "None"
    return False
