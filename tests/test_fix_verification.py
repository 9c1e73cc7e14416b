"""Every fix is verified by re-linting the fixed text (reflint.fixcheck): no finding added, no
finding hidden, the fixed one gone; else the fix is not applied and the reason is given.

The three wrong "safe" fixes of issue 28, then the property over every fixture (safe and
unsafe fixes) and, behind the ``slow`` marker, over the planted-bug mutants of the Pallas
measure: the findings after fixing are exactly those before, minus one per fix applied."""

from __future__ import annotations

import os
import textwrap
from collections import Counter

import pytest

from conftest import fixture_files, fixture_settings
from reflint import fixcheck
from reflint.cli import main
from reflint.engine import fix_source, lint_source
from reflint.settings import Settings

ALL = Settings()


def fixed(source, settings=ALL):
    return fix_source(textwrap.dedent(source), "t.py", settings)


def findings(source, settings=ALL):
    return [(d.line, d.code) for d in lint_source(source, "t.py", settings).diagnostics]


# -- the three wrong fixes of the issue ------------------------------------------------------

def test_read_fix_of_a_parenthesized_conditional_reads_the_whole_expression():
    out = fixed("""\
        import jax
        import jax.numpy as jnp

        a_ref = jax.new_ref(jnp.zeros(3))
        b_ref = jax.new_ref(jnp.ones(3))
        use_a = True
        c = (a_ref if use_a else b_ref) * 2
        d = ( a_ref if use_a else b_ref ) + 1
        """)
    assert out.fixed == 2, out.rejected
    assert "c = (a_ref if use_a else b_ref)[...] * 2" in out.source
    assert "d = ( a_ref if use_a else b_ref )[...] + 1" in out.source
    assert findings(out.source) == []


def test_read_fix_of_a_conditional_split_over_lines_wraps_it():
    out = fixed("""\
        import jax
        import jax.numpy as jnp

        a_ref = jax.new_ref(jnp.zeros(3))
        b_ref = jax.new_ref(jnp.ones(3))
        c = jnp.sin((a_ref if True else b_ref
                     ))
        """)
    assert out.fixed == 1, out.rejected
    assert "((a_ref if True else b_ref)[...]" in out.source
    assert findings(out.source) == []


KERNEL = """\
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl


    def kernel(x_ref, o_ref):
        o_ref = x_ref[...] + 1
        o_ref = o_ref * 2


    def kernel2(x_ref, o_ref):
        o_ref = x_ref[...] + o_ref.shape[0]


    def run(x):
        pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
        return pl.pallas_call(kernel2, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    """


def test_output_ref_fix_not_offered_when_the_value_reads_a_rebound_name():
    diags = lint_source(textwrap.dedent(KERNEL), "k.py", ALL).diagnostics
    by_line = {d.line: d for d in diags if d.code == "REF019"}
    assert set(by_line) == {7, 8, 12}
    assert by_line[8].fix is None  # `o_ref = o_ref * 2` reads the Array bound on line 7
    assert by_line[12].fix is not None  # reads the ref's shape: the ref itself
    out = fix_source(textwrap.dedent(KERNEL), "k.py", ALL)
    assert out.fixed == 1
    assert "o_ref[...] = x_ref[...] + o_ref.shape[0]" in out.source
    assert "    o_ref = o_ref * 2\n" in out.source


ITEM_ASSIGNMENT = """\
    import jax.numpy as jnp


    def f(n):
        x = jnp.zeros(4)
        x[0] = 1
        if n:
            x[1] = 2
        print(x)
        x[2:4] = (x[2], 3)
        return x
    """


def test_a_fix_that_would_hide_later_findings_is_not_applied():
    src = textwrap.dedent(ITEM_ASSIGNMENT)
    assert [c for _, c in findings(src)] == ["REF013"] * 3
    out = fix_source(src, "t.py", ALL)
    assert out.fixed == 0 and out.source == src
    assert len(out.remaining) == 3
    assert out.rejected == [
        "REF013 fix on line 6 not applied: it would hide REF013 on lines 8, 10 (the code "
        "would still fail there; fix those first)",
        "REF013 fix on line 8 not applied: it would hide REF013 on line 10 (the code would "
        "still fail there; fix those first)"]


def test_fixes_that_are_right_together_are_applied_together():
    out = fixed("""\
        import jax.numpy as jnp


        def f():
            x = jnp.zeros(4)
            x[0] = 1
            x[1] = 2
            return x
        """)
    assert out.fixed == 2 and out.rejected == []
    assert "x = x.at[0].set(1)" in out.source and "x = x.at[1].set(2)" in out.source


def test_the_cli_shows_why_a_fix_was_not_applied(tmp_path, capsys):
    p = tmp_path / "t.py"
    p.write_text(textwrap.dedent(ITEM_ASSIGNMENT))
    assert main(["check", "--no-cache", "--fix", str(p)]) == 1
    err = capsys.readouterr().err
    assert f"{p}: REF013 fix on line 6 not applied: it would hide REF013 on lines 8, 10" in err
    assert p.read_text() == textwrap.dedent(ITEM_ASSIGNMENT)
    assert main(["check", "--no-cache", "--diff", str(p)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "not applied" in captured.err


@pytest.mark.parametrize("before,after,fixed_,expected", [
    ([("A", 1)], [], [("A", 1)], None),
    ([("A", 1)], [("A", 1)], [("A", 1)], "the A finding on line 1 is still reported"),
    ([("A", 1)], [("B", 1)], [("A", 1)], "it would add B on line 1"),
    ([("A", 1), ("A", 3)], [], [("A", 1)], "it would hide A on line 3"),
])
def test_compare(before, after, fixed_, expected):
    class D:
        def __init__(self, code, line):
            self.code, self.line = code, line

    got = fixcheck.compare([D(*k) for k in before], [D(*k) for k in after],
                           [D(*k) for k in fixed_])
    assert (got is None) if expected is None else got.startswith(expected)


# -- the property, over real programs ---------------------------------------------------------

def _check_property(source, path, settings):
    before = Counter((d.code, d.line) for d in lint_source(source, path, settings).diagnostics)
    out = fix_source(source, path, settings)
    after = Counter((d.code, d.line) for d in lint_source(out.source, path,
                                                            settings).diagnostics)
    removed = before.copy()
    removed.subtract(after)
    added = {k: -v for k, v in removed.items() if v < 0}
    assert not added, f"{path}: fixes added findings {added}"
    assert sum(removed.values()) == out.fixed, \
        f"{path}: {out.fixed} fixes applied but {sum(removed.values())} findings gone"
    return out


FILES = [p for p in fixture_files() if not p.endswith("fixed.py")]


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_every_fixture_fix_is_verified(unsafe):
    applied = 0
    for path in FILES:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        out = _check_property(source, path, fixture_settings(source, unsafe_fixes=unsafe))
        applied += out.fixed
    assert applied > 20  # the fixtures do exercise fixes


@pytest.mark.slow
def test_every_fix_of_the_pallas_planted_mutants_is_verified():
    import pallas_planted

    files = pallas_planted.installed_kernel_files()
    plants = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            plants += pallas_planted.find_plants(f, fh.read())
    assert len(plants) >= 40
    settings = Settings(unsafe_fixes=True)
    applied = sum(_check_property(p.source, p.path, settings).fixed for p in plants)
    assert applied >= len(plants) * 0.9
