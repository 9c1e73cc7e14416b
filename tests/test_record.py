"""reflint._record.record against dataclasses.dataclass: the same classes for the options
reflint uses, without compiling a method per class at import."""

from __future__ import annotations

import dataclasses
import pickle
import sys

import pytest

from reflint import _record
from reflint._record import FrozenInstanceError, field, record, replace


def both(options: dict, body):
    """The class ``body(decorator, field)`` makes with record and with dataclass."""
    ours = body(record(**options), field)
    theirs = body(dataclasses.dataclass(**options), dataclasses.field)
    return ours, theirs


def point(deco, fld):
    @deco
    class Point:
        """A point."""

        x: int
        y: int = 0
        tags: list = fld(default_factory=list)
        note: str = fld(default="", compare=False)

    return Point


OPTIONS = [{}, {"eq": False}, {"frozen": True}, {"frozen": True, "order": True},
           {"order": True}, {"frozen": True, "eq": False}]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_construction_defaults_and_factories(options):
    for cls in both(options, point):
        p = cls(1)
        assert (p.x, p.y, p.tags, p.note) == (1, 0, [], "")
        q = cls(1, 2, [3], note="n")
        assert (q.x, q.y, q.tags, q.note) == (1, 2, [3], "n")
        assert cls(1).tags is not cls(1).tags  # a fresh default each time
        assert cls(x=5, y=6).y == 6
        with pytest.raises(TypeError):
            cls()
        with pytest.raises(TypeError):
            cls(1, 2, [], "", 5)
        with pytest.raises(TypeError):
            cls(1, z=2)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_equality_hashing_ordering_and_repr_as_dataclass(options):
    ours, theirs = both(options, point)
    for make in (lambda c: c(1, 2, [3], "a"), lambda c: c(1, 2, [3], "b"),
                 lambda c: c(2, 1)):
        a, b = make(ours), make(theirs)
        assert repr(a).replace(ours.__qualname__, "P") == \
            repr(b).replace(theirs.__qualname__, "P")
    pairs = [(ours(1, 2, [], "a"), ours(1, 2, [], "b")), (ours(1, 2), ours(1, 3))]
    tpairs = [(theirs(1, 2, [], "a"), theirs(1, 2, [], "b")), (theirs(1, 2), theirs(1, 3))]
    for (a, b), (c, d) in zip(pairs, tpairs):
        assert (a == b) == (c == d)
        assert (a != b) == (c != d)
        assert (a == a) and (c == c)
    assert ours.__hash__ is None if theirs.__hash__ is None else ours.__hash__ is not None
    if theirs.__hash__ is not None and options.get("frozen") and options.get("eq", True):
        assert hash(ours(1, 2, (), "a")) == hash(ours(1, 2, (), "b"))  # `note` not compared
    if options.get("order"):
        assert (ours(1, 2) < ours(1, 3)) == (theirs(1, 2) < theirs(1, 3)) is True
        assert (ours(2, 0) >= ours(1, 9)) is True
        with pytest.raises(TypeError):
            ours(1) < 3
    assert ours(1) != 1 and ours(1).__eq__(1) is NotImplemented


def test_frozen_records_refuse_assignment_as_dataclass_does():
    ours, theirs = both({"frozen": True}, point)
    for cls, error in ((ours, FrozenInstanceError), (theirs, dataclasses.FrozenInstanceError)):
        p = cls(1)
        with pytest.raises(error):
            p.x = 2
        with pytest.raises(error):
            del p.y
        with pytest.raises(AttributeError):
            p.other = 1  # a frozen class refuses any attribute of its own instances
    assert issubclass(FrozenInstanceError, AttributeError)


def test_inheritance_keeps_dataclass_field_order():
    def classes(deco, fld):
        @deco
        class Base:
            """Base."""

            a: int
            b: int = 1

        @deco
        class Child(Base):
            """Child."""

            a: int = 5  # redefined: keeps its place
            c: int = 2

        return Child

    ours, theirs = both({}, classes)
    assert list(ours.__dataclass_fields__) == [f.name for f in dataclasses.fields(theirs)]
    assert vars(ours()) == vars(theirs())
    assert vars(ours(7, 8, 9)) == vars(theirs(7, 8, 9))


