"""reflint's syntax tree classes (reflint/nodes.py, written by tools/gen_nodes.py) against the
installed libcst, and the conversion of libcst's tree to them (reflint/cstbridge.py)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
import re

import libcst
import pytest

from reflint import cstbridge, fasttree
from reflint import nodes as cst
from reflint.analysis.syntax import LAYOUT

from conftest import ROOT, fixture_files

_spec = importlib.util.spec_from_file_location("gen_nodes",
                                               os.path.join(ROOT, "tools", "gen_nodes.py"))
gen_nodes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_nodes)

LIBCST = {c.__name__: c for c in gen_nodes.node_classes()}


def test_the_generated_module_is_what_the_generator_writes():
    with open(gen_nodes.TARGET, encoding="utf-8") as fh:
        text = fh.read()
    made_from = re.search(r"from libcst (\S+);", text).group(1)
    if made_from != gen_nodes._libcst_version():
        pytest.skip(f"reflint/nodes.py was generated from libcst {made_from}, "
                    f"libcst {gen_nodes._libcst_version()} is installed")
    assert text == gen_nodes.generate(), "run python tools/gen_nodes.py"


def test_every_libcst_node_has_a_class_with_its_fields_and_defaults():
    assert set(LIBCST) <= set(cst.NODE_CLASSES)
    for name, theirs in LIBCST.items():
        ours = cst.NODE_CLASSES[name]
        if inspect.isabstract(theirs) or not dataclasses.is_dataclass(theirs):
            continue
        fields = dataclasses.fields(theirs)
        assert ours._fields == tuple(f.name for f in fields), name
        for f in fields:
            if f.default is dataclasses.MISSING:
                continue
            mine = getattr(ours, f.name)
            if f.default is libcst.MaybeSentinel.DEFAULT:
                assert mine is cst.MaybeSentinel.DEFAULT, (name, f.name)
            elif not isinstance(f.default, libcst.CSTNode):
                assert mine == f.default, (name, f.name)


def test_the_class_hierarchy_is_libcst_s():
    names = sorted(LIBCST)
    for a in names:
        for b in names:
            assert issubclass(cst.NODE_CLASSES[a], cst.NODE_CLASSES[b]) == \
                issubclass(LIBCST[a], LIBCST[b]), (a, b)


def test_nodes_build_from_keywords_and_compare_by_identity():
    a = cst.Name(value="x")
    b = cst.Name(value="x")
    assert a.value == b.value == "x" and a.lpar == () and a != b and len({a, b}) == 2
    assert a == a and not (a != a) and vars(a) == {"value": "x"}  # only the fields given
    with pytest.raises(TypeError):
        cst.Name("x", "y")  # keywords only (a namespace's constructor, in C)
    call = cst.Call(func=a)
    assert call.args == () and call.func is a
    assert repr(call) == "Call(func=Name(value='x'))"


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for f in n._fields:
            v = getattr(n, f)
            for x in v if isinstance(v, (list, tuple)) else (v,):
                if isinstance(x, cst.CSTNode):
                    stack.append(x)


def _ids_below(node) -> set:
    out, stack = set(), [node]
    while stack:
        c = stack.pop()
        out.add(id(c))
        stack.extend(c.children)
    return out


@pytest.mark.parametrize("path", fixture_files()[::7], ids=os.path.basename)
def test_conversion_keeps_every_node_and_field(path):
    """Every node of libcst's tree has one converted node of its class, with the same scalar
    fields, but whitespace and comments, which stay libcst's objects; the converted tree
    gives libcst's code for each node. The iterative conversion (for trees deeper than the
    stack) gives the same tree."""
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    theirs = cstbridge.parse_module_cst(source)
    ours = cstbridge.to_nodes(theirs)
    assert ours.code == source
    seen, kept = set(), set()
    for n in _walk(ours):
        c = ours._cst_of[id(n)]
        seen.add(id(c))
        assert type(c).__name__ == type(n).__name__
        for f in n._fields:
            v, w = getattr(n, f), getattr(c, f)
            if isinstance(w, libcst.CSTNode) and type(w).__name__ in cstbridge.KEPT:
                assert v is w  # whitespace and comments: libcst's own objects
                kept.update(_ids_below(w))
            elif isinstance(w, libcst.CSTNode):
                assert ours._cst_of[id(v)] is w
            elif isinstance(w, (list, tuple)):
                assert [ours._cst_of.get(id(x), x) for x in v] == list(w)
                kept.update(i for x in w if type(x).__name__ in cstbridge.KEPT
                            for i in _ids_below(x))
            elif w is libcst.MaybeSentinel.DEFAULT:
                assert v is cst.MaybeSentinel.DEFAULT
            else:
                assert v == w, (type(n).__name__, f)
        if isinstance(n, cst.BaseExpression):
            assert ours.code_for_node(n) == theirs.code_for_node(c)
        for f in set(n._fields) - set(n._node_fields):  # what child_nodes never reads
            v = getattr(n, f)
            assert not any(isinstance(x, cst.CSTNode)
                           for x in (v if isinstance(v, (list, tuple)) else (v,))), f
    assert _ids_below(theirs) == seen | kept and not seen & kept
    assert kept  # the file has whitespace


LITERALS = ['"a"', "'b'", 'r"\\d"', "b'x'", 'rb"""x\'y"""', "'''q'''", 'u"é"', '""', "''",
            '"a" "b"', 'f"x" "y"', '"""a""" "b" \'c\'', "0x1F", "1_000", "0o17",
            "1.5e3", "2j", ".5", "1_0.0_1", '"""a\r\nb"""', "'''x\ny'''", 'b"\\xff"',
            'R"\\n"', 'U"x"', 'BR"q"', '"\\t"', "0b101", "0XfF", "0_0", "'''\"'''",
            "''''a'''", "'é'", 'b"""\r"""', 'F"{a}"', 'Rf"{a}"']


