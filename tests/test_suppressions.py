"""# noqa comments (flake8 syntax), # reflint: skip-file, REF901 unknown codes, REF902 unused."""

import json
import textwrap

HEAD = "import jax\nimport jax.numpy as jnp\n\nx_ref = jax.new_ref(jnp.zeros(3))\n"


def findings(reflint, tmp_path, body, *args, name="mod.py"):
    p = tmp_path / name
    p.write_text(HEAD + textwrap.dedent(body))
    r = reflint("check", "--format", "json", *args, str(p))
    assert r.returncode in (0, 1), r.stderr
    return {(d["line"], d["code"]) for d in json.loads(r.stdout)}, r


def test_noqa_forms(tmp_path, reflint):
    got, _ = findings(reflint, tmp_path, """\
        a = jnp.sin(x_ref)
        b = jnp.sin(x_ref)  # noqa: REF007
        c = jnp.sin(x_ref)  # noqa: E501, REF007
        d = jnp.sin(x_ref)  # noqa:REF001,REF007
        e = jnp.sin(x_ref)  # noqa
        f = jnp.sin(x_ref)  # NOQA: REF007 (reason given here)
        g = jnp.sin(x_ref)  # noqa: REF001
        h = jnp.sin(x_ref)  # noqa: E501
        i = jnp.sin(x_ref)  # noqa: REF00
        j = "# noqa: REF007", jnp.sin(x_ref)
    """)
    assert got == {(5, "REF007"), (11, "REF007"), (12, "REF007"), (14, "REF007")}


def test_noqa_on_first_line_of_multiline_statement(tmp_path, reflint):
    # Reported on the line of the ref; a multi-line call is suppressed on the reported line,
    # and a backslash continuation counts as one line (as in flake8).
    got, _ = findings(reflint, tmp_path, """\
        a = jnp.sin(x_ref +  # noqa: REF007
                    1.0)
        b = jnp.sin(
            x_ref)  # noqa: REF007
        c = jnp.sin(
            x_ref)
        d = 1.0 + \\
            jnp.sin(x_ref)  # noqa: REF007
    """)
    assert got == {(10, "REF007")}


def test_skip_file(tmp_path, reflint):
    got, r = findings(reflint, tmp_path, "# reflint: skip-file\na = jnp.sin(x_ref)\n")
    assert got == set() and r.returncode == 0


def test_unknown_code_in_noqa_is_reported(tmp_path, reflint):
    got, r = findings(reflint, tmp_path, """\
        a = jnp.sin(x_ref)  # noqa: REF999
        b = 1  # noqa: ref007
        c = 1  # noqa: E501, W291
        d = 1  # noqa: REF999, REF901
    """)
    assert got == {(5, "REF007"), (5, "REF901"), (6, "REF901")}
    data = json.loads(r.stdout)
    unknown = next(d for d in data if d["code"] == "REF901" and d["line"] == 5)
    assert unknown["column"] == len("a = jnp.sin(x_ref)  # noqa: ") + 1
    assert "REF999" in unknown["message"]
    lower = next(d for d in data if d["code"] == "REF901" and d["line"] == 6)
    assert "REF007" in lower["message"]  # the hint names the upper-case code


def test_unused_noqa_is_opt_in(tmp_path, reflint):
    body = """\
        a = jnp.sin(x_ref)  # noqa: REF007
        b = 1  # noqa: REF007
        c = jnp.sin(x_ref)  # noqa: REF001, REF007
        d = 1  # noqa
        e = 1  # noqa: E501
        f = 1  # noqa: REF002
    """
    got, _ = findings(reflint, tmp_path, body)
    assert got == set()
    expected = {(6, "REF902"), (7, "REF902"), (10, "REF902")}
    got, r = findings(reflint, tmp_path, body, "--report-unused-noqa")
    assert got == expected
    msgs = {d["line"]: d["message"] for d in json.loads(r.stdout)}
    assert "REF001" in msgs[7]
    got, _ = findings(reflint, tmp_path, body, "--extend-select", "REF902")
    assert got == expected
    # A rule that is not enabled: its codes are not reported as unused.
    got, _ = findings(reflint, tmp_path, body, "--report-unused-noqa", "--ignore", "REF002")
    assert got == {(6, "REF902"), (7, "REF902")}
    # Prefixes and ALL do not select the opt-in check.
    got, _ = findings(reflint, tmp_path, body, "--select", "ALL")
    assert got == set()


def test_unused_noqa_in_file_without_refs(tmp_path, reflint):
    p = tmp_path / "plain.py"
    p.write_text("x = 1  # noqa: REF001\n")
    r = reflint("check", "--format", "concise", "-q", "--report-unused-noqa", str(p))
    assert r.returncode == 1
    assert r.stdout.startswith(f"{p}:1:16: REF902 ")
