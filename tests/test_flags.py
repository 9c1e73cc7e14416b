"""The flags and formats ruff users reach for (issue 28): --output-format, -o/--output-file,
--add-noqa, --show-fixes, --fix-only, --exit-non-zero-on-fix, --statistics in JSON, gitlab /
junit / pylint output, the unsafe-fixes config key, file-level noqa, `rule --all`; and the
output items: files counted right, --diff with only unsafe fixes, carets on tab-indented and
wide-character lines, multi-line spans, an ASCII terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from reflint.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BAD = ("import jax\nimport jax.numpy as jnp\n\n\ndef f():\n"
       "    x_ref = jax.new_ref(1.0)\n    y = x_ref + 1\n    z = jnp.sin(x_ref)\n"
       "    return y, z\n")
UNSAFE_ONLY = ("import jax.numpy as jnp\n\n\ndef f(n):\n    x = jnp.zeros(4)\n"
               "    for i in range(n):\n        x[i] = i\n    return x\n")


def run(capsys, *args):
    code = main(["check", "--no-cache", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def bad(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text(BAD)
    return p


def test_output_format_is_an_alias_and_output_file_writes_the_report(bad, tmp_path, capsys):
    out_file = tmp_path / "report.json"
    code, out, _ = run(capsys, "--output-format", "json", "-o", out_file, bad)
    assert code == 1 and out == ""
    assert [d["line"] for d in json.loads(out_file.read_text())] == [7, 8]
    code, out, _ = run(capsys, "--output-file", tmp_path / "r.txt", bad)
    assert out == "" and "Found 2 errors in 1 file." in (tmp_path / "r.txt").read_text()
    code, _, err = run(capsys, "-o", tmp_path / "no" / "such" / "dir.txt", bad)
    assert code == 2 and "--output-file" in err


def test_statistics_in_json(bad, capsys):
    code, out, _ = run(capsys, "--statistics", "--format", "json", bad)
    assert json.loads(out) == [{"code": "REF007", "name": "ref-used-as-array", "count": 2,
                                "fixable": True}]


def test_gitlab_junit_pylint(bad, capsys):
    _, out, _ = run(capsys, "--format", "gitlab", bad)
    report = json.loads(out)
    assert [r["location"]["lines"]["begin"] for r in report] == [7, 8]
    assert all(r["check_name"] == "REF007" and r["severity"] == "major" for r in report)
    assert len({r["fingerprint"] for r in report}) == 2
    _, out, _ = run(capsys, "--format", "junit", bad)
    root = ET.fromstring(out)
    assert root.get("failures") == "2"
    cases = root.findall("testsuite/testcase")
    assert [c.get("line") for c in cases] == ["7", "8"]
    assert cases[0].find("failure").get("message").startswith("x_ref is a Ref")
    _, out, _ = run(capsys, "--format", "pylint", bad)
    assert out.splitlines()[0].startswith(f"{bad}:7: [REF007] x_ref is a Ref")


def test_junit_without_findings_is_valid(tmp_path, capsys):
    p = tmp_path / "ok.py"
    p.write_text("x = 1\n")
    code, out, _ = run(capsys, "--format", "junit", p)
    assert code == 0 and ET.fromstring(out).get("failures") == "0"


def test_add_noqa_suppresses_every_finding_and_is_idempotent(tmp_path, capsys):
    p = tmp_path / "a.py"
    p.write_text(BAD.replace("    z = jnp.sin(x_ref)\n",
                             "    z = jnp.sin(x_ref)  # noqa: E501\n"
                             "    s = '''a\n    b''' + x_ref\n"
                             "    t = 1 + \\\n        x_ref\n"))
    code, _, err = run(capsys, "--add-noqa", p)
    assert code == 0 and "Added 4 noqa directives." in err
    text = p.read_text()
    assert "    y = x_ref + 1  # noqa: REF007\n" in text
    assert "jnp.sin(x_ref)  # noqa: E501, REF007\n" in text
    assert "    b''' + x_ref  # noqa: REF007\n" in text  # after the multi-line string
    assert "        x_ref  # noqa: REF007\n" in text  # after the continuation
    assert run(capsys, p)[0] == 0
    code, _, err = run(capsys, "--add-noqa", p)
    assert "Added 0 noqa directives." in err and p.read_text() == text


def test_add_noqa_in_a_notebook_comments_the_cell_line_and_keeps_the_json(tmp_path, capsys):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# demo"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["import jax\n", "import jax.numpy as jnp\n", "%time 1\n",
                         "x_ref = jax.new_ref(1.0)"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["y = x_ref + 1\n", "z = jnp.sin(x_ref)  # noqa: E501"]}]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "demo.ipynb"
    raw = json.dumps(nb, indent=1) + "\n"
    p.write_text(raw)
    assert run(capsys, p)[0] == 1
    code, _, err = run(capsys, "--add-noqa", p)
    assert code == 0 and "Added 2 noqa directives." in err
    got = json.loads(p.read_text())
    cells[2]["source"] = ["y = x_ref + 1  # noqa: REF007\n",
                          "z = jnp.sin(x_ref)  # noqa: E501, REF007"]
    assert got == nb  # only those two cell lines changed; the magic is kept
    assert p.read_text() == json.dumps(nb, indent=1) + "\n"  # formatting kept
    assert run(capsys, p)[0] == 0
    code, _, err = run(capsys, "--add-noqa", p)
    assert "Added 0 noqa directives." in err


def test_fix_only_show_fixes_and_exit_non_zero_on_fix(tmp_path, capsys):
    p = tmp_path / "a.py"
    u = tmp_path / "u.py"
    p.write_text(BAD)
    u.write_text(UNSAFE_ONLY)
    code, out, _ = run(capsys, "--fix-only", "--show-fixes", p, u)
    assert code == 0  # findings left (u.py) are not reported
    assert out == f"Fixed 2 errors:\n- {p}:\n    2 \u00d7 REF007 (ref-used-as-array)\n"
    p.write_text(BAD)
    code, out, _ = run(capsys, "--fix-only", p)
    assert (code, out) == (0, "Fixed 2 errors.\n")
    code, out, _ = run(capsys, "--fix-only", p)
    assert (code, out) == (0, "No errors fixed.\n")
    p.write_text(BAD)
    code, out, _ = run(capsys, "--fix", "--exit-non-zero-on-fix", p)
    assert code == 1 and "All checks passed" in out
    assert run(capsys, "--fix", "--exit-non-zero-on-fix", p)[0] == 0  # nothing fixed


def test_show_fixes_previews_each_fix(bad, capsys):
    _, out, _ = run(capsys, "--show-fixes", bad)
    assert "     7 -     y = x_ref + 1\n     7 +     y = x_ref[...] + 1\n" in out


def test_unsafe_fixes_config_key(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.reflint]\nunsafe-fixes = true\n")
    u = tmp_path / "u.py"
    u.write_text(UNSAFE_ONLY)
    code, out, _ = run(capsys, "--diff", u)
    assert code == 1 and "x = x.at[i].set(i)" in out
    code, out, err = run(capsys, "--diff", "--no-unsafe-fixes", u)
    assert code == 0 and out == ""
    assert main(["check", "--show-settings", str(u)]) == 0
    assert "unsafe-fixes = true" in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text('[tool.reflint]\nunsafe-fixes = "yes"\n')
    code, _, err = run(capsys, u)
    assert code == 2 and "unsafe-fixes must be true or false" in err


def test_diff_says_when_only_unsafe_fixes_exist(tmp_path, capsys):
    u = tmp_path / "u.py"
    u.write_text(UNSAFE_ONLY)
    code, out, err = run(capsys, "--diff", u)
    assert (code, out) == (0, "")
    assert "No safe fixes; 1 unsafe fix available: --diff --unsafe-fixes shows it." in err


@pytest.mark.parametrize("directive", ["# reflint: noqa: REF007", "# flake8: noqa: REF007",
                                       "# reflint: noqa: REF00", "# flake8: NOQA",
                                       "# reflint: noqa"])
def test_file_level_noqa(tmp_path, capsys, directive):
    p = tmp_path / "a.py"
    p.write_text(directive + "\n" + BAD)
    assert run(capsys, p)[0] == 0
    p.write_text("# reflint: noqa: REF001\n" + BAD)
    assert run(capsys, p)[0] == 1  # another code: still reported
    p.write_text("x = '''\n# reflint: noqa: REF001\n'''\n" + BAD)
    assert run(capsys, p)[0] == 1


def test_rule_all(capsys):
    assert main(["rule", "--all"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n# REF0") >= 20 and "# REF900" in out
    assert main(["rule"]) == 2


def test_found_counts_the_files_with_findings(tmp_path, capsys):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(BAD if name == "a.py" else "x = 1\n")
    _, out, _ = run(capsys, tmp_path)
    assert "Found 2 errors in 1 file." in out


def test_caret_under_tabs_wide_characters_and_multi_line_spans(tmp_path, capsys):
    p = tmp_path / "t.py"
    p.write_text("import jax\nimport jax.numpy as jnp\n\n\ndef f():\n"
                 "\tx_ref = jax.new_ref(1.0)\n\ty = x_ref + 1\n"
                 "\ts = \"\u65e5\u672c\"; z = x_ref * 2\n"
                 "\tw = jnp.sum(\n\t    (x_ref if True\n\t     else x_ref))\n"
                 "\treturn y, s, z, w\n")
    _, out, _ = run(capsys, p)
    lines = out.splitlines()
    assert "     7 | \ty = x_ref + 1" in lines
    assert "       | \t    ^^^^^" in lines  # the tab repeated: aligned in any tab width
    # `s = "` 5 columns, two wide characters 4, `"; z = ` 7: 16 columns before x_ref
    assert "       | \t" + " " * 16 + "^^^^^" in lines
    i = lines.index("    10 | \t    (x_ref if True")
    assert lines[i + 1] == "       | \t     ^^^^^^^^^^^^^"
    assert lines[i + 2] == "    11 | \t     else x_ref))"
    assert lines[i + 3] == "       | \t     ^^^^^^^^^^"


def test_ascii_terminal_does_not_crash(tmp_path):
    p = tmp_path / "t.py"
    p.write_text(BAD.replace("y = x_ref + 1", "y = x_ref + 1  # \u2014 \u65e5"))
    env = dict(os.environ, PYTHONIOENCODING="ascii", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "reflint", "check", "--no-cache", str(p)],
                       capture_output=True, env=env, timeout=120)
    assert r.returncode == 1, r.stderr
    assert b"Traceback" not in r.stderr
    assert b"\\u2014 \\u65e5" in r.stdout


def test_watch_checks_again_when_a_file_changes(tmp_path, capsys, monkeypatch):
    from reflint import cli

    p = tmp_path / "a.py"
    p.write_text("x = 1\n")
    args = cli.build_parser().parse_args(["check", "--no-cache", "--watch",
                                          "--format", "concise", str(tmp_path)])
    sleeps = []

    def fake_sleep(_):
        sleeps.append(1)
        if len(sleeps) == 1:
            p.write_text(BAD)  # an edit while watching

    monkeypatch.setattr("time.sleep", fake_sleep)
    assert cli.watch(args, rounds=2) == 0
    out = capsys.readouterr()
    assert out.out.count("REF007") == 2 and "All checks passed" in out.out
    assert "File change detected" in out.err
    assert main(["check", "--watch", "--fix", str(tmp_path)]) == 2
