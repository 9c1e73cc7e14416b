"""Every fixture's `# expect:` lines are exactly the diagnostics reported."""

import os

import pytest

from conftest import (FIXTURES, expectations, fixture_files, fixture_settings,
                      strip_expect_comments)
from reflint.codes import CODES
from reflint.engine import fix_source, lint_source

FILES = fixture_files()


def pending_codes(expected) -> set:
    """Codes a fixture expects that no rule of this checkout reports yet (a rule being written
    on another branch, e.g. REF016's fixtures for Flax NNX): the fixture is skipped."""
    return {code for _, code in expected} - set(CODES)


def rel(p):
    return os.path.relpath(p, FIXTURES)


@pytest.mark.parametrize("path", FILES, ids=[rel(p) for p in FILES])
def test_fixture_expectations(path):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    expected = expectations(source)
    if pending_codes(expected):
        pytest.skip(f"expects {', '.join(sorted(pending_codes(expected)))}: no rule yet")
    result = lint_source(source, path, fixture_settings(source))
    reported = {(d.line, d.code) for d in result.diagnostics}
    missing = expected - reported
    extra = reported - expected
    details = "\n".join(f"  {d.line}:{d.column} {d.code} {d.message}" for d in result.diagnostics)
    assert not missing and not extra, (
        f"missing={sorted(missing)} extra={sorted(extra)}\nreported:\n{details}")


@pytest.mark.parametrize("path", FILES, ids=[rel(p) for p in FILES])
def test_prefilter_is_conservative(path):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    on = lint_source(source, path, fixture_settings(source), use_prefilter=True).diagnostics
    off = lint_source(source, path, fixture_settings(source), use_prefilter=False).diagnostics
    assert on == off


FIX_PAIRS = [p for p in FILES if os.path.exists(p[:-3] + ".fixed.py")
             and not p.endswith(".fixed.py")]


@pytest.mark.parametrize("path", FIX_PAIRS, ids=[rel(p) for p in FIX_PAIRS])
def test_fix_produces_twin(path):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    with open(path[:-3] + ".fixed.py", encoding="utf-8") as fh:
        twin = fh.read()
    settings = fixture_settings(source)
    outcome = fix_source(source, path, settings)
    assert outcome.error is None
    assert outcome.fixed > 0
    assert strip_expect_comments(outcome.source) == twin
    again = fix_source(outcome.source, path, settings)
    assert again.fixed == 0 and again.source == outcome.source


UNSAFE_FIX_PAIRS = [p for p in FILES if os.path.exists(p[:-3] + ".unsafe-fixed.py")
                    and not p.endswith("fixed.py")]


@pytest.mark.parametrize("path", UNSAFE_FIX_PAIRS, ids=[rel(p) for p in UNSAFE_FIX_PAIRS])
def test_unsafe_fix_produces_twin(path):
    """`X.unsafe-fixed.py` is X.py after `--fix --unsafe-fixes`; plain `--fix` leaves the
    unsafe fixes out."""
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    with open(path[:-3] + ".unsafe-fixed.py", encoding="utf-8") as fh:
        twin = fh.read()
    settings = fixture_settings(source, unsafe_fixes=True)
    outcome = fix_source(source, path, settings)
    assert outcome.error is None
    assert outcome.fixed > 0
    assert strip_expect_comments(outcome.source) == twin
    again = fix_source(outcome.source, path, settings)
    assert again.fixed == 0 and again.source == outcome.source
    if not os.path.exists(path[:-3] + ".fixed.py"):
        assert fix_source(source, path, fixture_settings(source)).fixed == 0
