"""Abstract values of the shared analysis.

``None`` stands for "unknown": a value reflint knows nothing about. Rules stay silent on unknowns.
"""

from __future__ import annotations

from ._record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Any, Iterator, Optional

    from . import nodes as cst

    from .analysis import ClassInfo, FunctionInfo


class Value:
    __slots__ = ()


@record(eq=False)
class QN(Value):
    """The object found at a qualified name, e.g. ``jax.numpy.sin`` (from imports)."""

    qualname: str


@record(eq=False)
class RefVal(Value):
    """A JAX Ref.

    ``key`` identifies the ref: two RefVals with the same key are the same ref (same creation
    site evaluated in the same scope, or the same parameter). ``origin`` says where it came from:
    'created' (a constructor call), 'param' (a parameter that receives refs or is annotated Ref),
    'pallas' (a Pallas kernel parameter), 'slice' (a scan slice of a ref), 'merged'.
    """

    key: Any
    origin: str
    node: Optional["cst.CSTNode"]  # creation call or parameter node
    scope: Optional["FunctionInfo"]  # function in which it was created / whose parameter it is
    name: str = ""
    kwargs: dict = field(default_factory=dict)  # constructor keyword args (e.g. kind=)
    unique: bool = True  # one ref per key (False for refs created in loops or merged)
    # Flax NNX: an object whose arrays are refs ("" for a plain ref): "variable" (a Variable),
    # "module" (a Module or Pytree), "state" (an nnx.split state, an nnx.to_refs copy).
    tree: str = ""
    cls: Optional["ClassInfo"] = None  # a module of a class of this file: its attributes
    root: Optional["RefVal"] = None  # read as an attribute of this tree (`model.bias`)
    view: str = ""  # a view of the ref (`x_ref.at[1:6]`, `.reshape(...)`): how it was made
    # A Pallas kernel's parameter, or that parameter handed on to a helper (or an item of
    # one): a ref or a pytree of refs (a tuple operand, a scratch tuple, `refs[group][i] = v`),
    # the analysis cannot tell.
    maybe_tree: bool = False


def as_view(ref: "RefVal", how: str) -> "RefVal":
    """``ref`` seen through a view (``.at[...]``, ``.reshape(...)``): the same ref (its key),
    marked as a view."""
    if ref.view or ref.tree:
        return ref
    return RefVal(key=ref.key, origin=ref.origin, node=ref.node, scope=ref.scope, name=ref.name,
                  kwargs=ref.kwargs, unique=ref.unique, tree=ref.tree, cls=ref.cls,
                  root=ref.root, view=how)


@record(eq=False)
class SeqVal(Value):
    """A tuple or list (``kind``) whose items' values are known, in order."""

    items: tuple
    kind: str = "tuple"


@record(eq=False)
class DictVal(Value):
    """A dict literal: key (a constant) -> the item's value."""

    items: dict


@record(eq=False)
class Transform:
    """One application of a JAX transform to a function."""

    kind: str  # the transform's canonical name in the registry (reflint.api)
    node: "cst.CSTNode"  # the decorator expression or the call
    kwargs: dict  # keyword name -> cst expression
    args: tuple = ()  # extra positional cst expressions (e.g. vmap's in_axes)
    # Applied as one of several callables (a Choice): which, for messages ("when `transform`
    # is jax.vmap"); "" when it is the only one.
    via: str = ""


@record(eq=False)
class FuncVal(Value):
    """A function: its analysis (``info``), the transforms applied to it and what
    ``functools.partial`` or a bound method's receiver give it."""

    info: "FunctionInfo"
    transforms: tuple = ()
    bound_args: tuple = ()  # functools.partial positional values
    bound_kwargs: tuple = ()  # functools.partial keyword names
    self_value: Optional[Value] = None  # bound method receiver
    bound_kw_values: tuple = ()  # functools.partial (keyword, value) pairs


@record(eq=False)
class OneOf(Value):
    """One of several local functions: a name bound to different functions on different
    paths (``kernel = a if c else b``, ``if jit: f = jax.jit(f)``, a notebook defining the same
    name in several cells). ``alts`` are FuncVals, distinct by function or by the transforms
    applied to it. Called, given to a transform or to a Pallas entry point, each of them is; a
    finding holds when it holds for one of the functions that reach the call."""

    alts: tuple


@record(eq=False)
class Choice(Value):
    """One of several callables picked at run time from a container by a key reflint does not
    know: ``{"jit": jax.jit, "vmap": jax.vmap}[transform]``, ``ops[name]``. Called or used as a
    decorator, each of them is (a finding holds when it holds for one of them); anywhere else
    it is unknown. ``alts`` are (label, value) pairs: the key and the callable (a FuncVal, a
    OneOf, a QN of an API, a TransformVal)."""

    alts: tuple


