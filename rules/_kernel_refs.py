"""What REF028 and REF029 ask about a `pallas_call` kernel: which parameters receive the
inputs, the outputs and the scratch buffers (counted on every launch, and checked against the
number of parameters), which inputs are aliased to outputs, and how each ref parameter is used
in the kernel's body (nested functions included)."""

from __future__ import annotations

from reflint import api
from reflint._lazy import lazy
from reflint._record import record
from reflint.values import ArrayVal

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

cst = lazy("reflint.nodes")
_analysis = lazy("reflint.analysis")
_alternatives = lazy("reflint.analysis.alternatives")

# Attributes of a ref that only look at its shape and type.
_METADATA = frozenset({"shape", "dtype", "ndim", "size"})


@record(frozen=True)
class KernelIO:
    """The parameters of a ``pallas_call`` kernel that receive its inputs, outputs and
    scratch buffers, and which inputs are aliased to outputs."""

    inputs: tuple  # parameter names, in operand order
    outputs: tuple
    scratch: tuple
    aliased_inputs: frozenset  # indices of inputs aliased to an output (input_output_aliases)
    aliased_outputs: frozenset


def kernel_io(analysis, info) -> Optional[KernelIO]:
    """The kernel's inputs, outputs and scratch parameters, when every launch of it says the
    same and the counts add up to its parameters; None when anything is unknown."""
    return analysis.cached(("kernel io", id(info)), lambda: _kernel_io(analysis, info))


def kernel_scratch(analysis, info) -> Optional[tuple]:
    """The kernel's scratch parameters (the last ref parameters: ``pallas_call`` gives the
    scratch buffers after the operands and outputs), when every launch says how many and
    they say the same; None when unknown. Known where ``kernel_io`` is not: the operands,
    outputs and aliases need not be countable."""
    return analysis.cached(("kernel scratch", id(info)), lambda: _kernel_scratch(analysis, info))


def _kernel_scratch(analysis, info) -> Optional[tuple]:
    entries = _pallas_call_entries(analysis, info)
    if entries is None:
        return None
    params = analysis.kernel_ref_params(info)
    counts = {_scratch_count(analysis, launch, entries)
              for launch in analysis.kernel_launches_of(info)}
    if len(counts) != 1 or None in counts:
        return None
    n = counts.pop()
    return tuple(params[len(params) - n:]) if 0 < n <= len(params) else ()


def pipeline_io(analysis, info) -> Optional[KernelIO]:
    """The block parameters of a TPU ``emit_pipeline`` body (``body(*in_blocks,
    *out_blocks, *scratches)``), when every launch of the pipeline counts its ``in_specs``
    and ``out_specs`` (a ``BlockSpec`` or a literal list of them, also through a name bound
    once in the launching scope) the same; None otherwise. An output block is copied out
    after the step, never in: it starts uninitialised as a kernel's output does."""
    return analysis.cached(("pipeline io", id(info)), lambda: _pipeline_io(analysis, info))


def _pipeline_io(analysis, info) -> Optional[KernelIO]:
    entries = analysis.kernel_entries_of(info)
    if not entries or not all(e.api_name == api.EMIT_PIPELINE for e in entries):
        return None
    if info.is_lambda or any(p.kind in ("vararg", "kwarg") for p in info.params):
        return None
    params = analysis.kernel_ref_params(info)
    counts = set()
    for launch in analysis.kernel_launches_of(info):
        if launch.api_name != api.EMIT_PIPELINE:
            return None
        counts.add((_count_specs(analysis, launch.kwargs.get("in_specs"), launch.scope),
                    _count_specs(analysis, launch.kwargs.get("out_specs"), launch.scope)))
    if len(counts) != 1:
        return None
    n_in, n_out = counts.pop()
    if n_in is None or n_out is None or n_in + n_out > len(params):
        return None
    return KernelIO(tuple(params[:n_in]), tuple(params[n_in:n_in + n_out]),
                    tuple(params[n_in + n_out:]), frozenset(), frozenset())


def _count_specs(analysis, expr, scope) -> Optional[int]:
    """How many blocks ``in_specs`` / ``out_specs`` give: none when absent, one for a
    ``BlockSpec(...)``, the length of a list or tuple of them; None for anything else (a
    pytree, a spec built elsewhere)."""
    if expr is None:
        return 0
    expr = _bound_value(analysis, expr, scope)
    if isinstance(expr, (cst.List, cst.Tuple)):
        if all(isinstance(e, cst.Element) and
               _is_block_spec(_bound_value(analysis, e.value, scope)) for e in expr.elements):
            return len(expr.elements)
        return None
    return 1 if _is_block_spec(expr) else None


