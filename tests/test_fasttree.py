"""reflint.fasttree: the libcst tree built from the stdlib ``ast`` must be libcst's own tree
(whitespace, comments and parentheses aside), and the findings on it the same."""

from __future__ import annotations

import collections
import glob
import os
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings

from reflint import cstbridge, engine, fasttree
from reflint import nodes as cst
from reflint.analysis import child_nodes
from reflint.engine import check_module, lint_source, parse_module
from reflint.settings import Settings

from conftest import fixture_files, installed_sources
from test_gate import programs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What the fast tree leaves at libcst's defaults: layout, not structure.
_LAYOUT = (cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace,
           cst.EmptyLine, cst.Newline, cst.Comment, cst.LeftParen, cst.RightParen, cst.Comma,
           cst.Colon, cst.AssignEqual, cst.Semicolon, cst.LeftSquareBracket,
           cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Dot)
_SCALARS = ("value", "star", "conversion")


def shape(node, out=None, in_fstring=False) -> list:
    """The tree as a list: node types and their names, strings, numbers and stars, in order.
    Inside f-strings only the expressions count (their text parts and the spelling of their
    constants are approximate in the fast tree, see the module's docstring)."""
    if out is None:
        out = []
    t = type(node)
    if t is cst.FormattedString:
        out.append("f-string(")
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                shape(part.expression, out, True)
                for q in part.format_spec or ():
                    if isinstance(q, cst.FormattedStringExpression):
                        shape(q.expression, out, True)
        out.append(")")
        return out
    if in_fstring and t in (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary):
        out.append(t.__name__)
        return out
    label = [t.__name__]
    for f in _SCALARS:
        v = getattr(node, f, None)
        if isinstance(v, str):
            label.append(f"{f}={v}")
    if t is cst.ImportFrom:
        label.append(f"level={len(node.relative)}")
    if t is cst.Parameters:
        label.append(f"{type(node.star_arg).__name__}/{type(node.posonly_ind).__name__}")
    out.append(" ".join(label) + "(")
    for c in child_nodes(node):
        if not isinstance(c, _LAYOUT):
            shape(c, out, in_fstring)
    out.append(")")
    return out


def assert_same_tree(source: str, where: str = "") -> None:
    expected = shape(parse_module(source))
    got = shape(fasttree.convert(source))
    if got != expected:
        i = next((k for k, (a, b) in enumerate(zip(expected, got)) if a != b),
                 min(len(got), len(expected)))
        pytest.fail(f"{where}: trees differ at item {i}:\n libcst: {expected[max(0, i - 5):i + 4]}"
                    f"\n fast:   {got[max(0, i - 5):i + 4]}")


SYNTAX = {
    "statements": """
        import a.b.c as d, e
        from . import x
        from ..p.q import (r as s, t)
        from m import *
        x = y = 1; z: int = 2; w: "T"
        x += 1; x @= m; x //= 2; x **= 3; x >>= 1; x <<= 1; x ^= 1; x |= 1; x &= 1; x %= 2
        del a, b
        del (c)
        del d[0], e.f
        global g
        assert x, "m"
        raise E from None
        if a: pass
        elif b:
            pass
        else:
            if c: pass
        for i, (j, k) in z: continue
        else: pass
        while x:
            break
        else:
            pass
        try: pass
        except (A, B) as e: pass
        except C: pass
        else: pass
        finally: pass
        try:
            pass
        except* ValueError as eg:
            pass
        with a as (b, c), d: pass
        with (a as b, c as d):
            pass
        def f(): return 1
        class K: x = 1
    """,
    "functions": """
        @dec
        @dec.attr(1)
        def f(a, b: int = 1, /, c=2, *args, d, e=3, **kw) -> "R":
            nonlocal_ = lambda p, *q, r=1, **s: p
            return f(*args, x=1, *rest, **kw)
        def g(*, a, b=1): yield a; yield; yield from b
        async def h(x):
            async for i in x:
                await i
            async with x as y:
                pass
            return [i async for i in x]
        class C(B, *bases, metaclass=M, **kw):
            def m(self, /): ...
    """,
    "expressions": """
        x = a if b else c
        y = not a and b or c and d and e
        z = a < b <= c != d is not e in f not in g
        w = -a + ~b * c @ d / e // f % g ** h << i >> j & k | l ^ m
        v = (yield)
        u = [1, *a], (2,), {3, *b}, {1: 2, **c}, {}, (), [], {*()}
        t = [i for i in a if i if not i for j in i], {k: v for k, v in d}, {i for i in a}
        s = (i for i in a)
        r = f(i for i in a)
        q = (n := 10), lambda: (yield)
        p = a[1], a[1:2], a[::3], a[1, 2], a[(1, 2)], a[(1), 2], a[1:2, ::3], a[...], a[()]
        o = a[b][c].d(e)[f:g]
        n = 0x1F, 1_000, 1.5e-3, 2j, 1.
        m = True, False, None, ...
        l = a.b.c.d
        k = (a)(b)
        a, *b = c
        [d, e] = f
        (g, h), i = j
    """,
    "strings": r'''
        a = "x" 'y' """z""" r'\d' u"u", b"b" rb'\'' B"\x00"
        b = f"{x!r:>{w}} {y=} {z['k']:.2f} {{}}" "tail" f'{a}{b}'
        c = (
            "one"
            f"two {three}"
            # a comment between the parts
            'four'
        )
        d = f"{'nested' + f'{inner}'}"
        """docstring"""
        e = "a\
        b"
    ''',
    "match": """
        match command.split():
            case [action]:
                pass
            case [action, obj, *rest] if obj:
                pass
            case (a, b) | [a, b, _]:
                pass
            case a, (b), c:
                pass
            case Point(x=0, y=0) | Point(1, y=2):
                pass
            case {"x": 1, **rest}:
                pass
            case -1 | 1.5 | 2j | 1 + 2j | "s" | None | True | Color.RED:
                pass
            case [*_]:
                pass
            case (x) as y:
                pass
            case _:
                pass
    """,
    "layout": "x = 1  # comment\r\nif x:\r\n\ty = [1,\r\n\t     2]\r\n\f\r\nz = \\\r\n  3\r\n",
    "non_ascii": "\u00e9t\u00e9 = '\u00e7a'; d = {'\u00e9': 1.5, 'k': x['\u00fc'], 't': (1, 2)}\n"
                 "y = f'{\u00e9t\u00e9!r} \u2192 {d[\"\u00e9\"]}' + a[(1, 2)] + b[1, 2]\n",
    "one_line_suites": "if x: a = 1; b = 2\nfor i in x: f(i); g(i)\nwhile y: break\n"
                       "class A: pass\ndef f(x): return x; pass\n",
}


