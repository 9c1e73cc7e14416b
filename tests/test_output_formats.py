"""--format sarif|github|json|concise|text, --statistics, --exit-zero, --quiet, colour."""

import json
import os
import pty
import subprocess
import textwrap

import jsonschema
import pytest

from conftest import ROOT, reflint_cmd

BAD = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    y = jnp.sin(x_ref)
    z = jnp.cos(x_ref) + jnp.tan(x_ref)


    @jax.jit
    def f(r):
        return r


    f(x_ref)
""")

SCHEMA_PATH = os.path.join(ROOT, "tests", "data", "sarif-schema-2.1.0.json")


@pytest.fixture
def bad(tmp_path):
    (tmp_path / "src").mkdir()
    p = tmp_path / "src" / "bad.py"
    p.write_text(BAD)
    return tmp_path


def test_sarif_validates_against_the_schema(bad, reflint):
    r = reflint("check", "--format", "sarif", "src", cwd=bad)
    assert r.returncode == 1, r.stderr
    log = json.loads(r.stdout)
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        schema = json.load(fh)
    jsonschema.Draft4Validator(schema,
                               format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
                               ).validate(log)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "reflint"
    rules = {r["id"]: r for r in driver["rules"]}
    assert rules["REF007"]["name"] == "ref-used-as-array"
    assert "## Why is this bad?" in rules["REF007"]["help"]["markdown"]
    assert rules["REF007"]["shortDescription"]["text"]
    results = run["results"]
    assert [(x["ruleId"], x["locations"][0]["physicalLocation"]["region"]["startLine"])
            for x in results] == [("REF007", 5), ("REF007", 6), ("REF007", 6), ("REF001", 11)]
    first = results[0]
    assert driver["rules"][first["ruleIndex"]]["id"] == "REF007"
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "src/bad.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 5, "startColumn": 13, "endLine": 5, "endColumn": 18}


def test_sarif_with_no_findings_is_valid(tmp_path, reflint):
    (tmp_path / "ok.py").write_text("x = 1\n")
    r = reflint("check", "--format", "sarif", ".", cwd=tmp_path)
    assert r.returncode == 0
    log = json.loads(r.stdout)
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        jsonschema.validate(log, json.load(fh))
    assert log["runs"][0]["results"] == []


def test_github_annotations(bad, reflint):
    r = reflint("check", "--format", "github", "src", cwd=bad)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("::error file=src/bad.py,line=5,col=13,endLine=5,endColumn=18,"
                               "title=REF007 ref-used-as-array::x_ref is a Ref passed to "
                               "jnp.sin")
    assert lines[3].startswith("::error file=src/bad.py,line=11,col=")
    assert "title=REF001 ref-returned::" in lines[3]


def test_statistics(bad, reflint):
    r = reflint("check", "--statistics", "src", cwd=bad)
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["3\tREF007\t[*] ref-used-as-array",
                                     "1\tREF001\t    ref-returned"]


def test_exit_zero_and_quiet(bad, reflint):
    r = reflint("check", "--exit-zero", "src", cwd=bad)
    assert r.returncode == 0 and "REF007" in r.stdout and "Found 4 errors" in r.stdout
    r = reflint("check", "--quiet", "--format", "concise", "src", cwd=bad)
    assert r.returncode == 1
    assert len(r.stdout.splitlines()) == 4 and "Found" not in r.stdout


def _run_in_terminal(args, cwd, env):
    master, slave = pty.openpty()
    proc = subprocess.Popen(reflint_cmd() + args, cwd=cwd, env=env, stdout=slave,
                            stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_only_on_a_terminal_and_never_with_no_color(bad, reflint):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    out = _run_in_terminal(["check", "src"], bad, env)
    assert "\x1b[" in out and "REF007" in out
    out = _run_in_terminal(["check", "src"], bad, dict(env, NO_COLOR="1"))
    assert "\x1b[" not in out and "REF007" in out
    r = reflint("check", "src", cwd=bad)  # a pipe, not a terminal
    assert "\x1b[" not in r.stdout
