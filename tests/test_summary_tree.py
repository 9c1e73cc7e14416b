"""One parse per file: the summary phase cuts a module from the tree of the whole module
(reflint.summary ``_cut_tree``) instead of parsing the cut text, and keeps that tree for the
check (reflint.gate ``keep``/``take``). The cut tree must be the cut text's, the summary the
same either way, and the check must find the same."""

from __future__ import annotations

import ast
import os
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings

from reflint import cli, gate, summary
from reflint.summary import _cut_plan, _cut_text, _cut_tree, _relevant, _relevant_or_refs

from conftest import fixture_files, installed_sources
from test_gate import programs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _dump(tree) -> str:
    return ast.dump(tree, include_attributes=True)


def _check_cut(source: str) -> list:
    """For both kinds of cut: 'same' (the cut tree is the cut text's), 'parsed' (no cut tree:
    the cut text is parsed, as before) or 'no plan'."""
    whole = ast.parse(source)
    out = []
    for relevant in (_relevant, _relevant_or_refs):
        plan = _cut_plan(source, relevant)
        if plan is None:
            out.append("no plan")
            continue
        got = _cut_tree(plan, whole)
        if got is None:
            out.append("parsed")
            continue
        assert _dump(got) == _dump(ast.parse(_cut_text(plan)))
        out.append("same")
    return out


CASES = {
    "defs and classes": """
        import jax
        from jax.experimental import pallas as pl

        X = 1; Y = 2

        @jax.jit
        def f(x,
              y):  # a header on two lines
            return x + y

        async def g(): return 1

        def h(): return (1,
                         2)

        @dataclass
        class C(Base):
            a: int = 0

            def m(self):
                return self.a

        def launch(x):
            return pl.pallas_call(f, out_shape=x)(x)
    """,
    # Not indented (the column 0 lines are the point): no dedent.
    "docstring lines at column 0": (
        '"""A module docstring\n'
        'with lines at column 0\n'
        '\n'
        'that the cut keeps."""\n'
        'import jax\n'
        '\n'
        'def f():\n'
        '    return 1\n'),
    "a string at column 0 in a def": (
        'import jax\n'
        '\n'
        'def f():\n'
        '    s = """\n'
        'text at column 0\n'
        '"""\n'
        '    return s\n'
        '\n'
        'def g(x):\n'
        '    return jax.jit(f)(x)\n'),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cut_tree_is_the_cut_texts(name):
    source = CASES[name]
    if source.startswith("\n"):
        source = textwrap.dedent(source).lstrip("\n")
    result = _check_cut(source)
    assert "same" in result or name == "a string at column 0 in a def"


def test_a_def_cut_apart_by_its_string_is_parsed_as_before():
    """The plan cuts the def at the string's line at column 0: its cut text does not parse
    (the whole module is then summarized, as before), and no cut tree is made from it."""
    assert _check_cut(CASES["a string at column 0 in a def"]) == ["parsed", "parsed"]


def _sources() -> list:
    out = []
    for path in fixture_files():
        with open(path, encoding="utf-8") as fh:
            out.append((path, fh.read()))
    return out


def test_cut_tree_on_fixtures():
    seen = []
    for path, source in _sources():
        seen.extend(_check_cut(source))
    cut = [x for x in seen if x != "no plan"]
    assert len(cut) > 500 and cut.count("same") > 0.99 * len(cut)


@pytest.mark.slow  # CI's full suite
def test_cut_tree_on_installed_sources():
    seen = []
    for path, source in installed_sources():
        try:
            ast.parse(source)
        except SyntaxError:
            continue
        seen.extend(_check_cut(source))
    cut = [x for x in seen if x != "no plan"]
    assert len(cut) > 1000 and cut.count("same") > 0.99 * len(cut)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_cut_tree_on_generated_programs(source):
    try:
        ast.parse(source)
    except SyntaxError:
        return
    _check_cut(source)
    _summaries_agree("gen.py", source)


def _summaries_agree(path: str, source: str) -> None:
    calls = []

    def whole():
        calls.append(1)
        return gate.parse(source)

    got = summary.summarize(source, path, whole=whole)
    want = summary.summarize(source, path)
    if got is not None and calls:
        _same_classes(got.classes, want.classes, gate.parse(source), path)
        got.classes = want.classes
    assert got == want
    assert len(calls) <= 1


def _same_classes(from_tree: dict, from_text: dict, tree, path: str) -> None:
    """The classes of a summary read from the whole tree are its top-level class statements;
    those read from the text (headers at column 0) are the same, but for a ``class`` line at
    column 0 inside a string (a doctest setup, a code template), which the text takes for
    one (and then for a second definition of a name)."""
    top = [st.name for st in tree.body if isinstance(st, ast.ClassDef)]
    assert set(from_tree) == set(top), path
    for name in from_text.keys() - set(top):
        assert _in_a_string(tree, name), (path, name)
    for name in top:
        if from_tree[name] != from_text.get(name):
            assert from_text.get(name) is None and top.count(name) == 1 and \
                _in_a_string(tree, name), (path, name)


def _in_a_string(tree, name: str) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and
               f"class {name}" in n.value for n in ast.walk(tree))


