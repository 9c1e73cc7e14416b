"""The analysis' fixpoint (reflint.analysis.core ``_run``): its first round stops early only
where a second would read exactly what the first read. ``EARLY_STOP`` off runs every round as
before; the findings must be the same either way."""

from __future__ import annotations

import os
import pytest

from reflint.analysis import ModuleAnalysis, core
from reflint.engine import lint_source
from reflint.settings import Settings

from conftest import fixture_files, installed_sources

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = Settings()

HEADER = """\
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
"""

KERNEL = """
def kernel(x_ref, g_ref, o_ref):
    o_ref[...] = x_ref[...] * g_ref
"""

# The launch runs in module code, before the queued kernel is evaluated: the first round reads
# the kernel's parameters as refs already.
LAUNCH_AT_MODULE_LEVEL = HEADER + KERNEL + """
out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32))(x, g)
"""

# The launch is in a function defined after the kernel: the first round evaluates the kernel
# after the other functions (its name is given to `pallas_call` in the text), so the launch
# has made its parameters refs when it is evaluated.
LAUNCH_IN_A_LATER_WRAPPER = HEADER + KERNEL + """
def launch(x, g):
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, g)
"""

# The same through a name the text does not show given to `pallas_call`: the kernel is
# evaluated before its launch, so only a second round finds the missing `[...]` on `g_ref`.
LAUNCH_THROUGH_ANOTHER_NAME = HEADER + KERNEL + """
def launch(x, g):
    body = kernel
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, g)
"""


def _findings(source: str, path: str = "t.py") -> list:
    result = lint_source(source, path, ALL)
    return [(d.code, d.line, d.column, d.end_line, d.end_column, d.message)
            for d in result.diagnostics]


def _rounds(source: str) -> int:
    from reflint.cstbridge import parse_module

    return ModuleAnalysis(parse_module(source)).rounds


@pytest.fixture
def no_early_stop(monkeypatch):
    monkeypatch.setattr(core, "EARLY_STOP", False)


def test_first_round_is_the_last_when_it_learnt_nothing():
    assert _rounds(LAUNCH_AT_MODULE_LEVEL) == 1
    assert [f[0] for f in _findings(LAUNCH_AT_MODULE_LEVEL)] == ["REF007"]


def test_every_round_runs_without_the_early_stop(no_early_stop):
    assert _rounds(LAUNCH_AT_MODULE_LEVEL) == 2
    assert [f[0] for f in _findings(LAUNCH_AT_MODULE_LEVEL)] == ["REF007"]


def test_kernel_launched_by_a_later_wrapper_takes_one_round():
    assert _rounds(LAUNCH_IN_A_LATER_WRAPPER) == 1
    assert [f[0] for f in _findings(LAUNCH_IN_A_LATER_WRAPPER)] == ["REF007"]


def test_kernel_evaluated_before_its_launch_takes_a_second_round():
    """Its signature is empty after the first round too, but the kernel's parameters were read
    before the launch made them refs: stopping there would lose the finding."""
    assert _rounds(LAUNCH_THROUGH_ANOTHER_NAME) == 2
    assert [f[0] for f in _findings(LAUNCH_THROUGH_ANOTHER_NAME)] == ["REF007"]


def test_a_star_import_read_late_takes_a_second_round():
    """Builtins' names read before a star import may be the import's in the next round."""
    source = LAUNCH_AT_MODULE_LEVEL + "from helpers import *\n"
    assert _rounds(source) == 2


def _sources():
    out = []
    for path in fixture_files():
        out.append(path)
    for root, _, files in os.walk(os.path.join(ROOT, "examples")):
        out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
    return sorted(out)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: os.path.relpath(p, ROOT))
def test_same_findings_with_and_without_the_early_stop(path, monkeypatch):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    early = _findings(source, path)
    monkeypatch.setattr(core, "EARLY_STOP", False)
    assert _findings(source, path) == early


@pytest.mark.slow  # CI's full suite
def test_same_findings_with_and_without_the_early_stop_on_installed_sources(monkeypatch):
    """The installed jax and flax files that spell a Pallas or Ref API (the analysed ones)."""
    files = [(p, s) for p, s in installed_sources()
             if "pallas_call" in s or "new_ref" in s or "run_state" in s]
    assert len(files) >= 40
    for path, source in files:
        monkeypatch.setattr(core, "EARLY_STOP", True)
        early = _findings(source, path)
        monkeypatch.setattr(core, "EARLY_STOP", False)
        assert _findings(source, path) == early, path
