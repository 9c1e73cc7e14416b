"""The evaluator's expressions (``ExpressionsMixin``): the abstract value of each expression."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from .._record import replace
from ..values import (
    QN,
    ArrayVal,
    ClassVal,
    DictVal,
    FuncPoolVal,
    FuncVal,
    InstanceVal,
    NamespaceVal,
    NnxVal,
    ObjVal,
    OneOf,
    RefPoolVal,
    RefSeqVal,
    RefVal,
    SeqVal,
    SpecialVal,
    Value,
    as_view,
    join,
    tree_attribute,
)
from .alternatives import (
    _choice,
    _element_of,
    _seq_item,
)
from .facts import (
    ClassInfo,
    UseAfterFreeze,
)
from .state import (
    _State,
)
from .syntax import (
    _COMPREHENSION_KINDS,
    _const_index,
    _const_key,
    _is_pallas_param,
    op_text,
    slice_exprs,
)


def _single_variable_index(node: cst.Subscript) -> bool:
    """``x[i]``: one index, not a constant, a slice, ``...`` or a tuple."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    v = node.slice[0].slice.value
    return type(v) not in (cst.Ellipsis, cst.Tuple, cst.Integer) and _const_key(v) is None


class ExpressionsMixin:

    # -- expressions -------------------------------------------------------------------------

    def _eval(self, node, state: _State) -> Optional[Value]:
        value = self._eval_inner(node, state)
        if value is not None:
            self._values[id(node)] = value
        return value

    def _eval_inner(self, node, state: _State) -> Optional[Value]:
        """The value of ``node``, by the kind of expression (``_EVALUATORS``); None: unknown."""
        method = _EVALUATORS.get(type(node))
        return method(self, node, state) if method is not None else None

    def _eval_name(self, node, state: _State) -> Optional[Value]:
        value = self._lookup(node.value, node, state)
        if self.project is not None:
            value = self.project_name_value(value, node)  # another module's ref
        if isinstance(value, RefVal) and value.key in state.frozen:
            self._sink.add(UseAfterFreeze(node, "use", value,
                                          state.frozen[value.key], self._func))
        return value

    def _eval_attribute(self, node, state: _State) -> Optional[Value]:
        base = self._eval(node.value, state)
        attr = node.attr.value
        if isinstance(base, QN):
            if self.project is not None:
                return self.project_name_value(QN(f"{base.qualname}.{attr}"), node)
            return QN(f"{base.qualname}.{attr}")
        if isinstance(base, RefVal) and base.tree:
            # An NNX object holding refs: its Variables and sub-modules hold refs too.
            if base.cls is None:
                return self._layer_method(base, attr)
            value = tree_attribute(base, attr, self._class_attrs(base.cls, attr))
            if value is None and base.tree == "module":
                m = base.cls.method(attr)
                if m is not None and "property" not in m.info.decorator_kinds and \
                        "staticmethod" not in m.info.decorator_kinds:
                    # `model.update(x)`: the method, bound to the module (objects.py).
                    return FuncVal(m.info, m.transforms, m.bound_args, m.bound_kwargs,
                                   base, m.bound_kw_values)
            root = node.value
            while type(root) is cst.Attribute:  # `model.inner.bias`
                root = root.value
            if value is not None and isinstance(root, cst.Name) and \
                    root.value not in state.env:
                # `model.bias` read through a closed-over `model`: a closed-over ref.
                label = f"{root.value}.{attr}" if root is node.value else \
                    self.text_of(node)
                self._note_closure(root.value, label, value, node)
            return value
        if isinstance(base, RefVal):
            if attr in api.REF_VIEW_ATTRIBUTES and (
                    not self._func.is_module or base.origin == "pallas"):
                # A view of the ref (jax/_src/state/types.py), valid on a traced ref: still
                # a ref. At top level a concrete Ref has none of them but `.at`.
                if attr == "at":
                    return SpecialVal("ref_at", base)
                return base if attr in api.REF_VIEW_PROPERTIES else \
                    SpecialVal("ref_view", base)
            if attr in api.ARRAY_ONLY_ATTRIBUTES:
                self._ref_use("attr", node.value, base, node, attr)
            if attr == "at":
                return SpecialVal("ref_at", base)
            return None
        if isinstance(base, ArrayVal) and attr in api.ARRAY_RESULT_PROPERTIES:
            return ArrayVal(node)  # `x.T`, `x.real` of an Array
        value = self._attribute_value(base, attr)
        if value is None and attr in api.INHERITED_WRAPPERS and \
                type(node.value) is cst.Name and node.value.value in ("self", "cls") and \
                not self._func.is_module:
            # `self.pallas_call(...)` inherited from an imported test base class (in a
            # method, or a function nested in one).
            return QN(api.INHERITED_WRAPPERS[attr])
        if isinstance(value, RefVal) and isinstance(node.value, cst.Name) and \
                node.value.value not in state.env:
            # `self.buf` read through a closed-over `self`: a closed-over ref.
            self._note_closure(node.value.value, f"{node.value.value}.{attr}", value, node)
        return value

    def _eval_subscript(self, node, state: _State) -> Optional[Value]:
        base = self._eval(node.value, state)
        self._eval_slices(node, state)
        if isinstance(base, RefVal):
            if _is_pallas_param(base) and (isinstance(_const_index(node), int) or (
                    type(node.value) is cst.Name and node.value.value.endswith("refs") and
                    len(node.slice) == 1 and
                    type(node.slice[0].slice) is cst.Index and
                    type(node.slice[0].slice.value) is cst.Name)):
                # `in_refs[0]`: a row of a ref, or a ref of a pytree of refs (a kernel
                # parameter may be either): unknown, unless it is unpacked. So is
                # `page_refs[group]` of a parameter named as a sequence of refs.
                return SpecialVal("pallas_item", base, node)
            self._record_access("read", node, node.value, base, None, state)
            if (base.origin == "pallas" or base.maybe_tree) and \
                    _single_variable_index(node) and not self._ref_indexer(node):
                # `refs[group]` of a kernel's pytree argument (or an item of one): a row of
                # a ref, or one of a tuple of refs; unknown (`refs[group][i] = v`).
                return None
            return ArrayVal(node)
        if isinstance(base, RefSeqVal):
            return _seq_item(base, node)
        if isinstance(base, FuncPoolVal):
            return base.elt if base.kind in ("list", "dict") else None
        if isinstance(base, RefPoolVal):
            item = base.item(_const_index(node))
            if type(node.value) is cst.Name and node.value.value not in state.env:
                # `pool[0]` read through a closed-over `pool`: a closed-over ref.
                self._note_closure(node.value.value,
                                   self.text_of(node), item, node)
            return item
        if isinstance(base, SpecialVal) and base.kind == "ref_at":
            return as_view(base.target, ".at[...]")
        if isinstance(base, ObjVal) and base.seq:  # a NamedTuple: a tuple of its fields
            base = base.as_seq()
        if isinstance(base, (SeqVal, DictVal)):
            key = _const_index(node)
            if key is not None:
                try:
                    return base.items[key]
                except (KeyError, IndexError, TypeError):
                    return None
            return _choice(base)
        if isinstance(base, ArrayVal):
            return ArrayVal(node)
        return None

    def _ref_indexer(self, node: cst.Subscript) -> bool:
        """``x[pl.ds(i, n)]``: the one index is built by a Pallas index constructor
        (api.REF_INDEXERS; the subscript's slices already evaluated)."""
        v = node.slice[0].slice.value
        if type(v) is not cst.Call:
            return False
        f = self._values.get(id(v.func))
        return isinstance(f, QN) and f.qualname in api.REF_INDEXERS

    def _eval_sequence(self, node, state: _State) -> Optional[Value]:
        t = type(node)
        items = []
        starred = False
        for e in node.elements:
            v = self._eval(e.value, state)
            if isinstance(e, cst.StarredElement):
                starred = True
            items.append(v)
        if starred:
            return None
        return SeqVal(tuple(items), "tuple" if t is cst.Tuple else "list")

    def _eval_dict(self, node, state: _State) -> Optional[Value]:
        items = {}
        ok = True
        for e in node.elements:
            if isinstance(e, cst.StarredDictElement):
                self._eval(e.value, state)
                ok = False
                continue
            self._eval(e.key, state)
            v = self._eval(e.value, state)
            k = _const_key(e.key)
            if k is None:
                ok = False
            else:
                items[k] = v
        return DictVal(items) if ok else None

    def _eval_binary(self, node, state: _State) -> Optional[Value]:
        lv = self._eval(node.left, state)
        rv = self._eval(node.right, state)
        op = op_text(node.operator)
        if op in ("+", "*") and (
                isinstance(lv, SeqVal) or isinstance(rv, SeqVal) or
                (op == "+" and (type(node.left) in (cst.Tuple, cst.List) or
                                type(node.right) in (cst.Tuple, cst.List)))):
            # Concatenating or repeating tuples (`(buf,) + scratches`, where `scratches` is a
            # kernel parameter that is a pytree of refs): a container, never math on a ref.
            if op == "+" and isinstance(lv, SeqVal) and isinstance(rv, SeqVal) and \
                    lv.kind == rv.kind:
                return SeqVal(lv.items + rv.items, lv.kind)
            return None
        if isinstance(lv, RefVal):
            self._ref_use("binop", node.left, lv, node, op)
        if isinstance(rv, RefVal):
            self._ref_use("binop", node.right, rv, node, op)
        if isinstance(lv, ArrayVal) or isinstance(rv, ArrayVal):
            return ArrayVal(node)
        return None

    def _eval_unary(self, node, state: _State) -> Optional[Value]:
        v = self._eval(node.expression, state)
        if isinstance(v, RefVal) and not isinstance(node.operator, cst.Not):
            self._ref_use("unary", node.expression, v, node, op_text(node.operator))
        return ArrayVal(node) if isinstance(v, ArrayVal) else None

    def _eval_comparison(self, node, state: _State) -> Optional[Value]:
        left = node.left
        lv = self._eval(left, state)
        for ct in node.comparisons:
            rv = self._eval(ct.comparator, state)
            if not isinstance(ct.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                op = op_text(ct.operator)
                if isinstance(lv, RefVal):
                    self._ref_use("compare", left, lv, node, op)
                if isinstance(rv, RefVal):
                    self._ref_use("compare", ct.comparator, rv, node, op)
            left, lv = ct.comparator, rv
        return None

    def _eval_boolean(self, node, state: _State) -> Optional[Value]:
        self._eval(node.left, state)
        self._eval(node.right, state)
        return None

    def _eval_ifexp(self, node, state: _State) -> Optional[Value]:
        self._eval(node.test, state)
        a = self._eval(node.body, state)
        b = self._eval(node.orelse, state)
        return join(a, b)

    def _eval_lambda(self, node, state: _State) -> Optional[Value]:
        info = self._get_function(node, self._func, None)
        for p in info.params:
            if p.node.default is not None:
                info.defaults[p.name] = self._eval(p.node.default, state)
        self._enqueue(info)
        return FuncVal(info)

    def _eval_named(self, node, state: _State) -> Optional[Value]:
        v = self._eval(node.value, state)
        self._bind_target(node.target, v, state, node)
        if state.deps is not None:
            self._dep_bind(node.target, self._dep_of(node.value), state, None)
        return v

    def _eval_comp(self, node, state: _State) -> Optional[Value]:
        t = type(node)
        elt = self._eval_comprehension(node, state)
        if isinstance(elt, RefVal) and elt.origin == "created" and \
                elt.node is (node.value if t is cst.DictComp else node.elt):
            # A fresh ref per element: `[jax.new_ref(x) for x in xs]`; a fresh NNX object
            # holding refs: `[nnx.Linear(...) for _ in range(n)]` built with refs on.
            return RefPoolVal(elt, _COMPREHENSION_KINDS[t])
        if isinstance(elt, (FuncVal, OneOf)):
            # Functions: `[jax.jit(k) for k in (k1, k2)]`; each item is one of them.
            return FuncPoolVal(elt, _COMPREHENSION_KINDS[t])
        return None

    def _eval_await(self, node, state: _State) -> Optional[Value]:
        return self._eval(node.expression, state)

    def _eval_yield(self, node, state: _State) -> Optional[Value]:
        if node.value is not None and not isinstance(node.value, cst.From):
            self._eval(node.value, state)
        elif isinstance(node.value, cst.From):
            self._eval(node.value.item, state)
        return None

    def _eval_fstring(self, node, state: _State) -> Optional[Value]:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                v = self._eval(part.expression, state)
                if isinstance(v, RefVal) and not v.tree and part.format_spec:
                    # `f"{loss_ref:.4f}"`: a Ref has no format spec (TypeError).
                    self._ref_use("format", part.expression, v, node, "")
        return None

    def _eval_set(self, node, state: _State) -> Optional[Value]:
        for e in node.elements:
            self._eval(e.value, state)
        return None

    def _eval_starred(self, node, state: _State) -> Optional[Value]:
        self._eval(node.value, state)
        return None

    def _eval_concat(self, node, state: _State) -> Optional[Value]:
        self._eval(node.left, state)
        self._eval(node.right, state)
        return None


    def _eval_slices(self, node: cst.Subscript, state: _State) -> None:
        for expr in slice_exprs(node):
            self._eval(expr, state)

    def _eval_comprehension(self, node, state: _State) -> Optional[Value]:
        """Evaluate a comprehension in a scope of its own; the value of its element."""
        cs = state.copy()
        f = node.for_in
        while f is not None:
            it = self._eval(f.iter, cs)
            self._bind_comp_target(f.target, _element_of(it), cs)
            if cs.deps is not None:
                self._dep_bind(f.target, self._dep_of(f.iter), cs, None)
            for cond in f.ifs:
                self._eval(cond.test, cs)
            f = f.inner_for_in
        if isinstance(node, cst.DictComp):
            self._eval(node.key, cs)
            return self._eval(node.value, cs)
        return self._eval(node.elt, cs)

    def _bind_comp_target(self, target, value, state: _State) -> None:
        if isinstance(target, cst.Name):
            state.env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            items = value.items if isinstance(value, SeqVal) and \
                len(value.items) == len(target.elements) else None
            for i, e in enumerate(target.elements):
                self._bind_comp_target(e.value, items[i] if items else None, state)

    def _class_attrs(self, cls: ClassInfo, attr: str) -> dict:
        """The attributes of ``cls``: the last round's, or this round's for one it lacks."""
        return cls.attrs if attr in cls.attrs else self._new_attrs.get(id(cls), {})

    def _attribute_value(self, base, attr: str) -> Optional[Value]:
        if isinstance(base, ObjVal):
            return self._obj_attribute(base, attr)
        if isinstance(base, DictVal):
            return self._dict_view(base, attr)
        if isinstance(base, SpecialVal) and base.kind == "super":
            return self._super_attribute(base, attr)
        if isinstance(base, InstanceVal):
            cls = base.cls
            m = cls.method(attr)
            if m is not None:
                if "property" in m.info.decorator_kinds:
                    value = m.info.return_value
                    return value if isinstance(value, (RefVal, ObjVal)) else None
                if "staticmethod" in m.info.decorator_kinds:
                    return m  # `self.step` of a staticmethod: no receiver is bound
                return FuncVal(m.info, m.transforms, m.bound_args, m.bound_kwargs, base,
                               m.bound_kw_values)
            value = cls.attrs.get(attr)
            if value is None:
                value = self._new_attrs.get(id(cls), {}).get(attr)
            if isinstance(value, RefVal) and value.tree and value.kwargs.get("ref"):
                # A Variable created with `ref=True` holds a ref in every instance: one per
                # instance, so never compared for aliasing.
                return replace(value, unique=False)
            if isinstance(value, RefVal) and value.tree:
                # An NNX object's attribute holds refs only in instances created with refs
                # on, which are RefVals themselves; this instance is not known to be one
                # (`self` in a method): the same object, not known to hold refs.
                return NnxVal("variable" if value.tree == "variable" else "module",
                              value.node if value.origin == "created" else None,
                              cls=value.cls)
            return value
        if isinstance(base, NamespaceVal):
            return base.attrs.get(attr)
        if isinstance(base, ClassVal):
            m = base.cls.method(attr)
            if m is not None and "classmethod" in m.info.decorator_kinds:
                # `Cls.make` of a classmethod: the class is bound as its first argument.
                return FuncVal(m.info, m.transforms, m.bound_args, m.bound_kwargs, base,
                               m.bound_kw_values)
            return m

        if isinstance(base, SpecialVal) and base.kind == "vjp_fn" and attr == "with_refs":
            return SpecialVal("vjp_with_refs", base.target, base.node, base.api_name)
        if isinstance(base, FuncVal):
            if attr == "defvjp":
                return SpecialVal("defvjp", base)
            if attr == "defjvp":
                return SpecialVal("defjvp", base)
            if attr == "defjvps":
                return SpecialVal("defjvps", base)
            if attr in ("defvjp_fwd", "fwd"):
                return None
            return None
        return None


# The evaluator of each kind of expression (ExpressionsMixin._eval_inner).
_EVALUATORS: dict = {
    cst.Name: ExpressionsMixin._eval_name,
    cst.Attribute: ExpressionsMixin._eval_attribute,
    cst.Call: lambda self, node, state: self._eval_call(node, state),
    cst.Subscript: ExpressionsMixin._eval_subscript,
    cst.Tuple: ExpressionsMixin._eval_sequence,
    cst.List: ExpressionsMixin._eval_sequence,
    cst.Dict: ExpressionsMixin._eval_dict,
    cst.BinaryOperation: ExpressionsMixin._eval_binary,
    cst.UnaryOperation: ExpressionsMixin._eval_unary,
    cst.Comparison: ExpressionsMixin._eval_comparison,
    cst.BooleanOperation: ExpressionsMixin._eval_boolean,
    cst.IfExp: ExpressionsMixin._eval_ifexp,
    cst.Lambda: ExpressionsMixin._eval_lambda,
    cst.NamedExpr: ExpressionsMixin._eval_named,
    cst.ListComp: ExpressionsMixin._eval_comp,
    cst.SetComp: ExpressionsMixin._eval_comp,
    cst.GeneratorExp: ExpressionsMixin._eval_comp,
    cst.DictComp: ExpressionsMixin._eval_comp,
    cst.Await: ExpressionsMixin._eval_await,
    cst.Yield: ExpressionsMixin._eval_yield,
    cst.FormattedString: ExpressionsMixin._eval_fstring,
    cst.Set: ExpressionsMixin._eval_set,
    cst.StarredElement: ExpressionsMixin._eval_starred,
    cst.ConcatenatedString: ExpressionsMixin._eval_concat,
}