@pytest.mark.parametrize("path,source", _sources(), ids=lambda x: os.path.basename(x)
                         if isinstance(x, str) and x.endswith(".py") else "")
def test_same_summary_from_the_whole_tree(path, source):
    _summaries_agree(path, source)


@pytest.mark.slow  # CI's full suite
def test_same_summary_from_the_whole_tree_on_installed_sources():
    files = installed_sources()
    assert len(files) > 300
    for path, source in files:
        _summaries_agree(path, source)


KERNEL = """\
import jax
from jax.experimental import pallas as pl


def kernel(x_ref, o_ref):
    o_ref[...] = x_ref * 2


def run(x):
    return pl.pallas_call(kernel, out_shape=x)(x)
"""


def _parses_of(monkeypatch, text: str) -> list:
    """Every ``ast.parse`` of exactly ``text`` (the summary's cut texts are other texts)."""
    calls = []
    real = ast.parse

    def counting(source, *args, **kwargs):
        if source == text:
            calls.append(1)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    return calls


def test_a_checked_file_is_parsed_once(tmp_path, monkeypatch, capsys):
    (tmp_path / "k.py").write_text(KERNEL)
    monkeypatch.setenv("REFLINT_ISOLATE", "0")
    monkeypatch.setattr(gate, "_KEPT", {})
    monkeypatch.setattr(gate, "_KEPT_CHARS", [0])
    calls = _parses_of(monkeypatch, KERNEL)
    assert cli.main(["check", "--no-cache", str(tmp_path / "k.py")]) == 1
    assert "k.py:6:" in capsys.readouterr().out  # the REF007 on `x_ref * 2`
    assert len(calls) == 1
    assert gate._KEPT == {}  # taken by the check


def test_same_findings_without_the_kept_tree(tmp_path, monkeypatch, capsys):
    (tmp_path / "k.py").write_text(KERNEL)
    monkeypatch.setenv("REFLINT_ISOLATE", "0")
    cli.main(["check", "--no-cache", str(tmp_path / "k.py")])
    shared = capsys.readouterr().out
    monkeypatch.setattr(gate, "KEEP_MAX_CHARS", 0)  # nothing kept: the check parses
    calls = _parses_of(monkeypatch, KERNEL)
    cli.main(["check", "--no-cache", str(tmp_path / "k.py")])
    assert capsys.readouterr().out == shared
    assert len(calls) == 2  # the summary's and the check's


def test_kept_trees_are_bounded(monkeypatch):
    monkeypatch.setattr(gate, "_KEPT", {})
    monkeypatch.setattr(gate, "_KEPT_CHARS", [0])
    monkeypatch.setattr(gate, "KEEP_MAX_CHARS", 30)
    a, b = "x = 1\n" * 4, "y = 2\n" * 4
    gate.keep(a, ast.parse(a))
    gate.keep(b, ast.parse(b))  # 48 characters in all: over the bound, not kept
    assert list(gate._KEPT) == [a]
    assert gate.take(a) is not None and gate._KEPT == {}
    assert _dump(gate.take(b)) == _dump(ast.parse(b))  # parsed then


def test_no_whole_parse_without_room_to_keep_it(tmp_path, monkeypatch):
    """Past the bound the summary cuts the text as before: parsing the whole module would be
    a parse more, its tree not kept for the check."""
    from reflint import project

    (tmp_path / "k.py").write_text(KERNEL)
    monkeypatch.setattr(gate, "_KEPT", {})
    monkeypatch.setattr(gate, "_KEPT_CHARS", [0])
    monkeypatch.setattr(gate, "KEEP_MAX_CHARS", len(KERNEL) - 1)
    calls = []
    real = gate.parse
    monkeypatch.setattr(gate, "parse", lambda text: calls.append(text) or real(text))
    project.Project.build([str(tmp_path / "k.py")], share_trees=True)
    assert calls == [] and gate._KEPT == {}
    monkeypatch.setattr(gate, "KEEP_MAX_CHARS", len(KERNEL))
    project.Project.build([str(tmp_path / "k.py")], share_trees=True)
    assert calls == [KERNEL] and list(gate._KEPT) == [KERNEL]