@record(eq=False)
class CaseVal(Value):
    """A test function's parameter bound by a parameterization decorator
    (``@parameterized.named_parameters(("array", 0), ("empty_tuple", ()))``,
    ``@pytest.mark.parametrize("x", [1, 2])``; the forms: ``api.TEST_CASE_DECORATORS``): one
    value per test case. ``alts`` are (label, expression) pairs: the case's name ("" when it has
    none) and the argument expression, evaluated where the decorator stands (its value:
    ``analysis.value_of(expr)``). Each case runs the function with its value: a finding holds
    when it holds for one of them; anywhere else the value is unknown."""

    name: str  # the parameter
    alts: tuple


@record(eq=False)
class RefPoolVal(Value):
    """A container built by a comprehension whose every element is a ref created by the
    comprehension: ``[jax.new_ref(x) for x in xs]``, ``{k: jax.new_ref(v) for k, v in d}``.
    Its items are distinct refs: ``pool[0]`` and ``pool[1]`` differ, ``pool[0]`` twice is one
    ref; an item at an unknown index may be any of them."""

    base: RefVal  # the element's ref, made once per iteration
    kind: str = "list"  # "list", "dict", "set", "generator"

    def item(self, key=None) -> RefVal:
        b = self.base
        unique = key is not None
        label = f"[{key!r}]" if unique else "[?]"
        return RefVal(key=(b.key, "pool", label), origin=b.origin, node=b.node, scope=b.scope,
                      name=f"{b.name}{label}" if b.name else "", kwargs=b.kwargs,
                      unique=unique, tree=b.tree, cls=b.cls)


@record(eq=False)
class FuncPoolVal(Value):
    """A container built by a comprehension whose elements are functions: ``[jax.jit(k) for k
    in kernels]``, ``{name: jax.vmap(f) for ...}``. Every item is ``elt`` (a FuncVal, or a
    OneOf of the functions the loop may give)."""

    elt: Value
    kind: str = "list"


@record(eq=False)
class RefSeqVal(Value):
    """A tuple of refs of unknown length: a Pallas kernel's ``*refs`` parameter, or a slice
    of one. Indexing, unpacking and iterating give refs (``item``)."""

    base: RefVal  # the parameter's ref (key, scope, name) from which items are derived
    offset: int = 0  # items of ``base`` before this one's first (a slice ``refs[2:]``)
    exact: bool = True  # False after a slice whose start is not a constant

    def item(self, index=None) -> RefVal:
        """The ref at ``index`` (an int, or None when unknown)."""
        b = self.base
        if index is None or not self.exact or (index < 0):
            label, unique = "[?]", False
        else:
            label, unique = f"[{index + self.offset}]", True
        if len(b.key) >= 3 and b.key[0] == "param":  # the parameter's key and a path
            key = b.key[:3] + ((b.key[3] if len(b.key) > 3 else "") + label,)
        else:
            key = (b.key, label)
        name = b.name if label == "[?]" else f"{b.name}{label}"
        return RefVal(key=key, origin=b.origin, node=b.node, scope=b.scope, name=name,
                      unique=unique)

    def rest(self, start) -> "RefSeqVal":
        """``self[start:]`` (start None: not a constant)."""
        if start is None or start < 0 or not self.exact:
            return RefSeqVal(self.base, self.offset, False)
        return RefSeqVal(self.base, self.offset + start, True)


@record(eq=False)
class TransformVal(Value):
    """A transform not yet applied to a function: ``jax.jit``, ``partial(jax.jit, ...)``."""

    kind: str
    node: "cst.CSTNode"
    kwargs: dict
    args: tuple = ()


@record(eq=False)
class ClassVal(Value):
    """A class defined in the module (calling it makes an instance)."""

    cls: "ClassInfo"


@record(eq=False)
class InstanceVal(Value):
    """An instance of a class defined in the module."""

    cls: "ClassInfo"
    node: Optional["cst.CSTNode"] = None  # the call that created it, when known (identity)


