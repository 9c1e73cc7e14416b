"""``record``: ``dataclasses.dataclass`` for reflint's own classes, at a tenth of its import cost.

``dataclass`` compiles each method it makes from source text when the class is created: for
reflint's ~70 records (values, facts, summaries, diagnostics, the API registry) that was 223
small functions, ~290 M instructions, more than half of what importing reflint costs, paid by
every ``reflint check`` before it reads a file. ``record`` makes the same classes for the
options reflint uses (``frozen``, ``eq``, ``order``, fields with ``field(default=...,
default_factory=..., compare=False)``, inheritance from another record):

* ``__init__`` compiled from source as ``dataclass`` writes it (a record is created in the
  analysis' inner loops: a generic ``__init__`` would cost there what it saves here), but
  only when the class is first instantiated: a record the run never makes costs nothing;
* ``__eq__``, ``__hash__``, the ordering methods, ``__repr__`` and the frozen
  ``__setattr__``/``__delattr__`` shared closures over the class's field names
  (``operator.attrgetter``), not compiled per class;
* ``__dataclass_fields__``, so ``dataclasses.replace`` and ``is_dataclass`` work on them
  (``replace`` here is the same without importing ``dataclasses``, whose import, with the
  ``inspect`` it imports, costs a check another ~9 ms).

What it leaves out (nothing reflint uses): ``ClassVar``/``InitVar``/``KW_ONLY`` annotations,
``__post_init__``, ``slots``, ``unsafe_hash``, ``init=False``/``repr=False`` fields, the
mutable-default check, ``dataclasses.fields`` (it lists only ``dataclasses``' own fields).
tests/test_record.py holds each option to ``dataclass``'s behaviour.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional


class _Missing:
    """No default (``dataclasses.MISSING``'s part)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


class Field:
    """A field's declaration, as ``dataclasses.Field`` holds it (what ``dataclasses.replace``
    reads: ``name``, ``init``, ``default``, ``_field_type``)."""

    __slots__ = ("name", "type", "default", "default_factory", "compare", "init", "repr",
                 "_field_type")

    def __init__(self, default=MISSING, default_factory=MISSING, compare: bool = True):
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = None
        self.type = None
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.init = True
        self.repr = True
        self._field_type = None  # a plain field (neither a ClassVar nor an InitVar)

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, " \
               f"default_factory={self.default_factory!r}, compare={self.compare!r})"


def field(*, default=MISSING, default_factory=MISSING, compare: bool = True) -> Field:
    """``dataclasses.field`` for a record: a default, a factory of defaults, or a field left
    out of ``==``, hashing and ordering."""
    return Field(default, default_factory, compare)


def replace(obj, /, **changes):
    """``dataclasses.replace``: a copy of the record ``obj`` with ``changes``."""
    for name in obj.__dataclass_fields__:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return obj.__class__(**changes)


# (class, frozen) of every record whose ``__init__`` this module writes (tools/gen_inits.py).
MADE: list = []


def record(cls=None, /, *, eq: bool = True, frozen: bool = False, order: bool = False):
    """``@record``, ``@record(eq=False)``, ``@record(frozen=True, order=True)``: as
    ``@dataclass`` with the same arguments."""
    def wrap(c):
        return _make(c, eq, frozen, order)
    return wrap if cls is None else wrap(cls)


