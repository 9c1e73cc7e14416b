"""Pallas kernels and forwarders (``KernelsMixin``): functions that hand their function
argument on to a kernel launcher or a transform, kernels marked where they are launched, and
the pieces of a kernel's ``*refs``."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from ..values import (
    QN,
    DictVal,
    FuncVal,
    OneOf,
    RefSeqVal,
    RefVal,
    SeqVal,
    Value,
    is_interesting,
)
from .facts import (
    FunctionInfo,
)
from .syntax import (
    _LITERALS,
    _METHOD_KINDS,
    _binds_name,
    _is_docstring,
)


class KernelsMixin:
    def _forwarded_api(self, fv: FuncVal) -> Optional[QN]:
        """A local function that only forwards its arguments to a JAX transform or Pallas entry
        point (``def pallas_call(self, *args, **kwargs): return pl.pallas_call(*args, **kwargs,
        interpret=True)``, as JAX's own tests do) stands for that API: its QN, else None."""
        if fv.transforms or fv.bound_args or fv.bound_kwargs:
            return None
        info = fv.info
        return self.cached(("forwards", id(info)), lambda: self._forwarding(info))

    def _applies_first(self, fv: FuncVal) -> bool:
        """``fv`` only calls its first parameter with the rest of its arguments
        (``def call(f, *args, **kw): return f(*args, **kw)``)."""
        if fv.transforms or fv.bound_args or fv.bound_kwargs or fv.self_value is not None:
            return False
        info = fv.info
        return self.cached(("applies", id(info)), lambda: self._applying(info))

    @staticmethod
    def _applying(info: FunctionInfo) -> bool:
        node = info.node
        if type(node) is not cst.FunctionDef or node.decorators or info.is_method:
            return False
        ps = info.params
        if len(ps) not in (2, 3) or ps[0].kind not in ("pos", "posonly") or \
                ps[1].kind != "vararg" or (len(ps) == 3 and ps[2].kind != "kwarg"):
            return False
        stmts = [st for st in getattr(node.body, "body", ())]
        if stmts and _is_docstring(stmts[0]):
            stmts = stmts[1:]
        if len(stmts) != 1 or type(stmts[0]) is not cst.SimpleStatementLine or \
                len(stmts[0].body) != 1 or type(stmts[0].body[0]) not in (cst.Return, cst.Expr):
            return False
        call = stmts[0].body[0].value
        if type(call) is not cst.Call or type(call.func) is not cst.Name or \
                call.func.value != ps[0].name:
            return False
        want = [("*", ps[1].name)] + ([("**", ps[2].name)] if len(ps) == 3 else [])
        got = [(a.star, a.value.value if type(a.value) is cst.Name else None)
               for a in call.args]
        return got == want

    def _forwarding(self, info: FunctionInfo) -> Optional[QN]:
        node = info.node
        if type(node) is not cst.FunctionDef or not all(
                type(d.decorator) is cst.Name and d.decorator.value in _METHOD_KINDS
                for d in node.decorators):
            return None
        vararg = next((p.name for p in info.params if p.kind == "vararg"), None)
        others = [p for p in info.params if p.kind not in ("vararg", "kwarg")]
        if vararg is None or len(others) > (1 if info.is_method else 0):
            return None
        stmts = [st for st in getattr(node.body, "body", ())]
        if stmts and _is_docstring(stmts[0]):
            stmts = stmts[1:]
        # The last statement returns the API's call on `*args`; statements before it may
        # adjust keyword arguments (JAX's ops_test sets `kwargs["compiler_params"]`), but not
        # rebind the positional ones.
        if not stmts or type(stmts[-1]) is not cst.SimpleStatementLine or \
                len(stmts[-1].body) != 1 or type(stmts[-1].body[0]) is not cst.Return or \
                any(_binds_name(st, vararg) for st in stmts[:-1]):
            return None
        call = stmts[-1].body[0].value
        if type(call) is cst.Name:
            # `result = _kernel(*args, **kwargs); self.used = True; return result`.
            binds = [st for st in stmts[:-1] if _binds_name(st, call.value)]
            st = binds[0] if len(binds) == 1 else None
            call = st.body[0].value if st is not None and \
                type(st) is cst.SimpleStatementLine and len(st.body) == 1 and \
                type(st.body[0]) is cst.Assign and len(st.body[0].targets) == 1 and \
                type(st.body[0].targets[0].target) is cst.Name else None
        if type(call) is not cst.Call:
            return None
        pos = [a for a in call.args if a.keyword is None and a.star != "**"]
        if not pos or pos[0].star != "*" or type(pos[0].value) is not cst.Name or \
                pos[0].value.value != vararg:
            return None
        target = self._lookup_static(call.func, info)
        if not isinstance(target, QN):
            return None
        a = api.lookup(target.qualname)
        if a is None or a.name not in api.DECORATOR_APIS:
            return None
        return target

    def _mark_kernel(self, kernel: FuncVal, node, callee: "api.Callee", kwargs=None) -> None:
        """``kernel`` is a Pallas kernel (or a run_state body): its parameters are refs, but
        for those bound with functools.partial and those the registry says are not (a
        pipeline body's indices and carry)."""
        info = kernel.info
        if callee.refs:
            bound = {p.name for p in info.params[:len(kernel.bound_args)]} | \
                set(kernel.bound_kwargs)
            # A parameter with a literal default (`scale=1.0`) is configuration the caller
            # leaves alone (a with_scoped body's), never a ref.
            bound |= {p.name for p in info.params if p.node.default is not None and
                      type(p.node.default) in _LITERALS}
            free = [p for p in info.params
                    if p.kind in ("pos", "posonly", "vararg") and p.name not in bound]
            bound |= {p.name for p in free[:callee.leading]}
            if callee.named_refs:
                bound |= {p.name for p in free if not _spelled_as_ref(p)}
            if free and any(k in (kwargs or {}) for k in callee.carry_if):
                bound.add(free[-1].name)
            # Arguments bound by functools.partial reach their parameters (a scratch ref
            # handed to a pipeline body: `partial(body, acc_ref)`).
            named = [p for p in info.params if p.kind in ("pos", "posonly")]
            for p, v in zip(named, kernel.bound_args):
                if is_interesting(v):
                    self._seed(info, p.name, v)
            if callee.typed_kwargs:
                # `scratches=(pltpu.VMEM(...), ...)`: that parameter is a tuple of refs.
                for name, expr in (kwargs or {}).items():
                    tree = _ref_tree(expr, (id(node), name))
                    if info.param(name) is not None and tree is not None:
                        bound.add(name)
                        self._seed(info, name, tree)
            for name, v in kernel.bound_kw_values:
                if is_interesting(v) and info.param(name) is not None:
                    self._seed(info, name, v)
            if self._pallas_kernels.get(id(info)) != bound:
                self._pallas_kernels[id(info)] = bound
                self._interprocedural = True
                if id(info) in self._evaluated:
                    self._stale = True  # its parameters were read without it
        self._add_role(info, callee.role, node)

    def _block_spec(self, node, callee: "api.Callee", args: list) -> None:
        """``pl.BlockSpec(block_shape, index_map)``: the index map's parameters spelled as
        refs receive the scalar-prefetch refs (``callee.named_refs``)."""
        if any(arg.star for arg, _ in args[:callee.pos + 1]):
            return
        positional = [v for arg, v in args if not arg.keyword]
        targets = [positional[callee.pos] if len(positional) > callee.pos else None]
        targets += [v for arg, v in args if arg.keyword and arg.keyword.value == callee.kw]
        self._index_maps(node, callee, targets)

    def _block_spec_subclass(self, node, args: list) -> None:
        """A subclass of BlockSpec built (``PatchBlockSpec(index_map, block_shape)``): its
        constructor may take its arguments in any order, so every function it is given is
        taken for an index map (a BlockSpec takes no other)."""
        callee = api.API[api.BLOCK_SPEC].callees[0]
        self._index_maps(node, callee, [v for _, v in args])

    def _index_maps(self, node, callee: "api.Callee", values: list) -> None:
        for value in values:
            for f in value.alts if isinstance(value, OneOf) else (value,):
                # (An index map without a parameter spelled as a ref has no ref to mark.)
                if isinstance(f, FuncVal) and any(_spelled_as_ref(p) for p in f.info.params):
                    self._mark_kernel(f, node, callee)

    def _split_sequence(self, args: list) -> Optional[Value]:
        """``split_list(refs, [n, ...])``: the pieces of a sequence (JAX's own helpers, in
        Pallas kernels that split their ``*refs``)."""
        pos = [(a, v) for a, v in args if not a.keyword and not a.star]
        if len(pos) != 2 or any(a.star for a, _ in args):
            return None
        (_, seq), (sizes_arg, _) = pos
        sizes = sizes_arg.value
        if not isinstance(sizes, (cst.List, cst.Tuple)) or \
                any(isinstance(e, cst.StarredElement) for e in sizes.elements):
            return None
        pieces = len(sizes.elements) + 1
        if isinstance(seq, RefSeqVal):
            return SeqVal((seq,) + tuple(RefSeqVal(seq.base, seq.offset, False)
                                         for _ in range(pieces - 1)))
        return None


def _spelled_as_ref(p) -> bool:
    """A parameter named like a ref (``lengths_ref``; ``*refs``, ``*scalar_refs``)."""
    return api.spelled_as_ref(p.name, tuple_of_refs=p.kind == "vararg")


def _ref_tree(expr, key: tuple) -> Optional[Value]:
    """The pytree of refs a literal tuple/list/dict of allocation types makes (a with_scoped
    keyword); None for anything else (one type: a ref)."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return None
        return SeqVal(tuple(_ref_tree(e.value, key + (i,)) or
                            RefVal(key=("scoped",) + key + (i,), origin="pallas", node=e.value,
                                   scope=None)
                            for i, e in enumerate(expr.elements)),
                      "tuple" if isinstance(expr, cst.Tuple) else "list")
    if isinstance(expr, cst.Dict):
        items = {}
        for e in expr.elements:
            if not isinstance(e, cst.DictElement) or not isinstance(e.key, cst.SimpleString):
                return None
            k = e.key.evaluated_value
            items[k] = _ref_tree(e.value, key + (k,)) or RefVal(
                key=("scoped",) + key + (k,), origin="pallas", node=e.value, scope=None)
        return DictVal(items)
    return None