def _is_block_spec(expr) -> bool:
    return isinstance(expr, cst.Call) and _analysis.last_name(expr.func) == "BlockSpec"


def _pallas_call_entries(analysis, info) -> Optional[list]:
    """The kernel's entries, when all are ``pallas_call`` and its parameters are named
    ones (no ``*args``/``**kwargs``, not a lambda)."""
    entries = analysis.kernel_entries_of(info)
    if not entries or not all(e.api_name == api.PALLAS_CALL for e in entries):
        return None
    if info.is_lambda or any(p.kind in ("vararg", "kwarg") for p in info.params):
        return None
    return entries


def _scratch_count(analysis, launch, entries) -> Optional[int]:
    if launch.api_name != api.PALLAS_CALL:
        return None
    scope = launch.scope
    scratch = 0
    for kw in entries[0].callee.scratch:
        n = _alternatives._count_scratch(launch.kwargs.get(kw), kw,
                                         lambda e: _bound_value(analysis, e, scope))
        if n is None:
            return None
        scratch += n
    return scratch


def _bound_value(analysis, expr, scope):
    """The value a name is bound to (one plain assignment in the scope ``scope`` reads it
    from, ``grid_spec = pltpu.PrefetchScalarGridSpec(...)``), else ``expr``."""
    if isinstance(expr, cst.Name) and scope is not None:
        values = analysis.assigned_values(expr.value, scope)
        if values is not None and len(values) == 1:
            return values[0]
    return expr


def _kernel_io(analysis, info) -> Optional[KernelIO]:
    entries = _pallas_call_entries(analysis, info)
    if entries is None:
        return None
    params = list(analysis.kernel_ref_params(info))
    found = None
    for launch in analysis.kernel_launches_of(info):
        if launch.operands is None or launch.api_name != api.PALLAS_CALL:
            return None
        n_out = _count_outputs(analysis, launch.kwargs.get("out_shape"), launch.scope)
        scratch = _scratch_count(analysis, launch, entries)
        if scratch is None:
            return None
        if n_out is None:
            n_out = _outputs_by_arity(info, params, launch.operands, scratch)
        if n_out is None or launch.operands + n_out + scratch != len(params):
            return None
        aliases = _aliases(launch.kwargs.get("input_output_aliases"))
        if aliases is None:
            return None
        n_in = launch.operands
        io = KernelIO(tuple(params[:n_in]), tuple(params[n_in:n_in + n_out]),
                      tuple(params[n_in + n_out:]), frozenset(aliases),
                      frozenset(aliases.values()))
        if found is not None and io != found:
            return None
        found = io
    return found


def _outputs_by_arity(info, params: list, operands: int, scratch: int) -> Optional[int]:
    """How many outputs a kernel has whose ``out_shape`` cannot be counted (a parameter, a
    name bound elsewhere), from its arity: when nothing binds one of its positional
    parameters (no ``functools.partial`` argument, none taken for configuration) and none
    has a default, ``pallas_call`` passes it exactly one ref per parameter (the inputs, the
    outputs, the scratch buffers): the outputs are what the operands and scratch buffers
    leave. None otherwise, or when that leaves none."""
    positional = [p for p in info.params if p.kind in ("pos", "posonly")]
    if len(positional) != len(params) or any(p.node.default is not None for p in positional):
        return None
    n = len(params) - operands - scratch
    return n if n >= 1 else None