# -- the gate's verdict, reached in the summary phase ------------------------------------------

# The textual pre-filter keeps it (a transform, a store method); the gate rules it out (the
# append is outside any trace).
TRACED_ONLY = """\
import jax

out = []


@jax.jit
def f(x):
    return x + 1


def g(x):
    out.append(x)
"""


def _counting(monkeypatch, module, name: str) -> list:
    calls = []
    real = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_a_gated_file_is_parsed_and_asked_once(tmp_path, monkeypatch, capsys):
    """A file the textual pre-filter keeps and the gate rules out: the summary phase parses
    it whole and asks the gate; the check takes that verdict (no parse, no second walk)."""
    from reflint import engine

    (tmp_path / "t.py").write_text(TRACED_ONLY)
    (tmp_path / "k.py").write_text(KERNEL)
    monkeypatch.setenv("REFLINT_ISOLATE", "0")
    monkeypatch.setattr(gate, "_DECIDED", {})
    monkeypatch.setattr(gate, "_KEPT", {})
    monkeypatch.setattr(gate, "_KEPT_CHARS", [0])
    parses = _parses_of(monkeypatch, TRACED_ONLY)
    asked = _counting(monkeypatch, engine, "gate_verdict")
    from reflint._lazy import lazy

    proxy = lazy("reflint.gate")  # the engine's name for the module (a copy of its namespace)
    assert proxy.take is gate.take
    taken = _counting(monkeypatch, proxy, "take")  # the check's tree
    assert cli.main(["check", "--no-cache", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "k.py:6:" in out and "t.py" not in out
    assert len(parses) == 1
    assert asked.count(TRACED_ONLY) == 1 and asked.count(KERNEL) == 1
    assert taken == [KERNEL]  # t.py was decided without its tree
    assert gate._KEPT == {}  # the kernel's tree taken by the check; t.py's never kept


def test_the_summary_phase_verdicts_change_no_finding(tmp_path, monkeypatch, capsys):
    """Every fixture, checked as one project, with and without the summary phase's verdicts
    (then the check asks the gate itself): the same findings."""
    from reflint import engine

    monkeypatch.setenv("REFLINT_ISOLATE", "0")
    fixtures = os.path.join(ROOT, "tests", "fixtures")
    cli.main(["check", "--no-cache", "-j", "1", "--exit-zero", fixtures])
    decided = capsys.readouterr().out
    monkeypatch.setattr(engine.SummaryPhaseGate, "wants", lambda self, text, path: False)
    cli.main(["check", "--no-cache", "-j", "1", "--exit-zero", fixtures])
    assert capsys.readouterr().out == decided
    assert decided.count("REF0") > 300


def test_a_verdict_is_not_taken_for_another_text(tmp_path, monkeypatch):
    """The verdict is the summary phase's on the text it read: a file changed since (an
    editor saving between the phases) is asked again."""
    from reflint import engine
    from reflint.settings import Settings

    path = str(tmp_path / "k.py")
    monkeypatch.setattr(gate, "_DECIDED", {})
    nothing = gate.Verdict()  # rules every rule out
    gate.remember(path, hash(TRACED_ONLY), nothing)
    assert gate.recall(path, TRACED_ONLY) is nothing
    assert gate.recall(path, KERNEL) is None
    assert [d.code for d in engine.lint_source(KERNEL, path, Settings()).diagnostics] == \
        ["REF007"]
    gate.remember(path, hash(KERNEL), nothing)  # a wrong verdict for this text: believed
    assert engine.lint_source(KERNEL, path, Settings()).stage == "gated"


def test_verdicts_reached_in_workers_reach_the_check(tmp_path, monkeypatch):
    """``-j 2``: the summary phase runs in worker processes; their verdicts come back with
    the summaries and are remembered here, where the check's workers are forked."""
    from reflint import engine, project
    from reflint.settings import Settings

    paths = []
    for i in range(12):
        p = tmp_path / f"m{i}.py"
        p.write_text(TRACED_ONLY if i % 2 else f"x{i} = {i}\n")
        paths.append(str(p))
    monkeypatch.setattr(gate, "_DECIDED", {})
    s = Settings()
    project.Project.build(paths, jobs=2, decide=engine.SummaryPhaseGate({p: s for p in paths}))
    assert sorted(gate._DECIDED) == sorted(paths[1::2])  # the pre-filter's candidates
    assert not any(v for _, v in gate._DECIDED.values())  # all ruled out
    assert project._DECIDE is None


HEADERS_ONLY = """\
import os
from lib import a, b
from lib import core

try:
    from fast import c
except ImportError:
    c = None

core.table[a] = b  # an item of core's: core is still the module
del os  # a comment after the del
x, *rest = 1, 2


def f(y):
    return a(y)
"""


def test_a_module_read_from_its_whole_tree():
    """A module spelling neither an API nor a ref, summarized from the tree the check parses
    anyway (``parsed``) rather than from its cut headers: every top-level import, also under
    ``try``, and a name rebound only by a real binding."""
    tree = ast.parse(HEADERS_ONLY)
    s = summary.summarize(HEADERS_ONLY, "m.py", "m", whole=lambda: tree, parsed=True)
    assert s.aliases == {"a": "lib.a", "b": "lib.b", "core": "lib.core"}
    assert list(s.functions) == ["f"] and not s.complete


def test_classes_read_from_the_whole_tree():
    """A summary with the module's whole tree reads its class statements there: a class
    spelled at column 0 inside a string is none (read from the headers, it is one)."""
    source = textwrap.dedent('''\
        import flax.nnx as nnx

        SETUP = """
        class Fake(Base):
            pass
        """


        class Model(nnx.Module):
            pass
        ''')
    tree = ast.parse(source)
    s = summary.summarize(source, "m.py", "m", whole=lambda: tree, parsed=True)
    assert s.classes == {"Model": ("flax.nnx.Module",)}
    assert summary.summarize(source, "m.py", "m").classes == {
        "Fake": (None,), "Model": ("flax.nnx.Module",)}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="Python 3.12's generic classes")
def test_generic_classes_are_read_from_the_text_too():
    """``class Box[T](nnx.Module):`` (PEP 695) is a class header for the text as for the
    tree: its bases, and a class deriving from it, are named either way (JAX 0.12 writes
    ``class GenericSharedMemory[...]`` and ``class SharedMemory(GenericSharedMemory[...])``)."""
    source = textwrap.dedent('''\
        import flax.nnx as nnx


        class Box[T](nnx.Module):
            pass


        class Crate(Box[int]):
            pass
        ''')
    want = {"Box": ("flax.nnx.Module",), "Crate": ("m.Box",)}
    assert summary.summarize(source, "m.py", "m").classes == want
    tree = ast.parse(source)
    assert summary.summarize(source, "m.py", "m", whole=lambda: tree,
                             parsed=True).classes == want


def test_whole_tree_summaries_of_installed_modules():
    """Over the installed sources: a module without an API's or a ref's name summarized from
    its whole tree has the functions, classes and (but for imports the cut headers cannot
    see) the aliases of the one summarized from its cut headers."""
    compared = 0
    for path, source in installed_sources():
        if summary.has_api_words(source) or summary.has_ref_words(source):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        cut = summary.summarize(source, path, "m")
        whole = summary.summarize(source, path, "m", whole=lambda: tree, parsed=True)
        compared += 1
        assert whole.functions == cut.functions, path
        _same_classes(whole.classes, cut.classes, tree, path)
        assert (whole.forwards, whole.uses, whole.calls) == (cut.forwards, cut.uses, cut.calls)
        differ = {k for k in cut.aliases.keys() | whole.aliases.keys()
                  if cut.aliases.get(k) != whole.aliases.get(k)}
        assert differ <= _nested_bindings(tree), (path, differ - _nested_bindings(tree))
    assert compared > 300


def _nested_bindings(tree) -> set:
    """Names a module's cut headers may get wrong: imported or bound under a top-level
    ``if``/``try``, or deleted by a ``del`` (whose line may end in a comment)."""
    out = set()
    for st in tree.body:
        nested = isinstance(st, (ast.If, ast.Try))
        for n in ast.walk(st) if nested else [st]:
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.add(n.id)
            elif isinstance(n, ast.Delete):
                out.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) and nested:
                out.add(n.name)
    return out
