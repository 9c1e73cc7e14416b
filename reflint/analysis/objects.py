"""The object model (``ObjectsMixin``): objects per allocation site, with a slot per attribute.

An instance of a class of the module (a plain class, a ``@dataclass``, a ``NamedTuple``, a
``register_dataclass`` / ``flax.struct`` / ``register_pytree_node_class`` class) is an
``ObjVal`` made at its constructor call. Its fields come from the constructor's arguments (a
record class: its annotated fields, by position or keyword) or from what the class's methods
assign to ``self`` (the class summary, ``ClassInfo.attrs``), seen from this object: the
``__init__`` parameters are replaced by the arguments of this call, and a ref the methods create
gets this object's site in its key (two objects, two refs). Methods called on an object get it
as ``self`` (a seed of their first parameter, so the refs they write are followed back to the
object), properties give what their method returns for this object, ``super()`` reaches the
bases' methods. Pytree utilities (``jax.tree.map`` and friends, ``dict.values()``) give their
function the leaves of the trees they are given. The registry (``api.Family.RECORD`` /
``TREE``) says which APIs do what.
"""

from __future__ import annotations

import ast
import re
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from .._record import replace
from ..values import (
    QN,
    ClassVal,
    DictVal,
    FuncVal,
    InstanceVal,
    NamespaceVal,
    ObjVal,
    OneOf,
    RefVal,
    SeqVal,
    SpecialVal,
    Value,
    join,
    tree_attribute,
)
from .facts import (
    ClassInfo,
    FunctionInfo,
)
from .syntax import last_name

_PATH_STEP = re.compile(r"\.(\w+)|\[([^\[\]]*)\]")
# How deep values are followed when an object's slots are built from its class's summary.
_MAX_DEPTH = 6
# Record kinds whose instances are pytrees (their fields are the leaves' containers).
_PYTREE_RECORDS = ("pytree_dataclass", "namedtuple", "pytree")


def _path_steps(path: str) -> Optional[list]:
    """``.mu[0]['a']`` -> [('attr', 'mu'), ('item', 0), ('item', 'a')]; None if unparsable."""
    steps = []
    pos = 0
    for m in _PATH_STEP.finditer(path):
        if m.start() != pos:
            return None
        pos = m.end()
        if m.group(1) is not None:
            steps.append(("attr", m.group(1)))
        else:
            try:
                steps.append(("item", ast.literal_eval(m.group(2))))
            except (ValueError, SyntaxError):
                return None
    return steps if pos == len(path) else None


def follow_path(value: Optional[Value], path: str) -> Optional[Value]:
    """The part of ``value`` at ``path`` (as ``iter_refs`` and parameters spell paths)."""
    steps = _path_steps(path)
    if steps is None:
        return None
    for kind, k in steps:
        if kind == "attr" and isinstance(value, ObjVal):
            value = value.fields.get(k)
        elif kind == "item" and isinstance(value, ObjVal) and value.seq and isinstance(k, int):
            items = list(value.fields.values())
            value = items[k] if -len(items) <= k < len(items) else None
        elif kind == "item" and isinstance(value, SeqVal) and isinstance(k, int):
            value = value.items[k] if -len(value.items) <= k < len(value.items) else None
        elif kind == "item" and isinstance(value, DictVal):
            value = value.items.get(k)
        else:
            return None
        if value is None:
            return None
    return value


