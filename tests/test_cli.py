"""The installed console script: exit codes, output formats, parse errors, fixes."""

import json
import textwrap

BAD = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    y = jnp.sin(x_ref)
""")
GOOD = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    y = jnp.sin(x_ref[...])
""")


def test_clean_file_exits_0(tmp_path, reflint):
    (tmp_path / "good.py").write_text(GOOD)
    r = reflint("check", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All checks passed" in r.stdout


def test_findings_exit_1_with_text_location_and_caret(tmp_path, reflint):
    p = tmp_path / "bad.py"
    p.write_text(BAD)
    r = reflint("check", str(p))
    assert r.returncode == 1
    assert f"{p}:5:13: REF007 " in r.stdout
    assert "^^^^^" in r.stdout
    assert "--fix" in r.stdout


def test_json_shape(tmp_path, reflint):
    p = tmp_path / "bad.py"
    p.write_text(BAD)
    r = reflint("check", "--format", "json", str(p))
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert isinstance(data, list) and len(data) == 1
    d = data[0]
    assert set(d) >= {"path", "line", "column", "end_line", "end_column", "code", "name",
                      "message", "fix"}
    assert (d["line"], d["column"], d["end_line"], d["end_column"]) == (5, 13, 5, 18)
    assert d["code"] == "REF007" and d["name"] == "ref-used-as-array"
    assert d["fix"]["applicability"] == "safe"
    assert d["fix"]["edits"] == [{"line": 5, "column": 18, "end_line": 5, "end_column": 18,
                                  "content": "[...]"}]


def test_parse_error_reported_and_run_continues(tmp_path, reflint):
    (tmp_path / "broken.py").write_text("import jax\nr = jax.new_ref(0.)\ndef f(:\n    pass\n")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    r = reflint("check", "--format", "json", str(tmp_path))
    assert r.returncode == 1
    data = json.loads(r.stdout)
    by_code = {}
    for d in data:
        by_code.setdefault(d["code"], []).append(d)
    assert {d["path"].rsplit("/", 1)[1] for d in by_code["REF900"]} == {"broken.py", "latin.py"}
    assert by_code["REF007"][0]["path"].endswith("bad.py")
    broken = next(d for d in by_code["REF900"] if d["path"].endswith("broken.py"))
    assert broken["line"] == 3 and "syntax error" in broken["message"]
    assert "Traceback" not in r.stderr


def test_parse_error_in_a_file_no_rule_needs(tmp_path, reflint):
    # No trigger text: the file is never analysed, yet its syntax error is reported with
    # CPython's message and position, and a noqa comment cannot hide it.
    (tmp_path / "plain.py").write_text("import os\n\nif True\n    x = 1  # noqa\n")
    # Syntax newer than this interpreter's but accepted by libcst (PEP 695 on Python 3.11):
    # libcst is the parser of record, so nothing is reported, as for an analysed file.
    (tmp_path / "new_syntax.py").write_text("type Vector = list[float]\n")
    (tmp_path / "ok.py").write_text("import os\n")
    r = reflint("check", "--format", "json", str(tmp_path))
    data = json.loads(r.stdout)
    assert [(d["path"].rsplit("/", 1)[1], d["code"], d["line"]) for d in data] == \
        [("plain.py", "REF900", 3)], data
    assert "expected ':'" in data[0]["message"]
    assert r.returncode == 1
    r = reflint("check", "--ignore", "REF900", str(tmp_path))
    assert r.returncode == 0, r.stdout


def test_fix_rewrites_only_the_ref_and_is_idempotent(tmp_path, reflint):
    p = tmp_path / "bad.py"
    p.write_text(BAD + "# trailing comment\n")
    r = reflint("check", "--fix", str(p))
    assert r.returncode == 0, r.stdout + r.stderr
    assert p.read_text() == GOOD + "# trailing comment\n"
    r2 = reflint("check", "--fix", str(p))
    assert r2.returncode == 0
    assert p.read_text() == GOOD + "# trailing comment\n"


def test_diff_writes_nothing(tmp_path, reflint):
    p = tmp_path / "bad.py"
    p.write_text(BAD)
    r = reflint("check", "--diff", str(p))
    assert r.returncode == 1
    assert "-y = jnp.sin(x_ref)" in r.stdout and "+y = jnp.sin(x_ref[...])" in r.stdout
    assert p.read_text() == BAD


def test_select_and_ignore(tmp_path, reflint):
    p = tmp_path / "bad.py"
    p.write_text(BAD)
    assert reflint("check", "--ignore", "REF007", str(p)).returncode == 0
    assert reflint("check", "--select", "REF001", str(p)).returncode == 0
    assert reflint("check", "--select", "REF007", str(p)).returncode == 1
    r = reflint("check", "--select", "REF999", str(p))
    assert r.returncode == 2 and "REF999" in r.stderr


def test_missing_path_is_usage_error(tmp_path, reflint):
    r = reflint("check", str(tmp_path / "nope"))
    assert r.returncode == 2
    assert "no such file" in r.stderr


def test_rule_explanation(reflint):
    r = reflint("rule", "REF001")
    assert r.returncode == 0
    assert "# REF001 ref-returned" in r.stdout and "## Why is this bad?" in r.stdout
    assert reflint("rule", "REF998").returncode == 2


def test_static_linting_imports_no_jax(tmp_path):
    """Linting (CLI path, all rules) never imports JAX or the user's code."""
    import subprocess
    import sys

    (tmp_path / "user_mod.py").write_text("raise SystemExit('user code was imported')\n")
    (tmp_path / "bad.py").write_text("import user_mod\n" + BAD)
    code = (
        "import sys\n"
        "from reflint.cli import main\n"
        f"rc = main(['check', '--no-cache', '-j', '1', {str(tmp_path)!r}])\n"
        "assert rc == 1, rc\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'user_mod'))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
