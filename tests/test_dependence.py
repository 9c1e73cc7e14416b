"""The dependence on differentiated inputs (REF008), evaluated by the analysis' evaluator
(``ModuleAnalysis.dependence``): it leaves the module's facts as they were, evaluates a helper
once per context of its calls, and follows calls as deep as ``MAX_DEPENDENCE_DEPTH``.
Fixtures: tests/fixtures/differentiated_value_written_to_ref/ (``helper_contexts.py``,
``ok_helper_contexts.py`` for the contexts)."""

from __future__ import annotations

import glob
import os

import libcst as cst
import pytest

from reflint import analysis as an

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = sorted(glob.glob(os.path.join(HERE, "fixtures", "differentiated_value_written_to_ref",
                                         "*.py")) +
                  glob.glob(os.path.join(HERE, "fixtures", "grad_with_respect_to_ref", "*.py")))


def _analysis(source: str) -> an.ModuleAnalysis:
    return an.ModuleAnalysis(cst.parse_module(source))


def _facts(a: an.ModuleAnalysis):
    """Every fact the evaluation records, by identity."""
    def ids(v):
        if isinstance(v, dict):
            return tuple(sorted((repr(k), id(x)) for k, x in v.items()))
        if isinstance(v, (list, tuple)):
            return tuple(id(x) for x in v)
        if isinstance(v, set):
            return tuple(sorted(map(repr, v)))
        return id(v)

    out = {k: ids(v) for k, v in vars(a).items() if k != "_cache"}
    for o in [a.module_info, *a.functions.values(), *a.classes.values()]:
        out[id(o)] = {k: ids(v) for k, v in vars(o).items()}
    return out


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_dependence_leaves_the_facts_unchanged(path):
    with open(path, encoding="utf-8") as fh:
        a = _analysis(fh.read())
    before = _facts(a)
    d = a.differentiation()
    assert _facts(a) == before
    assert a._eval.__func__ is an.ModuleAnalysis._eval  # the evaluation without dependence
    name = os.path.basename(path)
    if "differentiated_value" in path and not name.startswith("ok_") and "fixed" not in name:
        assert d.writes


def _chain(depth: int) -> str:
    """loss -> h1 -> ... -> h<depth>, which writes its dependent argument into a ref."""
    lines = ["import jax", "", "log_ref = jax.new_ref(0.0)", ""]
    for i in range(1, depth + 1):
        body = f"    h{i + 1}(v)" if i < depth else "    log_ref[...] = v"
        lines += [f"def h{i}(v):", body, ""]
    lines += ["def loss(x):", "    h1(x * 2.0)", "    return x", "", "jax.grad(loss)(1.0)", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("depth,found", [(1, True), (an.MAX_DEPENDENCE_DEPTH - 1, True),
                                         (an.MAX_DEPENDENCE_DEPTH, False)])
def test_calls_are_followed_to_the_depth_limit(depth, found):
    """The root and up to MAX_DEPENDENCE_DEPTH - 1 nested helpers (as the statement walker
    this replaced did)."""
    assert bool(_analysis(_chain(depth)).differentiation().writes) is found


def test_one_helper_two_contexts():
    """A helper called with a dependent value and an outside ref, then with a constant and a
    ref created inside: reported for the first call only, with the first call's inputs."""
    source = (
        "import jax\n\nlog_ref = jax.new_ref(0.0)\n\n"
        "def store(ref, v):\n    ref[...] = v\n\n"
        "def loss(x, y):\n    store(log_ref, x * 2.0)\n    tmp = jax.new_ref(0.0)\n"
        "    store(tmp, y)\n    return x + tmp[...]\n\n"
        "jax.grad(loss, argnums=(0, 1))(1.0, 2.0)\n")
    d = _analysis(source).differentiation()
    assert [(w.access.func.name, w.inputs, w.ref_kind) for w in d.writes] == \
        [("store", frozenset({"x"}), "closed-over")]
