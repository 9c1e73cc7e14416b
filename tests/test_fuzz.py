"""Fuzzing as a test (issue 19): generated programs never crash reflint, never get an internal
error, always get the same output, the same with one job or two and with or without the
cache, and ``--fix`` output parses and re-checks with nothing fixable left.

CI runs a bounded number of examples (this file takes well under a minute); the long
campaign is ``python bench/fuzz.py --programs 10000`` (docs/guarantees.md)."""

import glob
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_programs
from reflint.engine import lint_source
from reflint.settings import Settings

DATA = os.path.join(os.path.dirname(__file__), "data", "fuzz")
BOUNDED = settings(max_examples=40, deadline=None, derandomize=True,
                   suppress_health_check=list(HealthCheck))


@BOUNDED
@given(st.integers(0, 2 ** 32 - 1))
def test_generated_jax_programs_keep_every_property(seed):
    source = fuzz_programs.program(random.Random(seed))
    if not fuzz_programs.valid(source):
        return
    assert fuzz_programs.check_properties(source) == [], source


def test_jobs_and_cache_agree_on_generated_programs():
    rng = random.Random(19)
    sources = []
    while len(sources) < 16:
        src = fuzz_programs.program(rng)
        if fuzz_programs.valid(src):
            sources.append(src)
    assert fuzz_programs.cli_agreement(sources) == []


try:
    import hypothesmith
except ImportError:  # pragma: no cover - in the test extras; the other tests still run
    hypothesmith = None


def test_hypothesmith_is_installed():
    if hypothesmith is None:
        pytest.skip("hypothesmith is not installed (pip install -e '.[test]')")


if hypothesmith is not None:
    @settings(max_examples=30, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(hypothesmith.from_grammar())
    def test_arbitrary_valid_python_never_crashes(source):
        # Any program CPython accepts: no exception, no internal error, no REF900, the same
        # twice.
        if not fuzz_programs.valid(source):
            return
        first = lint_source(source, "any.py", Settings()).diagnostics
        assert not [d for d in first if d.code in ("REF900", "REF903", "REF904")], source
        second = lint_source(source, "any.py", Settings()).diagnostics
        assert [(d, d.message) for d in first] == [(d, d.message) for d in second]

    @settings(max_examples=20, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(hypothesmith.from_node())
    def test_arbitrary_syntax_trees_never_crash(source):
        if not fuzz_programs.valid(source):
            return
        diags = lint_source(source, "any.py", Settings()).diagnostics
        assert not [d for d in diags if d.code in ("REF903", "REF904")], source


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(DATA, "*.py"))),
                         ids=os.path.basename)
def test_campaign_regressions(path):
    # Programs on which the campaign once found a bug (each fixed).
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    for _ in range(3):  # several runs: one bug was an order that varied between runs
        assert fuzz_programs.check_properties(source) == []
