"""Values with alternatives (OneOf, Choice) and element/item helpers."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from ..values import (
    MAX_ALTERNATIVES,
    QN,
    Choice,
    DictVal,
    FuncPoolVal,
    FuncVal,
    ObjVal,
    OneOf,
    RefPoolVal,
    RefSeqVal,
    RefVal,
    SeqVal,
    SpecialVal,
    TransformVal,
    Value,
    join,
)
from .syntax import (
    _const_index,
    _const_key,
    _is_pallas_param,
)

_CALLABLES = (FuncVal, OneOf, QN, TransformVal)


def _tag_via(result, target, expr, alt, text_of) -> Optional[Value]:
    """``result`` of applying ``alt``, one of a Choice read at ``expr``, to ``target``: when it
    is ``target`` with one more transform, that transform is marked as applied through the
    Choice (`via`)."""
    if isinstance(result, FuncVal) and isinstance(target, FuncVal) and \
            len(result.transforms) == len(target.transforms) + 1 and \
            not result.transforms[-1].via:
        text = text_of(expr)
        if isinstance(alt, QN):
            what = alt.qualname
        elif isinstance(alt, TransformVal):
            role = api.API[alt.kind].role
            what = (role is not None and api.role_info(role).spelled) or alt.kind
        elif isinstance(alt, FuncVal):
            what = alt.info.name
        else:
            what = ""
        if what and len(text) <= 40 and "\n" not in text:
            result.transforms[-1].via = f"when `{text}` is {what}"
    return result


def _choice(container) -> Optional[Value]:
    """``container[key]`` with a key reflint does not know, for a container of callables
    (``{"jit": jax.jit, "vmap": jax.vmap}[transform]``): one of them. Unknown items are left
    out; None when no item is a callable reflint knows, or when one is something else."""
    items = container.items.items() if isinstance(container, DictVal) else \
        enumerate(container.items)
    items = list(items)
    if items and all(isinstance(v, RefVal) for _, v in items):
        # `refs[i]` of a list of refs: a ref, one of them.
        return _element_of(SeqVal(tuple(v for _, v in items)))
    alts = []
    for k, v in items:
        if v is None:
            continue
        if not isinstance(v, _CALLABLES):
            return None
        alts.append((k, v))
    if not alts or len(alts) > MAX_ALTERNATIVES:
        return None
    funcs = [v for _, v in alts if isinstance(v, (FuncVal, OneOf))]
    if funcs and all(isinstance(v, (FuncVal, OneOf)) or
                     (isinstance(v, QN) and api.lookup(v.qualname) is None) for _, v in alts):
        # Local functions and builtins (`{"f": f, "other": print}[key]`): the functions; a
        # builtin called or transformed gives the analysis nothing.
        return _one_of(funcs)
    return Choice(tuple(alts))


def _one_of(values) -> Optional[Value]:
    """The join of the values of several alternatives (a OneOf of functions)."""
    out: Optional[Value] = None
    first = True
    for v in values:
        out, first = (v if first else join(out, v)), False
    return out


def _element_of(value: Optional[Value]) -> Optional[Value]:
    """The loop variable's value when iterating over ``value``."""
    if isinstance(value, RefSeqVal):
        return value.item(None)
    if isinstance(value, RefPoolVal) and value.kind != "dict":
        return value.item(None)
    if isinstance(value, FuncPoolVal) and value.kind != "dict":
        return value.elt
    if isinstance(value, ObjVal) and value.seq:  # a NamedTuple: its fields
        value = value.as_seq()
    if isinstance(value, SeqVal) and value.items:
        first = value.items[0]
        out = first
        for item in value.items[1:]:
            out = join(out, item)
        if isinstance(out, RefVal) and out is not first:
            out.unique = False
        return out
    return None


def _count_scratch(expr, kw: str, resolve=None) -> Optional[int]:
    """How many scratch buffers a launcher keyword gives: ``scratch_shapes=[a, b]`` -> 2,
    absent -> 0, a grid spec call -> its own ``scratch_shapes`` (0 without one); None when
    unknown. ``resolve(expr)``: the value a name stands for (else ``expr`` itself), for the
    keyword's value and the grid spec's ``scratch_shapes``."""
    if expr is None:
        return 0
    if resolve is not None:
        expr = resolve(expr)
    if isinstance(expr, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return None
        return len(expr.elements)
    if isinstance(expr, cst.Call) and kw != "scratch_shapes":
        for a in expr.args:
            if a.keyword is not None and a.keyword.value == "scratch_shapes":
                return _count_scratch(a.value, "scratch_shapes", resolve)
        if any(a.star or a.keyword is None for a in expr.args):
            return None  # scratch_shapes may be given by position
        return 0
    return None


def _unpacked_refs(value, n: int) -> Optional[RefSeqVal]:
    """Unpacking ``value`` into names: the tuple of refs it is, when it is one (a ``*refs``
    parameter, a Pallas kernel parameter or an element of one: a Ref itself is not unpacked)."""
    if isinstance(value, RefSeqVal):
        return value
    if isinstance(value, RefVal) and _is_pallas_param(value):
        return RefSeqVal(value)
    if isinstance(value, SpecialVal) and value.kind == "pallas_item":
        base, node = value.target, value.node
        k = _const_index(node)
        return RefSeqVal(RefVal(key=base.key + (f"[{k}]",), origin="pallas", node=base.node,
                                scope=base.scope, name=f"{base.name}[{k}]"))
    return None


def _seq_item(seq: RefSeqVal, node: cst.Subscript) -> Optional[Value]:
    """``refs[i]`` (a ref) or ``refs[a:]`` (a tuple of refs) of a tuple of refs."""
    if len(node.slice) != 1:
        return None
    s = node.slice[0].slice
    if isinstance(s, cst.Index):
        k = _const_key(s.value)
        return seq.item(k if isinstance(k, int) else None)
    if s.step is not None or s.upper is not None:
        return RefSeqVal(seq.base, seq.offset, False)
    k = _const_key(s.lower) if s.lower is not None else 0
    return seq.rest(k if isinstance(k, int) else None)