class ObjectsMixin:

    # -- classes -----------------------------------------------------------------------------

    def _class_record(self, cls: ClassInfo, node: cst.ClassDef) -> None:
        """How the instances of ``cls`` are built: from its decorators and bases (registry
        entries of family RECORD) and its annotated fields."""
        kinds = []
        for d in node.decorators:
            kinds.append(self._record_kind(d.decorator))
        fields: list = []
        for b in node.bases:
            if b.keyword is not None:
                continue
            bv = self._values.get(id(b.value))
            if isinstance(bv, ClassVal):
                if bv.cls.record:
                    kinds.append(bv.cls.record)
                fields.extend(bv.cls.fields)
            else:
                kinds.append(self._record_kind(b.value))
        kind = _strongest(kinds)
        if kind in ("dataclass", "pytree_dataclass", "namedtuple"):
            own = []
            for stmt in getattr(node.body, "body", ()):
                if type(stmt) is not cst.SimpleStatementLine:
                    continue
                for small in stmt.body:
                    if type(small) is cst.AnnAssign and type(small.target) is cst.Name:
                        ann = self.text_of(small.annotation.annotation)
                        if "ClassVar" in ann or "InitVar" in ann:
                            continue
                        own.append((small.target.value, small.value))
            names = {n for n, _ in own}
            fields = [f for f in fields if f[0] not in names] + own
        cls.record = kind or cls.record
        cls.fields = fields

    def _record_kind(self, expr) -> str:
        """The record kind a decorator or base expression makes ("" for none)."""
        if type(expr) is cst.Call:
            func = self._values.get(id(expr.func))
            if isinstance(func, QN) and api.canonical(func.qualname) == api.PARTIAL and \
                    expr.args:
                return self._record_kind(expr.args[0].value)
            return self._record_kind(expr.func)
        v = self._values.get(id(expr))
        if isinstance(v, SpecialVal) and v.kind == "record":
            return v.target
        a = api.lookup(v.qualname) if isinstance(v, QN) else None
        if a is None or a.family is not api.Family.RECORD:
            return ""
        if a.record == "dataclass" and v.qualname != "dataclasses.dataclass":
            return "pytree_dataclass"  # flax.struct, register_dataclass, chex: pytrees
        return a.record

    def _call_bag_or_super(self, node: cst.Call, qn: str, args: list, state):
        """``types.SimpleNamespace(count=0, buf=x_ref)`` (an attribute bag), ``super()``."""
        if qn == "builtins.super":
            return self._super(state) if not args else None
        if any(arg.star for arg, _ in args):
            return None
        return NamespaceVal(node, {arg.keyword.value: v for arg, v in args if arg.keyword})

    def _call_object_api(self, node: cst.Call, a: "api.Api", qn: str, args: list,
                         state) -> Optional[Value]:
        """A call of a RECORD or TREE API of the registry."""
        if a.family is api.Family.TREE:
            return self._call_tree(node, a, args, state)
        if a.record == "replace":  # dataclasses.replace(obj, **changes)
            first = next((v for arg, v in args if not arg.keyword and not arg.star), None)
            return self._obj_replace(node, first, args[1:]) if isinstance(first, ObjVal) \
                else None
        return self._register_record(a, qn, args)

    def _register_record(self, a: "api.Api", qn: str, args: list) -> Optional[Value]:
        """``jax.tree_util.register_dataclass(Cls, ...)`` called on a class of the module (it
        becomes a pytree), or ``dataclasses.dataclass(frozen=True)`` (a decorator)."""
        pos = [v for arg, v in args if not arg.keyword and not arg.star]
        if pos and isinstance(pos[0], ClassVal):
            cls = pos[0].cls
            if cls.record in ("", "dataclass"):
                cls.record = "pytree_dataclass" if cls.record == "dataclass" else "pytree"
            return pos[0]
        kind = a.record
        if kind == "dataclass" and qn != "dataclasses.dataclass":
            kind = "pytree_dataclass"
        return SpecialVal("record", kind)

    # -- objects -----------------------------------------------------------------------------

    def _construct(self, node: cst.Call, cls: ClassInfo, args: list, state) -> ObjVal:
        """``Cls(...)``: a new object at this site."""
        init = cls.method("__init__")
        starred = any(arg.star for arg, _ in args)
        if cls.record in ("dataclass", "pytree_dataclass", "namedtuple") and (
                init is None or init.info.cls is not cls) and cls.fields:
            fields: dict = {}
            pos = [v for arg, v in args if not arg.keyword and not arg.star]
            kw = {arg.keyword.value: v for arg, v in args if arg.keyword}
            for i, (name, default) in enumerate(cls.fields):
                if starred:
                    fields[name] = None
                elif i < len(pos):
                    fields[name] = pos[i]
                elif name in kw:
                    fields[name] = kw[name]
                elif default is not None:
                    fields[name] = self._values.get(id(default))
                else:
                    fields[name] = None
            obj = ObjVal(cls, node, fields, seq=cls.record == "namedtuple")
            post = cls.method("__post_init__")
            if post is not None:
                self._bind_call(node, FuncVal(post.info, post.transforms, (), (), obj), [], {},
                                "plain")
            self._add_summary_fields(obj, None, {})
            return obj
        obj = ObjVal(cls, node, {})
        bindings: dict = {}
        if init is not None:
            fv = FuncVal(init.info, init.transforms, init.bound_args, init.bound_kwargs, obj,
                         init.bound_kw_values)
            if starred:
                self._call_func(node, fv, args, state)
            else:
                positional = [(a, v, a.value) for a, v in args if not a.keyword]
                keywords = {a.keyword.value: (a, v, a.value) for a, v in args if a.keyword}
                bindings = {k: b.value for k, b in self._bind_call(
                    node, fv, positional, keywords, "traced" if fv.transforms else "plain"
                ).items() if b.param is not None}
            obj.init, obj.bindings = init.info, bindings
        self._add_summary_fields(obj, init.info if init is not None else None, bindings)
        return obj

    def _class_chain(self, cls: ClassInfo) -> list:
        out, work = [], [cls]
        while work and len(out) < 8:
            c = work.pop(0)
            if c not in out:
                out.append(c)
                work.extend(c.bases)
        return out

    def _summary_attrs(self, cls: ClassInfo) -> dict:
        """What the methods of ``cls`` and its bases assign to ``self``: the last round's
        summary, or this round's for an attribute it lacks."""
        out: dict = {}
        for c in reversed(self._class_chain(cls)):
            new = self._new_attrs.get(id(c), {})
            for k in c.attrs.keys() | new.keys():
                out[k] = c.attrs[k] if k in c.attrs else new[k]
        return out

    def _add_summary_fields(self, obj: ObjVal, init: Optional[FunctionInfo],
                            bindings: dict) -> None:
        for attr, value in self._summary_attrs(obj.cls).items():
            if attr in obj.fields:
                continue
            obj.fields[attr] = self._instantiate(value, obj, init, bindings)
            obj.assumed.add(attr)

    def _instantiate(self, value: Optional[Value], obj: ObjVal, init: Optional[FunctionInfo],
                     bindings: dict, depth: int = 0) -> Optional[Value]:
        """A value of the class summary (in terms of the methods' parameters) seen from the
        object ``obj``: ``__init__``'s parameters are the call's arguments (through the calls
        ``__init__`` makes: ``super().__init__(r)``, ``self._setup(r)``), refs a method created
        are this object's own."""
        if value is None or depth > _MAX_DEPTH:
            return value
        if isinstance(value, RefVal):
            key = value.key
            if not isinstance(key, tuple) or not key:
                return value
            if key[0] == "param" and len(key) >= 3:
                found = self._param_source(key, init, bindings, depth)
                if found is not None:
                    return found
                # A parameter of another method: one ref per call, never compared.
                return replace(value, unique=False) if value.unique else value
            if key[0] == "new":
                return replace(value, key=key + (("obj", id(obj.node)),))
            return value
        if isinstance(value, SeqVal):
            return SeqVal(tuple(self._instantiate(v, obj, init, bindings, depth + 1)
                                for v in value.items), value.kind)
        if isinstance(value, DictVal):
            return DictVal({k: self._instantiate(v, obj, init, bindings, depth + 1)
                            for k, v in value.items.items()})
        if isinstance(value, ObjVal) and value is not obj:
            fields = {k: self._instantiate(v, obj, init, bindings, depth + 1)
                      for k, v in value.fields.items()}
            return ObjVal(value.cls, value.node, fields, value.seq,
                          (value.ident(), id(obj.node)), value.name)
        return value

    def _param_source(self, key: tuple, init: Optional[FunctionInfo], bindings: dict,
                      depth: int) -> Optional[Value]:
        """The value a parameter ref of the class summary stands for in one object: an
        argument of its ``__init__`` call, or of the one call ``__init__`` makes to the
        method owning the parameter."""
        if init is None:
            return None
        path = key[3] if len(key) > 3 else ""
        if key[1] == id(init.node):
            b = bindings.get(key[2])
            return follow_path(b, path) if b is not None else None
        owner = self.functions.get(key[1])
        if owner is None or depth > _MAX_DEPTH:
            return None
        calls = [c for c in self.plain_calls if c.callee is owner and c.caller is init]
        if not calls:
            self._stale = True  # the next round reads this round's calls here
            calls = [c for c in self._last_plain_calls if c.callee is owner and c.caller is init]
        if len(calls) != 1:
            return None
        b = calls[0].bindings.get(key[2])
        if b is None or b.value is None:
            return None
        inner = follow_path(b.value, path)
        if inner is None:
            return None
        return self._instantiate_in(inner, init, bindings, depth + 1)

    def _instantiate_in(self, value, init, bindings, depth):
        if isinstance(value, RefVal) and isinstance(value.key, tuple) and \
                value.key[:2] == ("param", id(init.node)):
            return self._param_source(value.key, init, bindings, depth)
        if isinstance(value, RefVal) and isinstance(value.key, tuple) and \
                value.key[0] == "param":
            return None
        return value

    def _obj_attribute(self, obj: ObjVal, attr: str) -> Optional[Value]:
        """``obj.attr``: its slot, a method bound to it, what a property returns for it."""
        m = obj.cls.method(attr)
        if attr in obj.fields and (m is None or attr in self._summary_attrs(obj.cls)):
            return obj.fields[attr]
        if m is not None:
            kinds = m.info.decorator_kinds
            if "staticmethod" in kinds:
                return m
            if "property" in kinds:
                # `self._flags_ref` behind `@property def flags(self)`: its return value, seen
                # from this object.
                return self._instantiate(m.info.return_value, obj, obj.init,
                                         obj.bindings or {})
            return FuncVal(m.info, m.transforms, m.bound_args, m.bound_kwargs, obj,
                           m.bound_kw_values)
        if attr in ("_replace", "replace") and obj.cls.record in (
                "namedtuple" if attr == "_replace" else "pytree_dataclass",):
            return SpecialVal("obj_replace", obj)
        if attr in obj.fields:
            return obj.fields[attr]
        summary = self._summary_attrs(obj.cls)
        if attr in summary:  # set by a method after the object was made
            return self._instantiate(summary[attr], obj, obj.init, obj.bindings or {})
        return None

    def _obj_set_attribute(self, obj: ObjVal, attr: str, value: Optional[Value]) -> None:
        d = obj.fields
        if attr in obj.assumed:  # the summary's guess gives way to what is assigned
            obj.assumed.discard(attr)
            d[attr] = value
            return
        d[attr] = join(d[attr], value) if attr in d else value

    def _obj_replace(self, node: cst.Call, obj: ObjVal, args: list) -> Optional[Value]:
        """``nt._replace(mu=x)``, ``state.replace(mu=x)``, ``dataclasses.replace(s, mu=x)``:
        a new object with those fields changed."""
        if any(arg.star or not arg.keyword for arg, _ in args):
            return None
        fields = dict(obj.fields)
        for arg, v in args:
            if arg.keyword.value in fields:
                fields[arg.keyword.value] = v
        return ObjVal(obj.cls, node, fields, obj.seq, None, "", obj.init, obj.bindings)

    def _call_object(self, node: cst.Call, fv: Value, args: list, state) -> Optional[Value]:
        """Calling an object (``layer(x)``): its ``__call__`` method, bound to it."""
        cls = fv.cls
        m = cls.method("__call__") if cls is not None else None
        if m is None:
            return None
        return self._call_func(node, FuncVal(m.info, m.transforms, m.bound_args,
                                             m.bound_kwargs, fv, m.bound_kw_values),
                               args, state)

    def _method_result(self, fv: FuncVal, value: Optional[Value]) -> Optional[Value]:
        """What a method returns (``value``), seen from the call: refs of its receiver are
        the receiver's, refs it creates are this object's."""
        obj = fv.self_value
        info = fv.info
        if value is None or not isinstance(obj, ObjVal) or not info.params:
            return value
        me = info.params[0].name

        def sub(v, depth=0):
            if depth > _MAX_DEPTH:
                return None
            if isinstance(v, RefVal) and isinstance(v.key, tuple) and \
                    v.key[:3] == ("param", id(info.node), me):
                return follow_path(obj, v.key[3] if len(v.key) > 3 else "")
            if isinstance(v, SeqVal):
                return SeqVal(tuple(sub(x, depth + 1) for x in v.items), v.kind)
            if isinstance(v, DictVal):
                return DictVal({k: sub(x, depth + 1) for k, x in v.items.items()})
            if isinstance(v, (RefVal, ObjVal)):
                return self._instantiate(v, obj, obj.init, obj.bindings or {}, depth + 1)
            return v

        return sub(value)

    def _super(self, state) -> Optional[Value]:
        """``super()`` in a method: the bases' methods, bound to ``self``."""
        info = self._func
        while info is not None and not info.is_method:
            info = info.parent
        if info is None or not info.params or info.cls is None:
            return None
        me = state.env.get(info.params[0].name) if info is self._func else \
            self._lookup(info.params[0].name, None, state)
        return SpecialVal("super", (info.cls, me))

    def _super_attribute(self, sup: SpecialVal, attr: str) -> Optional[Value]:
        cls, me = sup.target
        for b in cls.bases:
            m = b.method(attr)
            if m is not None:
                if "staticmethod" in m.info.decorator_kinds:
                    return m
                return FuncVal(m.info, m.transforms, m.bound_args, m.bound_kwargs,
                               me if me is not None else InstanceVal(b), m.bound_kw_values)
        return None

    # -- pytrees -----------------------------------------------------------------------------

    def _leaves(self, value: Optional[Value], depth: int = 0, some: bool = False
                ) -> Optional[list]:
        """The leaves of a pytree, when every one is known to be a ref ([] for an empty one);
        None otherwise. An NNX object holding refs gives its refs (one leaf standing for
        them all). ``some``: the leaves known to be refs, the others left out (a function
        mapped over the tree is called with each of them: ``jax.tree.map``)."""
        if depth > _MAX_DEPTH or value is None:
            return [] if some else None
        if isinstance(value, RefVal):
            if value.tree and value.tree != "variable" and value.cls is not None:
                return self._module_leaves(value, depth, some)
            if value.tree:
                # A Variable holding a ref, or a Flax layer (or its state): every leaf is a
                # Variable's ref.
                return [RefVal(key=("leaves", value.key), origin=value.origin,
                               node=value.node, scope=value.scope,
                               name=f"the leaves of {value.name}" if value.name else "",
                               unique=False, root=value)]
            return [value]
        items = None
        if isinstance(value, (SeqVal,)):
            items = list(value.items)
        elif isinstance(value, DictVal):
            items = list(value.items.values())
        elif isinstance(value, ObjVal) and value.cls.record in _PYTREE_RECORDS:
            items = list(value.fields.values())
        if items is None:
            return [] if some else None
        out = []
        for v in items:
            sub = self._leaves(v, depth + 1, some)
            if sub is None:
                return None
            out.extend(sub)
        return out

    def _module_leaves(self, module: RefVal, depth: int, some: bool = False
                       ) -> Optional[list]:
        """The leaves of an NNX module of a class of this file holding refs: its Variables'
        refs, when every other attribute is known not to be a leaf (a literal constant is
        static; an array, or anything unknown, may be one: then None; with ``some``, left
        out)."""
        attrs = self._summary_attrs(module.cls)
        out: list = []
        for attr, v in attrs.items():
            sub = tree_attribute(module, attr, attrs)
            if sub is not None:
                got = self._leaves(sub, depth + 1, some)
                if got is None:
                    return None
                out.extend(got)
            elif some or isinstance(v, (FuncVal, OneOf, QN, ClassVal, SpecialVal)) or \
                    isinstance(v, RefVal) and not v.tree:
                continue  # a function, a class, a module: static (a plain ref: not followed)
            elif not self._literal_attribute(module.cls, attr):
                return None
        return out

    def _literal_attribute(self, cls: ClassInfo, attr: str) -> bool:
        """Every assignment of ``self.attr`` in the class (and its bases) is a literal
        constant (static metadata to a pytree)."""
        found = False
        for c in self._class_chain(cls):
            for m in c.methods.values():
                for node in _walk(m.info.node):
                    if type(node) is cst.Assign:
                        for t in node.targets:
                            tg = t.target
                            if type(tg) is cst.Attribute and tg.attr.value == attr:
                                if not _static_expr(node.value):
                                    return False
                                found = True
        return found

    def _call_tree(self, node: cst.Call, a: "api.Api", args: list, state) -> Optional[Value]:
        """``jax.tree.map(f, tree, *rest)``, ``leaves``, ``flatten``, ``unflatten``."""
        pos = [(arg, v) for arg, v in args if not arg.keyword and not arg.star]
        op = a.tree_op
        if op == "map":
            if len(pos) < 2 or any(arg.star or arg.keyword and arg.keyword.value == "is_leaf"
                                   for arg, _ in args):
                return None  # `is_leaf=` may stop above the refs (at an nnx.Variable)
            fn = pos[0][1]
            leaves = []
            for _, tree in pos[1:]:
                # The function is called with every leaf: those known to be refs are enough.
                got = self._leaves(tree, some=len(pos) == 2)
                if not got:
                    leaves.append(None)
                    continue
                leaf = got[0]
                for r in got[1:]:
                    leaf = join(leaf, r)
                leaves.append(leaf)
            fns = fn.alts if isinstance(fn, OneOf) else (fn,)
            for f in fns:
                if isinstance(f, FuncVal):
                    self._bind_call(node, f, [(None, v, None) for v in leaves], {}, "plain")
            return None
        if op in ("leaves", "flatten"):
            if not pos:
                return None
            got = self._leaves(pos[0][1])
            leaves = SeqVal(tuple(got), "list") if got is not None else None
            return leaves if op == "leaves" else SeqVal((leaves, None))
        if op == "unflatten":
            leaves = pos[1][1] if len(pos) > 1 else None
            return SeqVal(leaves.items, "tuple") if isinstance(leaves, SeqVal) else None
        return None

    # -- Flax layers that write when called (api.Api.call_writes) ------------------------------

    def _layer_method(self, base: RefVal, attr: str) -> Optional[Value]:
        """``opt.update`` of a Flax layer whose method of that name writes it."""
        a = api.API.get(base.kwargs.get("api", ""))
        if a is not None and a.call_writes == attr and attr != "__call__":
            return SpecialVal("layer_method", base, None, attr)
        return None

    def _layer_writes(self, node: cst.Call, layer: RefVal, method: str, args: list) -> None:
        """Calling a Flax layer holding refs (or its method ``method``) that writes its
        Variables with values computed from the arguments: a write of the layer (REF005 under
        a map of a closure, REF008 under grad), unless it is told not to (a literal True
        ``write_unless`` keyword, at construction or here)."""
        a = api.API.get(layer.kwargs.get("api", ""))
        if a is None or a.call_writes != method:
            return
        given = {arg.keyword.value: arg.value for arg, _ in args if arg.keyword}
        for k in a.write_unless:
            expr = given.get(k, layer.kwargs.get(k))
            if expr is None or not (type(expr) is cst.Name and expr.value == "False"):
                return  # the default (or an unknown value) may not write
            if k not in given and _MODE_SWITCH.search(self.source):
                # Built in training mode, but the file may switch it (`model.eval()`,
                # `nnx.view(m, use_running_average=True)`, `set_attributes(...)`) before.
                return
        pos = [arg for arg, _ in args if not arg.keyword and not arg.star]
        if not pos:
            return
        receiver = node.func.value if method != "__call__" and \
            type(node.func) is cst.Attribute else node.func
        value = None if a.writes_stop_gradient else pos[-1].value  # no REF008 then
        self._record_access("setitem", node, receiver, layer, value, None)

    def _dict_view(self, base: DictVal, attr: str) -> Optional[Value]:
        if attr in ("values", "items", "keys"):
            return SpecialVal("dict_view", (base, attr))
        return None

    def _call_dict_view(self, fv: SpecialVal) -> Optional[Value]:
        base, attr = fv.target
        if attr == "values":
            return SeqVal(tuple(base.items.values()), "list")
        if attr == "items":
            return SeqVal(tuple(SeqVal((None, v)) for v in base.items.values()), "list")
        return None


# Calls that switch a Flax layer's mode after construction (BatchNorm's use_running_average).
_MODE_SWITCH = re.compile(r"\.(?:eval|train|set_attributes|set_mode)\(|\bview\(")

_LITERAL_TYPES = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)


def _static_expr(expr) -> bool:
    """A literal constant (or a tuple of them), a lambda, `functools.partial(...)`: never an
    array leaf of a pytree."""
    t = type(expr)
    if t in _LITERAL_TYPES or t is cst.Lambda:
        return True
    if t is cst.Name:
        return expr.value in ("True", "False", "None")
    if t in (cst.Tuple, cst.List):
        return all(_static_expr(e.value) for e in expr.elements)
    if t is cst.Call:
        return last_name(expr.func) == "partial"
    return False


def _walk(node):
    from .syntax import walk_nodes

    return walk_nodes([node])


def _strongest(kinds: list) -> str:
    """One record kind from several decorators and bases (a registered pytree wins)."""
    for k in ("namedtuple", "pytree_dataclass", "pytree", "dataclass"):
        if k in kinds:
            return k
    return ""