@record(eq=False)
class ObjVal(InstanceVal):
    """An object made at one allocation site (``node``: the constructor call): an instance of
    a class of the module (a plain class, a dataclass, a NamedTuple, a registered pytree
    class), with a slot per attribute (``fields``: attribute -> Value, in field order). Objects
    made at different sites are different objects and their refs are told apart (refs a
    constructor creates get the site in their key). ``seq``: the instance is a tuple of its
    fields (a NamedTuple): indexing and unpacking give them. ``init``/``bindings``: the
    ``__init__`` that built it and its arguments (parameter -> Value), to read what a method
    or property of the class returns in terms of this object."""

    fields: dict = field(default_factory=dict)
    seq: bool = False
    key: Any = None  # identity (defaults to the site)
    name: str = ""
    init: Any = None
    bindings: Optional[dict] = None
    # Fields filled from the class summary (what the methods may assign), not by this
    # object's constructor or an assignment seen on it: an assignment replaces them.
    assumed: set = field(default_factory=set)

    def ident(self):
        return self.key if self.key is not None else ("obj", id(self.node))

    def as_seq(self) -> "SeqVal":
        return SeqVal(tuple(self.fields.values()), "tuple")


@record(eq=False)
class NamespaceVal(Value):
    """A plain attribute bag (``types.SimpleNamespace(count=0, buf=x_ref)``): mutable Python
    state whose attributes are the ones given and the ones assigned later."""

    node: "cst.CSTNode"  # the call that created it (its identity)
    attrs: dict = field(default_factory=dict)  # attribute -> joined Value


@record(eq=False)
class NnxVal(Value):
    """A Flax NNX Variable or object not known to hold refs (created with refs off, or where
    reflint does not know): it holds refs when read as part of a module that does."""

    kind: str  # "variable" or "module"
    node: Optional["cst.CSTNode"]  # the call that created it (its identity)
    arrays: bool = False  # created with `ref=False`: arrays even inside a ref-holding module
    cls: Optional["ClassInfo"] = None  # a module of a class of this file


@record(eq=False)
class ArrayVal(Value):
    """A JAX Array (result of jax.numpy / jax.lax / jax.random, or the read of a ref).

    ``also``: after branches merge, the other expressions the value may come from (the dtype
    domain, reflint/analysis/dtypes.py, knows a dtype only when they all agree)."""

    node: Optional["cst.CSTNode"] = None
    also: tuple = ()


@record(eq=False)
class SpecialVal(Value):
    """Callable helpers with meaning for the analysis (``f.defvjp``, ``pallas_call(k)``...)."""

    kind: str
    target: Any = None
    node: Any = None
    api_name: str = ""  # the registry API it comes from (a kernel launcher's)
    kwargs: Optional[dict] = None  # a kernel launcher's keyword arguments (name -> expression)


def iter_refs(value: Optional[Value], path: str = "", _classes: tuple = ()
              ) -> Iterator[tuple[RefVal, str]]:
    """All refs inside a value (pytrees of tuples, lists and dicts, and the attributes of NNX
    modules holding refs), with their paths."""
    if value is None:
        return
    if isinstance(value, RefVal):
        if value.tree and value.cls is not None:
            # An NNX module of a class of this file: itself (when it holds any ref), then its
            # Variables and sub-modules, attribute by attribute (`.a`, `.d.bias`).
            if value.cls in _classes or len(_classes) > 6:
                return
            inner = []
            for attr in sorted(value.cls.attrs):
                sub = tree_attribute(value, attr)
                if sub is not None:
                    inner.extend(iter_refs(sub, f"{path}.{attr}", _classes + (value.cls,)))
            if inner:
                yield value, path
                yield from inner
            return
        yield value, path
    elif isinstance(value, SeqVal):
        for i, item in enumerate(value.items):
            yield from iter_refs(item, f"{path}[{i}]")
    elif isinstance(value, DictVal):
        for k, item in value.items.items():
            yield from iter_refs(item, f"{path}[{k!r}]")
    elif isinstance(value, RefPoolVal):
        yield value.item(None), f"{path}[...]"
    elif isinstance(value, ObjVal):
        if len(_classes) > 6 or any(value is c for c in _classes):
            return
        for attr, item in list(value.fields.items()):
            yield from iter_refs(item, f"{path}.{attr}", _classes + (value,))