def test_a_field_without_default_after_one_with_a_default_is_refused():
    with pytest.raises(TypeError):
        @record
        class Bad:
            """Bad."""

            a: int = 0
            b: int


def test_replace_pickle_and_is_dataclass():
    ours, _ = both({"frozen": True}, point)
    p = ours(1, 2, [3], "n")
    for fn in (replace, dataclasses.replace):
        q = fn(p, y=9)
        assert (q.x, q.y, q.tags, q.note) == (1, 9, [3], "n") and type(q) is ours
    assert dataclasses.is_dataclass(ours)
    mod = sys.modules[__name__]
    mod.PicklePoint = ours
    ours.__qualname__ = ours.__name__ = "PicklePoint"
    try:
        r = pickle.loads(pickle.dumps(p))
    finally:
        del mod.PicklePoint
    assert r == p and r.note == "n"


def test_init_is_compiled_at_the_first_instance_only():
    @record
    class Lazy:
        """Lazy."""

        a: int

    stub = Lazy.__dict__["__init__"]
    assert Lazy(1).a == 1
    compiled = Lazy.__dict__["__init__"]
    assert compiled is not stub and compiled.__qualname__.endswith("Lazy.__init__")
    assert Lazy(2).a == 2 and Lazy.__dict__["__init__"] is compiled


def test_methods_written_in_the_class_are_kept():
    @record(frozen=True)
    class Own:
        """Own."""

        a: int

        def __repr__(self):
            return "own"

        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    assert repr(Own(1)) == "own" and Own(1) == Own(2)
    assert Own.__hash__ is object.__hash__


def test_reflint_imports_neither_dataclasses_nor_inspect():
    import subprocess

    code = ("import sys, reflint.cli, reflint.engine, reflint.analysis, reflint.project\n"
            "from reflint.rule import all_rules\nall_rules()\n"
            "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_every_record_of_reflint_makes_instances_equal_to_its_fields():
    """Each record class of reflint: constructed from its own fields' values (the defaults,
    or a placeholder), it holds them."""
    import reflint.analysis  # noqa: F401 - every module with records
    import reflint.cli  # noqa: F401
    import reflint.project  # noqa: F401
    import reflint.server  # noqa: F401

    seen = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("reflint"):
            continue
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != name or \
                    "__dataclass_fields__" not in cls.__dict__:
                continue
            fields = cls.__dataclass_fields__
            values = {n: (f"<{n}>" if f.default is _record.MISSING and
                          f.default_factory is _record.MISSING else
                          f.default if f.default is not _record.MISSING else
                          f.default_factory()) for n, f in fields.items()}
            obj = cls(**values)
            assert {n: getattr(obj, n) for n in fields} == values, cls
            seen += 1
    assert seen >= 60


def test_the_precompiled_inits_are_current():
    """reflint/_inits.py holds the __init__ of every record of reflint (tools/gen_inits.py
    writes it): none is compiled in a run."""
    import importlib.util
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        "gen_inits", os.path.join(root, "tools", "gen_inits.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(root, "reflint", "_inits.py"), encoding="utf-8") as fh:
        assert fh.read() == gen.render(), "run python tools/gen_inits.py"
    from reflint._inits import CODES

    for cls, frozen in gen.record_classes():
        assert _record.init_source(cls, frozen)[0] in CODES, cls


def test_a_precompiled_init_is_the_compiled_one(monkeypatch):
    """An __init__ built from the precompiled code behaves as the one compiled from its
    source: defaults, factories, frozen fields, its name in tracebacks."""
    from reflint._inits import CODES

    @record(frozen=True)
    class Frozen:
        """Frozen."""

        a: int
        b: list = field(default_factory=list)
        c: str = "c"

    text = _record.init_source(Frozen, True)[0]
    monkeypatch.setitem(CODES, text, compile(text, "<x>", "exec").co_consts[0])
    f = Frozen(1)
    assert (f.a, f.b, f.c) == (1, [], "c") and Frozen(1).b is not f.b
    assert Frozen.__init__.__code__.co_name == "__init__"
    assert Frozen.__init__.__qualname__.endswith("Frozen.__init__")
    with pytest.raises(FrozenInstanceError):
        f.a = 2
    with pytest.raises(TypeError):
        Frozen()