@pytest.mark.parametrize("name", sorted(SYNTAX))
def test_same_tree_as_libcst_on_every_construct(name):
    source = SYNTAX[name]
    if not source.startswith("x = 1"):
        source = textwrap.dedent(source).lstrip("\n")
    assert_same_tree(source, name)


def _repo_files() -> list:
    files = fixture_files() + sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))
    files += sorted(glob.glob(os.path.join(ROOT, "reflint", "**", "*.py"), recursive=True))
    files += sorted(glob.glob(os.path.join(ROOT, "rules", "*.py")))
    return files


@pytest.mark.parametrize("path", _repo_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_same_tree_as_libcst_on_fixtures_and_sources(path):
    with open(path, encoding="utf-8") as fh:
        assert_same_tree(fh.read(), path)


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_same_tree_as_libcst_on_installed_jax_and_flax():
    """Every 7th file of the installed jax and flax (sorted)."""
    files = installed_sources()[::7]
    assert len(files) >= 80
    for path, source in files:
        assert_same_tree(source, path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_same_tree_as_libcst_on_generated_programs(source):
    try:
        compile(source, "gen.py", "exec")
    except SyntaxError:
        return
    assert_same_tree(source, "generated")


# --------------------------------------------------------------------------------------------
# Positions and text: the fast tree's (from ``ast``) are libcst's
# --------------------------------------------------------------------------------------------


def _pairs(a, b, out):
    """The nodes of two trees of the same shape, paired in order (layout nodes aside)."""
    out.append((a, b))
    ka = [c for c in child_nodes(a) if not isinstance(c, _LAYOUT)]
    kb = [c for c in child_nodes(b) if not isinstance(c, _LAYOUT)]
    assert len(ka) == len(kb)
    for x, y in zip(ka, kb):
        _pairs(x, y, out)
    return out


def assert_same_positions(source: str, where: str = "") -> int:
    """Every node the fast tree places (its ``ast`` positions, exact ones only) has libcst's
    range, and ``text`` is libcst's ``code_for_node``, stripped. Returns how many were
    compared."""
    real = parse_module(source)
    record: dict = {}
    fast = fasttree.convert(source, None, record)
    ranges = cstbridge.positions_of(real)
    exact = record["positions"].exact()
    n = 0
    for r, f in _pairs(real, fast, []):
        got = exact.get(f)
        if got is None or isinstance(r, cst.Module):
            continue
        n += 1
        assert got == ranges.get(r), f"{where}: {type(r).__name__} {real.code_for_node(r)!r}"
        text = exact.text(f)  # None: not known (the engine then uses libcst's tree)
        if isinstance(r, cst.BaseExpression) and text is not None:  # what messages quote
            assert text == real.code_for_node(r).strip(), \
                f"{where}: {type(r).__name__} {real.code_for_node(r)!r}"
    return n


PAREN_CASES = """
x = (a, b)
y = ((a), (b,), ((c)), ( d ))
f((a, b)); f(((a, b))); f(x for x in y); f((x for x in y)); g = (x for x in y)
f(a, (b)); f((a), b); f(( a )); f(*(a), **(k)); f(k=(v)); (f)(x); (f)((x))
if (a): pass
while(b): break
z = [(i) for (i) in (k) if (i)]
w = {(k): (v) for k, v in (d).items()}
t = x[(1)] + x[(1, 2)] + x[1, (2)] + x[(a):(b)]
del (c)
return_ = lambda: (a)
not (a) and (b) or (c)
u = (  # comment
    a,  # more
    b,
)
v = (
    call(
        x,
    )  # after
)
class K((Base), metaclass=(M)):
    def m(self, a=(1), *args, b: (int) = (2), **kw) -> (int):
        return (a)
async def h():
    await (x)
    yield (y)
    return (lambda q: (q))
@(deco)
def d(): pass
print(f"{(a)} {b!r:>{(w)}}", ("s" "t"), (1 if c else 2))
"""


def test_same_positions_and_text_with_parentheses():
    assert assert_same_positions(PAREN_CASES.lstrip("\n"), "parens") > 100


@pytest.mark.parametrize("name", sorted(SYNTAX))
def test_same_positions_on_every_construct(name):
    source = SYNTAX[name]
    if not source.startswith("x = 1"):
        source = textwrap.dedent(source).lstrip("\n")
    assert_same_positions(source, name)


@pytest.mark.parametrize("path", fixture_files()[::3] + sorted(
    glob.glob(os.path.join(ROOT, "examples", "*.py"))), ids=lambda p: os.path.relpath(p, ROOT))
def test_same_positions_on_fixtures(path):
    with open(path, encoding="utf-8") as fh:
        assert_same_positions(fh.read(), path)


# --------------------------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------------------------

ALL = Settings()


def _codes(module, path, source) -> collections.Counter:
    return collections.Counter(d.code for d in check_module(module, path, ALL, source))


@pytest.mark.parametrize("path", fixture_files(), ids=os.path.basename)
def test_same_findings_on_the_fast_tree(path):
    """Every rule reports as often on the fast tree as on libcst's, fixture by fixture."""
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    fast = _codes(fasttree.convert(source), path, source)
    exact = _codes(parse_module(source), path, source)
    assert fast == exact


BAD = "import jax\n\n@jax.jit\ndef f(x):\n    r = jax.new_ref(x)\n    return r\n"
CLEAN = "import jax\n\n@jax.jit\ndef f(x):\n    r = jax.new_ref(x)\n    return r[...]\n"


def _count_libcst_parses(monkeypatch) -> list:
    calls = []
    real = engine.parse_module

    def counting(source):
        calls.append(source)
        return real(source)

    monkeypatch.setattr(engine, "parse_module", counting)
    return calls


def test_clean_file_is_not_parsed_by_libcst(monkeypatch):
    calls = _count_libcst_parses(monkeypatch)
    assert lint_source(CLEAN, "clean.py", ALL).diagnostics == []
    assert calls == []


def test_findings_come_from_the_fast_tree(monkeypatch):
    """A finding without a fix: one analysis, of the fast tree; libcst never parses."""
    calls = _count_libcst_parses(monkeypatch)
    diags = lint_source(BAD, "bad.py", ALL).diagnostics
    assert [d.code for d in diags] == ["REF001"]
    assert (diags[0].line, diags[0].column) == (6, 12)
    assert calls == []
    assert diags == lint_source(BAD, "bad.py", ALL, use_prefilter=False).diagnostics
    assert [d.message for d in diags] == \
        [d.message for d in lint_source(BAD, "bad.py", ALL, use_prefilter=False).diagnostics]


FIXABLE = "import jax\n\n@jax.jit\ndef f(x_ref):\n    return (x_ref) * 2\n\n" \
          "f(jax.new_ref(1.0))\n"


def test_fix_edits_are_built_by_libcst_when_read(monkeypatch):
    """``lazy_fixes``: the finding says it is fixable (message, applicability) without
    libcst; its edits come from libcst's tree, parsed once for the file, when first read."""
    from reflint.diagnostics import LazyFix

    calls = _count_libcst_parses(monkeypatch)
    diags = lint_source(FIXABLE, "fix.py", ALL, lazy_fixes=True).diagnostics
    assert calls == []
    fixed = [d for d in diags if d.fix is not None]
    assert fixed and all(isinstance(d.fix, LazyFix) for d in fixed)
    calls_before = len(calls)
    exact = lint_source(FIXABLE, "fix.py", ALL, use_prefilter=False).diagnostics
    assert len(calls) == calls_before + 1
    assert [d.to_json() for d in diags] == [d.to_json() for d in exact]
    assert len(calls) == calls_before + 2  # the lazy fixes' one parse
    # Without lazy_fixes, a file with a fix is analysed on libcst's tree, as before.
    eager = lint_source(FIXABLE, "fix.py", ALL).diagnostics
    assert not any(isinstance(d.fix, LazyFix) for d in eager)
    assert [d.to_json() for d in eager] == [d.to_json() for d in exact]


def test_lazy_fixes_survive_pickling_and_the_cache_format():
    import pickle

    from reflint.diagnostics import Diagnostic, LazyFix

    diags = lint_source(FIXABLE, "fix.py", ALL, lazy_fixes=True).diagnostics
    expected = [d.to_json() for d in lint_source(FIXABLE, "fix.py", ALL,
                                                 use_prefilter=False).diagnostics]
    again = pickle.loads(pickle.dumps(diags))
    assert [d.to_json() for d in again] == expected
    cached = [Diagnostic.from_json(d.to_json(resolve=False)) for d in diags]
    assert any(isinstance(d.fix, LazyFix) and not d.fix.resolved for d in cached)
    engine.attach_fix_source(cached, FIXABLE, "fix.py", ALL)
    assert [d.to_json() for d in cached] == expected


@pytest.mark.parametrize("path", fixture_files(), ids=os.path.basename)
def test_same_diagnostics_with_lazy_fixes(path):
    """Fixture by fixture, the findings of the one analysis on the fast tree (positions,
    messages, related notes, and the fixes their edits come from libcst's tree) are those of
    libcst's own tree."""
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    fast = lint_source(source, path, ALL, lazy_fixes=True).diagnostics
    exact = lint_source(source, path, ALL, use_prefilter=False).diagnostics
    assert [d.to_json() for d in fast] == [d.to_json() for d in exact]


@pytest.mark.parametrize("failure", [fasttree.Unsupported("x"), KeyError("x"),
                                     RecursionError()])
def test_fast_tree_failure_falls_back_to_libcst(monkeypatch, failure):
    def broken(source, tree=None):
        raise failure

    monkeypatch.setattr(fasttree, "convert", broken)
    assert [d.code for d in lint_source(BAD, "bad.py", ALL).diagnostics] == ["REF001"]
    assert lint_source(CLEAN, "clean.py", ALL).diagnostics == []


def test_flake8_tree_is_used(monkeypatch):
    """The flake8 plugin hands over the ``ast`` flake8 already built: no second parse (in
    flake8's process; an isolated child parses again, see tests/test_isolation.py)."""
    import ast

    monkeypatch.setenv("REFLINT_ISOLATE", "0")
    from reflint import gate
    from reflint.flake8_plugin import Flake8Plugin

    def no_parse(source):
        raise AssertionError("parsed again")

    # The engine reads the gate through a lazy module (reflint._lazy), which copies the
    # module's names when first used: patched there, so that the copy made now is the real
    # module's and the patch is undone after the test (not kept by the copy).
    monkeypatch.setattr(engine.gate, "parse", no_parse)
    monkeypatch.setattr(gate, "parse", no_parse)
    lines = BAD.splitlines(keepends=True)
    found = list(Flake8Plugin(ast.parse(BAD), lines, "bad.py").run())
    assert [t[2].split()[0] for t in found] == ["REF001"]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameter syntax is Python 3.12+")
def test_same_tree_with_type_parameters():
    """PEP 695 type parameters (JAX 0.12's own sources use them)."""
    assert_same_tree(textwrap.dedent("""
        def f[T: int, U, *Ts, **P](x: T) -> T:
            return x

        class C[T](Base, metaclass=M):
            def g[S: (int, str)](self, s: S) -> S:
                return s

        async def h[T](x): pass

        type Pair[T] = tuple[T, T]
        type Alias = int | None
    """), "type parameters")


def test_a_checked_file_leaves_no_cycles_for_the_collector():
    """The fast tree's builder, the `ast` tree and the positions are freed by reference
    counting once the findings are out (the CLI and the server collect after each file: with
    the builder's dispatch tables in a cycle, that collection walked ~24k objects a keystroke
    on a 2,000-line kernel file)."""
    import gc

    source = BAD + "".join(f"\n\ndef k{i}(x_ref, o_ref):\n    o_ref[...] = x_ref + {i}\n"
                           f"\n\ndef run{i}(x):\n    return pl.pallas_call(k{i}, out_shape=x)(x)\n"
                           for i in range(50))
    source = source.replace("import jax\n", "import jax\nfrom jax.experimental import pallas as pl\n", 1)
    gc.collect()
    gc.disable()
    try:
        result = lint_source(source, "k.py", ALL, lazy_fixes=True)
        assert sum(d.code == "REF007" for d in result.diagnostics) == 50
        del result
        assert gc.collect() < 50
    finally:
        gc.enable()