def tree_attribute(base: RefVal, attr: str, attrs: Optional[dict] = None) -> Optional[RefVal]:
    """The attribute ``attr`` of ``base``, an NNX module holding refs of a class of this file:
    its Variables and sub-modules hold refs too. Each gets an identity of its own within
    ``base`` (two attributes bound to one object share it: `self.c = self.a`). ``attrs``:
    the class's attributes (default: ``base.cls.attrs``)."""
    if attrs is None:
        attrs = base.cls.attrs if base.cls is not None else {}
    value = attrs.get(attr)
    cls = None
    kwargs: dict = {}
    shared = base.kwargs.get("shared")
    if shared and isinstance(value, RefVal) and isinstance(value.key, tuple) and \
            len(value.key) in (3, 4) and value.key[:2] == ("param", shared[0]) and \
            value.key[2] in shared[1] and value.key[3:] in ((), ("",)):
        # `self.w = w` with `w` an NNX object given to this module's `__init__`: that object
        # (one Variable held by two modules is one ref).
        got = shared[1][value.key[2]]
        return RefVal(key=got.key, origin=got.origin, node=got.node, scope=got.scope,
                      name=f"{base.name}.{attr}" if base.name else got.name, kwargs=got.kwargs,
                      unique=got.unique and base.unique, tree=got.tree, cls=got.cls,
                      root=got.root)
    if isinstance(value, RefVal):
        ident, tree, cls = value.key, value.tree or "variable", value.cls
        if value.origin == "created" and value.node is not None:
            ident = ("nnx", id(value.node))
        if "api" in value.kwargs:
            # A Flax layer that writes when called (a BatchNorm's mode): what it was built with.
            kwargs = value.kwargs
    elif isinstance(value, NnxVal) and not value.arrays:
        ident = ("nnx", id(value.node)) if value.node is not None else ("attr", attr)
        tree, cls = value.kind, value.cls
    elif isinstance(value, InstanceVal) and value.cls.nnx:
        ident, tree, cls = ("nnx", id(value.node)) if value.node is not None else \
            ("attr", attr), value.cls.nnx, \
            value.cls if value.cls.nnx == "module" else None
    elif _nnx_items(value):
        # A list of NNX objects (`nnx.data([nnx.Linear(...) for _ in range(3)])`): pytree
        # data of the module, like an nnx.List.
        ident, tree = ("attr", attr), "module"
    else:
        return None
    name = f"{base.name}.{attr}" if base.name else ""
    return RefVal(key=("attr", base.key, ident), origin=base.origin, node=base.node,
                  scope=base.scope, name=name, kwargs=kwargs, unique=base.unique, tree=tree,
                  cls=cls, root=base)


def _nnx_items(value: Optional[Value]) -> bool:
    """A list or tuple of NNX objects (Variables or modules, each holding refs when the
    module does), or a comprehension of them."""
    if isinstance(value, RefPoolVal):
        return bool(value.base.tree)
    if isinstance(value, SeqVal) and value.items:
        return all(isinstance(v, RefVal) and v.tree or isinstance(v, NnxVal) and
                   not v.arrays for v in value.items)
    return False


def contains_ref(value: Optional[Value]) -> bool:
    """A ref, or a container holding one (an NNX object holding refs counts as one, whatever
    its attributes)."""
    if isinstance(value, RefVal):
        return True
    return next(iter_refs(value), None) is not None


def is_interesting(value: Optional[Value]) -> bool:
    """Worth propagating between functions: contains a ref, a local function or a transform
    not yet applied (a helper returning `functools.partial(pl.kernel, ...)`)."""
    if value is None:
        return False
    if isinstance(value, (RefVal, FuncVal, OneOf, TransformVal, RefSeqVal, RefPoolVal,
                          FuncPoolVal)):
        return True
    if isinstance(value, SeqVal):
        return any(is_interesting(v) for v in value.items)
    if isinstance(value, DictVal):
        return any(is_interesting(v) for v in value.items.values())
    if isinstance(value, ObjVal):
        return contains_ref(value)
    return False


# How many functions a value may be one of before it is unknown: a test helper that launches
# each of a dozen kernels (`def run(kernel): return self.pallas_call(kernel, ...)`) needs more
# than a handful; the cost is one analysis of each function per call.
MAX_ALTERNATIVES = 128