@pytest.mark.parametrize("literal", LITERALS)
def test_literal_properties_are_libcst_s(literal):
    theirs = libcst.parse_expression(literal)
    ours = cstbridge.parse_expression(literal)
    for prop in ("evaluated_value", "prefix", "quote", "raw_value"):
        if hasattr(theirs, prop):
            assert getattr(ours, prop) == getattr(theirs, prop), (literal, prop)
    fast = fasttree.convert(f"x = {literal}\n").body[0].body[0].value
    if hasattr(theirs, "evaluated_value"):
        assert fast.evaluated_value == theirs.evaluated_value


def test_operator_text_on_the_fast_tree_is_libcst_s():
    source = "x += a - b * c\ny = not a or b\nz = a is not b\nw = -a ** ~b\n"
    module = fasttree.convert(source)
    ops = [n for n in _walk(module) if type(n).__name__ in ("AddAssign", "Subtract", "Multiply",
                                                            "Not", "Or", "IsNot", "Minus",
                                                            "Power", "BitInvert")]
    assert len(ops) == 9
    for op in ops:
        theirs = getattr(libcst, type(op).__name__)()
        assert module.code_for_node(op) == libcst.Module([]).code_for_node(theirs)


def test_layout_classes_are_reflint_s():
    assert all(c.__module__ == "reflint.nodes" for c in LAYOUT)


def test_the_deep_conversion_is_the_recursive_one():
    source = open(fixture_files()[0], encoding="utf-8").read() + "x = " + "(" * 60 + "1" + \
        ")" * 60 + "\n"
    theirs = cstbridge.parse_module_cst(source)
    a, b = cstbridge._Converter(), cstbridge._Converter()
    ours, deep = a.convert(theirs), b._convert_deep(theirs)
    pairs = list(zip(_walk(ours), _walk(deep)))
    assert len(pairs) == len(a.of) == len(b.of) > 100
    for x, y in pairs:
        assert type(x) is type(y) and a.of[id(x)] is b.of[id(y)]
        for f in x._fields:
            v, w = getattr(x, f), getattr(y, f)
            if not isinstance(v, (cst.CSTNode, list, tuple)):
                assert v == w or v is w