def _count_outputs(analysis, expr, scope=None) -> Optional[int]:
    """How many output refs ``out_shape`` (read in ``scope``) gives: a tuple/list literal of
    structs, one ``ShapeDtypeStruct(...)``, or one Array, also through a name bound to one;
    None when unknown (a pytree, a parameter)."""
    if expr is None:
        return None
    if isinstance(expr, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) or
               _count_outputs(analysis, e.value, scope) != 1 for e in expr.elements):
            return None
        return len(expr.elements)
    if isinstance(expr, cst.Call):
        f = expr.func
        if _analysis.last_name(f) in api.ONE_ARRAY_DESCRIPTIONS:
            return 1
        if isinstance(f, cst.Attribute) and \
                _analysis.last_name(f.value) in api.ONE_ARRAY_DESCRIPTION_OWNERS:
            return 1  # `jax.ShapeDtypeStruct.like(x)`, `pltpu.SemaphoreType.DMA(())`
        return None
    if isinstance(expr, cst.BinaryOperation) and type(expr.operator) is cst.Multiply:
        # `[jax.ShapeDtypeStruct(s, t)] * 2`: a literal sequence repeated a literal count
        seq, times = expr.left, expr.right
        if isinstance(seq, cst.Integer):
            seq, times = times, seq
        if isinstance(seq, (cst.Tuple, cst.List)) and isinstance(times, cst.Integer):
            n = _count_outputs(analysis, seq, scope)
            k = _analysis._const_key(times)
            return n * k if n is not None and type(k) is int and k >= 0 else None
        return None
    if isinstance(analysis.value_of(expr), ArrayVal):
        return 1
    if isinstance(expr, cst.Name):
        # `S = jax.ShapeDtypeStruct(...)` in the scope the launch reads `S` from (else bound
        # once in the module): one output.
        values = analysis.assigned_values(expr.value, scope) if scope is not None else \
            [a.value for a in _assignments(analysis).get(expr.value, ())]
        if not values:
            return None
        counts = {_count_outputs(analysis, v) if not isinstance(v, cst.Name) else None
                  for v in values}
        if len(counts) == 1:
            return counts.pop()
    return None


def _assignments(analysis) -> dict:
    """name -> the `name = value` statements of the module (any scope)."""
    def build() -> dict:
        out: dict = {}
        kinds = (cst.Assign, cst.AugAssign, cst.AnnAssign)
        for node, _, _ in analysis.small_statements():
            if type(node) not in kinds:
                continue
            if type(node) is cst.Assign:
                for t in node.targets:
                    if type(t.target) is cst.Name:
                        out.setdefault(t.target.value, []).append(node)
            elif type(node.target) is cst.Name:
                out.setdefault(node.target.value, []).append(node)
        return out
    return analysis.cached("module assignments", build)


def item_writes(analysis) -> dict:
    """name -> the kinds of write through one of its items the module makes anywhere (nested
    scopes included): "store" (``name[i] = v``), "augstore" (``name[i] += v``), as
    ``name_uses`` names them. A ref none of them names has no such write, and its uses need
    not be walked to know it."""
    def build() -> dict:
        out: dict = {}
        for stmt, _, _ in analysis.small_statements():
            for name, kind in _item_targets(stmt):
                out.setdefault(name, set()).add(kind)
        return out
    return analysis.cached("writes through an item", build)


def _item_targets(stmt) -> list:
    """(name, kind) for each target ``name[i]`` of the small statement ``stmt``: "augstore"
    for ``name[i] += v``, "store" for ``name[i] = v``."""
    t = type(stmt)
    if t is cst.AugAssign:
        targets, kind = (stmt.target,), "augstore"
    elif t is cst.Assign:
        targets, kind = [a.target for a in stmt.targets], "store"
    else:
        return []
    return [(tg.value.value, kind) for tg in targets
            if type(tg) is cst.Subscript and type(tg.value) is cst.Name]


def reads_own_item(stmt, name: str) -> bool:
    """The store ``stmt`` (``name[i] = value``) reads an item of ``name`` in its value
    (``o_ref[...] = o_ref[...] * decay + v``): it updates the ref's contents, as ``+=`` does.
    A read for its metadata only (``jnp.zeros_like(o_ref[...])``, ``o_ref[...].shape``)
    initialises: the value stored does not depend on the contents; so may a read inside a
    selection (``jnp.where(k == 0, x, o_ref[...] + x)``, ``lax.select``, a conditional
    expression), which can leave the contents out on the first visit (a selection beside the
    read, ``o_ref[...] + jnp.where(m, x, 0)``, does not)."""
    children = _analysis.child_nodes
    stack = [(stmt.value, None, None)]
    while stack:
        node, parent, grand = stack.pop()
        t = type(node)
        if t is cst.IfExp or t is cst.Call and \
                _analysis.last_name(node.func) in api.SELECTING_WORDS:
            continue  # a read in there may be selected away
        if t is cst.Subscript and type(node.value) is cst.Name and \
                node.value.value == name and not _metadata_read(parent, grand):
            return True
        stack.extend((child, node, parent) for child in children(node))
    return False