def join(a: Optional[Value], b: Optional[Value]) -> Optional[Value]:
    """Merge two possible values of one name (after branches). Unknown wins; refs stay refs."""
    if a is b:
        return a
    if a is None or b is None:
        return None
    if isinstance(a, RefVal) and isinstance(b, RefVal):
        if a.key == b.key:
            return a
        return RefVal(key=("merged", a.key, b.key), origin="merged", node=a.node, scope=a.scope,
                      name=a.name, unique=False, tree=a.tree or b.tree,
                      cls=a.cls if a.cls is b.cls else None)
    if isinstance(a, NnxVal) and isinstance(b, NnxVal) and a.kind == b.kind:
        if a.node is b.node and a.arrays == b.arrays:
            return a
        return NnxVal(a.kind, None, cls=a.cls if a.cls is b.cls else None)
    if isinstance(a, QN) and isinstance(b, QN):
        return a if a.qualname == b.qualname else None
    if isinstance(b, RefSeqVal):
        a, b = b, a
    if isinstance(a, RefSeqVal) and (
            (isinstance(b, RefSeqVal) and b.base.key == a.base.key) or
            (isinstance(b, SeqVal) and all(isinstance(x, RefVal) for x in b.items))):
        # `scratch = refs[-n:] if n else ()`: a tuple of refs either way (which one unknown).
        return RefSeqVal(a.base, a.offset, False)
    if isinstance(a, SeqVal) and isinstance(b, SeqVal) and len(a.items) == len(b.items):
        return SeqVal(tuple(join(x, y) for x, y in zip(a.items, b.items)), a.kind)
    if isinstance(a, DictVal) and isinstance(b, DictVal) and a.items.keys() == b.items.keys():
        return DictVal({k: join(a.items[k], b.items[k]) for k in a.items})
    if isinstance(a, ArrayVal) and isinstance(b, ArrayVal):
        if a.node is b.node:
            return a
        also = a.also + tuple(n for n in (b.node,) + b.also if n is not a.node
                              and all(n is not m for m in a.also))
        return ArrayVal(a.node, also[:8]) if len(also) <= 8 else ArrayVal(a.node, (None,))
    if isinstance(a, FuncVal) and isinstance(b, FuncVal) and a.info is b.info and \
            a.transforms == b.transforms:
        return a
    if isinstance(a, (FuncVal, OneOf)) and isinstance(b, (FuncVal, OneOf)):
        alts = list(a.alts) if isinstance(a, OneOf) else [a]
        for f in (b.alts if isinstance(b, OneOf) else (b,)):
            if not any(g.info is f.info and g.transforms == f.transforms for g in alts):
                alts.append(f)
        return OneOf(tuple(alts)) if len(alts) <= MAX_ALTERNATIVES else None
    if isinstance(a, FuncPoolVal) and isinstance(b, FuncPoolVal) and a.kind == b.kind:
        elt = join(a.elt, b.elt)
        return FuncPoolVal(elt, a.kind) if elt is not None else None
    if isinstance(a, RefPoolVal) and isinstance(b, RefPoolVal) and a.base.key == b.base.key \
            and a.kind == b.kind:
        return a
    if isinstance(a, RefSeqVal) and isinstance(b, RefSeqVal) and a.base.key == b.base.key \
            and a.offset == b.offset and a.exact == b.exact:
        return a
    if isinstance(a, NamespaceVal) and isinstance(b, NamespaceVal) and a.node is b.node:
        return a
    if isinstance(a, ObjVal) or isinstance(b, ObjVal):
        if not (isinstance(a, ObjVal) and isinstance(b, ObjVal) and a.cls is b.cls and
                a.seq == b.seq and list(a.fields) == list(b.fields)):
            return InstanceVal(a.cls) if isinstance(a, InstanceVal) and \
                isinstance(b, InstanceVal) and a.cls is b.cls else None
        if a.ident() == b.ident() and all(a.fields[k] is b.fields[k] for k in a.fields):
            return a
        return ObjVal(a.cls, a.node, {k: join(a.fields[k], b.fields[k]) for k in a.fields},
                      a.seq, ("joined", a.ident(), b.ident()), a.name)
    if isinstance(a, (ClassVal, InstanceVal)) and type(a) is type(b) and a.cls is b.cls:
        if isinstance(a, InstanceVal) and a.node is not b.node:
            return InstanceVal(a.cls)
        return a
    return None


def signature(value: Optional[Value], _depth: int = 0) -> Any:
    """A stable, comparable summary of a value's ref content (for the fixpoint)."""
    if value is None or _depth > 6:
        return None
    if isinstance(value, RefVal):
        return ("ref", value.key)
    if isinstance(value, SeqVal):
        return ("seq",) + tuple(signature(v, _depth + 1) for v in value.items)
    if isinstance(value, DictVal):
        return ("dict",) + tuple(sorted((str(k), signature(v, _depth + 1))
                                      for k, v in value.items.items()))
    if isinstance(value, RefSeqVal):
        return ("refseq", value.base.key, value.offset, value.exact)
    if isinstance(value, RefPoolVal):
        return ("refpool", value.base.key, value.kind)
    if isinstance(value, FuncPoolVal):
        return ("funcpool", signature(value.elt), value.kind)
    if isinstance(value, ObjVal):
        return ("obj", str(value.ident())) + tuple(
            sorted((k, signature(v, _depth + 1)) for k, v in value.fields.items()))
    if isinstance(value, OneOf):
        return ("alts",) + tuple(signature(f) for f in value.alts)
    if isinstance(value, FuncVal):
        return ("func", id(value.info.node), tuple(t.kind for t in value.transforms),
                len(value.bound_args), value.bound_kwargs)
    return type(value).__name__
