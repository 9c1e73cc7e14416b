"""reflint rule CODE / reflint rules: explanations from the rules' own documentation."""

import json

from reflint.codes import CODES, META_CODES
from reflint.rule import all_rules


def test_rule_explains_what_why_example_fix_versions_runtime(reflint):
    r = reflint("rule", "REF007")
    assert r.returncode == 0
    for heading in ("# REF007 ref-used-as-array", "## What it does", "## Why is this bad?",
                    "## Example", "## Use instead", "## Fix safety", "## JAX versions",
                    "## Runtime message", "## Suppressing"):
        assert heading in r.stdout, heading
    assert "Safe autofix available" in r.stdout
    assert "jnp.sin(x_ref[...])" in r.stdout


def test_rule_by_name_and_lower_case(reflint):
    assert reflint("rule", "ref-returned").stdout == reflint("rule", "REF001").stdout
    assert reflint("rule", "ref001").stdout == reflint("rule", "REF001").stdout


def test_meta_codes_are_explained(reflint):
    for code in sorted(META_CODES):
        r = reflint("rule", code)
        assert r.returncode == 0 and r.stdout.startswith(f"# {code} {CODES[code]}")


def test_unknown_rule_exits_2(reflint):
    r = reflint("rule", "REF999")
    assert r.returncode == 2 and "unknown rule: REF999" in r.stderr


def test_rules_lists_every_rule_with_fix_availability(reflint):
    r = reflint("rules")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    expected = [x.code for x in all_rules()] + sorted(META_CODES)
    assert [line.split()[0] for line in lines] == expected
    ref007 = next(line for line in lines if line.startswith("REF007"))
    assert "ref-used-as-array" in ref007 and " fix " in ref007
    ref001 = next(line for line in lines if line.startswith("REF001"))
    assert " - " in ref001


def test_rules_json(reflint):
    r = reflint("rules", "--format", "json")
    data = json.loads(r.stdout)
    by_code = {d["code"]: d for d in data}
    assert set(by_code) == {x.code for x in all_rules()} | set(META_CODES)
    assert by_code["REF007"]["fix"] == "safe" and by_code["REF001"]["fix"] is None
    assert by_code["REF007"]["name"] == "ref-used-as-array"
    assert by_code["REF902"]["default"] is False and by_code["REF001"]["default"] is True
    assert all(d["summary"] for d in data)
