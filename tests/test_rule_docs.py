"""Rules document themselves; their examples run as tests; docs/rules is generated."""

import os

import pytest

from conftest import ROOT
from reflint.codes import CODES
from reflint.docs import REQUIRED_SECTIONS, render_index, render_rule
from reflint.engine import lint_source
from reflint.rule import all_rules
from reflint.settings import Settings

RULES = all_rules()


def test_every_rule_has_a_stable_code_and_name():
    assert RULES, "no rules registered"
    for r in RULES:
        assert CODES[r.code] == r.name
    assert len({r.code for r in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_doc_sections_present(rule):
    sections = rule.doc_sections()
    missing = [s for s in REQUIRED_SECTIONS if not sections.get(s)]
    assert not missing, f"{rule.code} docstring lacks sections {missing}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_docstring_examples(rule):
    bad, good = rule.examples()
    assert bad and good
    codes_bad = [d.code for d in lint_source(bad, "bad.py", Settings()).diagnostics]
    codes_good = [d.code for d in lint_source(good, "good.py", Settings()).diagnostics]
    assert rule.code in codes_bad, f"'Example' of {rule.code} does not trigger it"
    assert rule.code not in codes_good, f"'Use instead' of {rule.code} triggers it"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_generated_docs_are_current(rule):
    path = os.path.join(ROOT, "docs", "rules", f"{rule.code}.md")
    assert os.path.exists(path), "run: python -m reflint.docs docs/rules"
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == render_rule(rule), "stale docs: run python -m reflint.docs docs/rules"


def test_rules_index_is_current():
    with open(os.path.join(ROOT, "docs", "rules", "README.md"), encoding="utf-8") as fh:
        assert fh.read() == render_index()
