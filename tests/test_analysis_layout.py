"""The shape of the shared analysis (issue 23): facts recorded through one sink, rules that ask
the analysis only through its public names, role tables that cannot lose a role, and parts
small enough to read."""

import ast
import pathlib

import libcst as cst
import pytest

from reflint import api
from reflint.analysis import ModuleAnalysis
from reflint.analysis import facts as facts_module
from reflint.analysis.facts import DiscardFacts, Facts

ROOT = pathlib.Path(__file__).resolve().parents[1]
ANALYSIS = sorted((ROOT / "reflint" / "analysis").glob("*.py"))
RULES = sorted((ROOT / "rules").glob("*.py"))


def _recorded_fact_types() -> set:
    """The fact classes the evaluator records: ``self._sink.add(Kind(...))`` or a local
    variable holding one."""
    kinds = set()
    for path in ANALYSIS:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "add" and isinstance(node.func.value, ast.Attribute) and \
                    node.func.value.attr == "_sink":
                arg = node.args[0]
                if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name):
                    kinds.add(arg.func.id)
    return kinds


def test_every_recorded_fact_has_a_list_in_the_sink():
    recorded = _recorded_fact_types()
    assert len(recorded) >= 15
    listed = {k.__name__ for k in Facts.KINDS}
    assert recorded <= listed, recorded - listed
    for kind in Facts.KINDS:
        assert getattr(facts_module, kind.__name__) is kind


def test_the_analysis_reads_each_list_of_its_sink():
    a = ModuleAnalysis(cst.parse_module(
        "import jax\nr = jax.new_ref(1.0)\n@jax.jit\ndef f(x):\n    r[...] = x\n    return r\n"))
    assert a.creations and a.returns and a.accesses
    for name in Facts.KINDS.values():
        assert getattr(a, name) is getattr(a.facts, name)


def test_discarding_sink_keeps_nothing():
    fact = facts_module.PlainCall(None, None, None, {})
    kept, dropped = Facts(), DiscardFacts()
    kept.add(fact)
    dropped.add(fact)
    assert kept.plain_calls == [fact]
    assert all(getattr(dropped, n) == [] for n in Facts.KINDS.values())


def _private_analysis_names(path: pathlib.Path) -> list:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and \
                not node.attr.startswith("__") and isinstance(node.value, ast.Name) and \
                node.value.id in ("analysis", "a"):
            out.append((node.lineno, node.attr))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "reflint.analysis"):
            out += [(node.lineno, n.name) for n in node.names if n.name.startswith("_")]
    return out


@pytest.mark.parametrize("path", RULES, ids=lambda p: p.name)
def test_rules_use_only_public_names_of_the_analysis(path):
    assert _private_analysis_names(path) == []


def test_private_name_check_sees_a_private_access(tmp_path):
    p = tmp_path / "r.py"
    p.write_text("from reflint.analysis import _op_text\n"
                 "def check(analysis):\n    return analysis._declarations(None)\n")
    assert _private_analysis_names(p) == [(1, "_op_text"), (3, "_declarations")]


def _too_long(path: pathlib.Path) -> list:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        size = getattr(node, "end_lineno", 0) - getattr(node, "lineno", 0) + 1
        if isinstance(node, ast.ClassDef) and size > 800:
            out.append((node.name, size))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and size > 120:
            out.append((node.name, size))
    return out


@pytest.mark.parametrize("path", ANALYSIS + RULES, ids=lambda p: p.name)
def test_no_class_over_800_lines_no_function_over_120(path):
    assert _too_long(path) == []


@pytest.mark.parametrize("prop", ["maps", "no_ref_outputs", "freeze_error", "remat",
                                  "differentiates"])
def test_role_tables_keep_every_role(prop):
    roles = api.roles_where(prop)
    ordered = api.in_role_order(roles)
    assert set(ordered) == set(roles) and len(ordered) == len(roles)
    listed = [r for r in ordered if r in api.ROLE_ORDER]
    assert listed == [r for r in api.ROLE_ORDER if r in roles]  # preferred ones first
    assert ordered[:len(listed)] == tuple(listed)


def test_a_role_missing_from_the_order_is_kept_last():
    assert api.in_role_order([api.Role.GRAD, api.Role.VMAP, api.Role.JIT]) == (
        api.Role.JIT, api.Role.VMAP, api.Role.GRAD)