def _make(cls, eq: bool, frozen: bool, order: bool):
    fields: dict = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, "__dataclass_fields__", None) or {})
    own = cls.__dict__
    for name, ann in own.get("__annotations__", {}).items():
        default = own.get(name, MISSING)
        f = default if isinstance(default, Field) else Field(default)
        f.name = name
        f.type = ann
        fields[name] = f  # a redefined field keeps its place, as in dataclass
        if isinstance(default, Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    cls.__dataclass_fields__ = fields
    names = tuple(fields)
    required_after_default = False
    seen_default = False
    for f in fields.values():
        has = f.default is not MISSING or f.default_factory is not MISSING
        seen_default |= has
        required_after_default |= seen_default and not has
    if required_after_default:
        raise TypeError(f"{cls.__name__}: a field without a default follows one with a default")
    if "__init__" not in own:
        cls.__init__ = _lazy_init(cls, frozen)
        MADE.append((cls, frozen))
    if "__repr__" not in own:
        cls.__repr__ = _repr(names)
    compared = tuple(n for n, f in fields.items() if f.compare)
    key = _key(compared)
    if eq and "__eq__" not in own:
        cls.__eq__ = _eq(key)
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and not explicit_hash:
        if frozen:
            cls.__hash__ = _hash(key)
        else:
            cls.__hash__ = None  # an equal-by-value, mutable object: not hashable
    if order:
        for name, op in (("__lt__", tuple.__lt__), ("__le__", tuple.__le__),
                         ("__gt__", tuple.__gt__), ("__ge__", tuple.__ge__)):
            if name in own:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
            setattr(cls, name, _compare(key, op))
    if frozen:
        cls.__setattr__, cls.__delattr__ = _frozen(cls, names)
    if "__match_args__" not in own:
        cls.__match_args__ = names
    if cls.__doc__ is None:
        cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
    return cls


def _key(names: tuple):
    """The tuple of the fields compared (``attrgetter`` gives a bare value for one name)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return attrgetter(*names)


def _eq(key):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented
    return __eq__


def _hash(key):
    def __hash__(self):
        return hash(key(self))
    return __hash__


def _compare(key, op):
    def compare(self, other):
        if other.__class__ is self.__class__:
            return op(key(self), key(other))
        return NotImplemented
    return compare


def _repr(names: tuple):
    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{self.__class__.__qualname__}({inner})"
    return __repr__


def _frozen(cls, names: tuple):
    fields = frozenset(names)

    def __setattr__(self, name, value):
        if type(self) is cls or name in fields:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in fields:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _lazy_init(cls, frozen: bool):
    """An ``__init__`` that compiles the class's own on its first call, and hands over."""
    def __init__(self, *args, **kwargs):
        real = _init(cls, frozen)
        if cls.__dict__.get("__init__") is __init__:
            cls.__init__ = real
        real(self, *args, **kwargs)
    return __init__


def init_source(cls, frozen: bool) -> tuple:
    """(source of ``cls``'s ``__init__``, the globals it reads, its defaults): ``dataclass``'s
    ``__init__``, the parameters in field order, each default the field's, each factory
    called when its argument is left out."""
    fields = cls.__dataclass_fields__
    params, body, defaults = [], [], []
    glob = {"MISSING": MISSING, "_set": object.__setattr__}
    for i, (name, f) in enumerate(fields.items()):
        if f.default_factory is not MISSING:
            glob[f"_factory{i}"] = f.default_factory
            params.append(name)
            defaults.append(MISSING)
            value = f"_factory{i}() if {name} is MISSING else {name}"
        else:
            params.append(name)
            if f.default is not MISSING:
                defaults.append(f.default)
            value = name
        body.append(f"    _set(self, {name!r}, {value})" if frozen else
                    f"    self.{name} = {value}")
    text = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") \
        if params else "def __init__(self):\n    pass"
    return text, glob, tuple(defaults)


_CODES: Optional[dict] = None


def _precompiled(text: str):
    """The code of ``text`` from reflint/_inits.py (generated by tools/gen_inits.py and
    byte-compiled with the package), or None: a compile costs ~0.1 ms a record, a few
    percent of a one-file check."""
    global _CODES
    if _CODES is None:
        try:
            from ._inits import CODES
        except ImportError:  # pragma: no cover - a tree without the generated module
            CODES = {}
        _CODES = CODES
    return _CODES.get(text)


def _init(cls, frozen: bool):
    """``cls``'s ``__init__`` (``init_source``): the code precompiled for its source when
    there is one, else compiled now."""
    text, glob, defaults = init_source(cls, frozen)
    code = _precompiled(text)
    name = f"<record {cls.__qualname__}.__init__>"
    if code is not None:
        code = code.replace(co_filename=name, co_name="__init__", **_QUALNAME)
        init = _FunctionType(code, glob, "__init__")
    else:
        ns: dict = {}
        exec(compile(text, name, "exec"), glob, ns)
        init = ns["__init__"]
    init.__defaults__ = defaults or None
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


_FunctionType = type(_init)
_QUALNAME = {"co_qualname": "__init__"} if hasattr(_init.__code__, "co_qualname") else {}