def _metadata_read(parent, grand) -> bool:
    """A read ``r[...]`` whose parent is ``parent`` (grandparent ``grand``) is used for its
    shape or dtype only: ``r[...].shape``, ``jnp.zeros_like(r[...])`` (any ``*_like``), an
    array-metadata function of the registry (``jnp.shape(r[...])``); not a ``*_like``'s fill
    value."""
    if type(parent) is cst.Attribute:
        return parent.attr.value in _METADATA
    if type(parent) is cst.Arg and type(grand) is cst.Call:
        last = _analysis.last_name(grand.func)
        if last.endswith("_like"):  # its first argument only (`full_like(x, r[...])`)
            return bool(grand.args) and grand.args[0] is parent and not parent.keyword
        return last in api.ARRAY_METADATA_FUNCTIONS
    return False


def augstore_in(analysis, info, name: str) -> bool:
    """Whether the kernel ``info`` (or a function nested in it) may hold an update through an
    item of ``name`` (``name[i] += v``, or ``name[i] = ... name[j] ...``), as ``name_uses``
    would find one: one whose nearest enclosing function is ``info`` or nested in it; a class
    body or a function the analysis did not register answers maybe. No: the kernel's names
    need not be walked for it."""
    def build() -> dict:
        out: dict = {}
        for stmt, scope, _ in analysis.small_statements():
            for name, kind in _item_targets(stmt):
                if kind == "augstore" or reads_own_item(stmt, name):
                    out.setdefault(name, []).append(scope)
        return out

    for scope in analysis.cached("updates through an item", build).get(name, ()):
        if scope is None:
            continue  # at module level: in no kernel
        f = analysis.functions.get(id(scope)) if type(scope) is cst.FunctionDef else None
        if f is None:
            return True
        while f is not None:
            if f is info:
                return True
            f = f.parent
    return False


def _aliases(expr) -> Optional[dict]:
    """``input_output_aliases={0: 0}`` as a dict; {} when absent; None when not a literal."""
    if expr is None:
        return {}
    if not isinstance(expr, cst.Dict):
        return None
    out = {}
    for e in expr.elements:
        if not isinstance(e, cst.DictElement) or not isinstance(e.key, cst.Integer) or \
                not isinstance(e.value, cst.Integer):
            return None
        out[int(e.key.value)] = int(e.value.value)
    return out


def name_uses(analysis, info, name: str) -> list:
    """(kind, node) for every use of the kernel parameter ``name`` in the kernel's body,
    nested functions included (unless they have their own ``name``). Kinds: "meta"
    (``.shape``, ``.dtype``...), "store" (``name[i] = v``: node is the statement), "augstore"
    (``name[i] += v``), "read" (``name[i]``), "other" (anything else: passed to a function, a
    view, rebound, declared nonlocal...)."""
    out = []
    for node, parent, grand, great in kernel_names(analysis, info).get(name, ()):
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            continue
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param)):
            continue  # a nested def named like it: handled as other below if rebound
        if isinstance(parent, cst.Attribute) and parent.value is node:
            out.append(("meta" if parent.attr.value in _METADATA else "other", parent))
            continue
        if isinstance(parent, cst.Subscript) and parent.value is node:
            if isinstance(grand, cst.AssignTarget):
                out.append(("store", great))
            elif isinstance(grand, cst.AugAssign) and grand.target is parent:
                out.append(("augstore", grand))
            elif isinstance(grand, (cst.Del, cst.For, cst.CompFor, cst.WithItem,
                                    cst.AnnAssign)):
                out.append(("other", parent))
            else:
                out.append(("read", parent))
            continue
        out.append(("other", node))
    return out


def kernel_names(analysis, info) -> dict:
    """name -> (Name node, its parent, grandparent, great-grandparent) for every name in the
    kernel's body, in walk order, nested functions included but for the names they bind as
    parameters (there the name is theirs), classes excluded: one walk for all parameters."""
    def build() -> dict:
        out: dict = {}
        children = _analysis.child_nodes
        stack = [(info.node.body, None, None, None, frozenset())]
        while stack:
            node, parent, grand, great, shadow = stack.pop()
            t = type(node)
            if t is cst.Name:
                if node.value not in shadow:
                    out.setdefault(node.value, []).append((node, parent, grand, great))
                continue
            if t is cst.ClassDef:
                continue
            if t is cst.FunctionDef or t is cst.Lambda:
                params = node.params
                shadow = shadow.union(
                    p.name.value for p in (*params.posonly_params, *params.params,
                                           *params.kwonly_params, params.star_arg,
                                           params.star_kwarg) if isinstance(p, cst.Param))
            for child in reversed(children(node)):
                stack.append((child, node, parent, grand, shadow))
        return out

    return analysis.cached(("kernel names", id(info)), build)
