"""The flake8 plugin (entry point flake8.extension, prefix REF), driven through flake8 itself."""

import textwrap

import pytest

from integration_helpers import flake8, lint_targets, parse_findings, reflint_findings

BAD = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    y = jnp.sin(x_ref)
    z = jnp.cos(x_ref)  # noqa: REF007
""")


def test_flake8_sees_the_plugin():
    r = flake8("--version")
    assert r.returncode == 0 and "reflint: " in r.stdout


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_flake8_findings_equal_reflint_check(tmp_path):
    files = lint_targets(tmp_path)
    expected = reflint_findings(files)
    assert expected, "no findings to compare: the comparison would prove nothing"
    r = flake8("--isolated", "--select", "REF", *files)
    assert r.returncode in (0, 1), r.stderr
    got = parse_findings(r.stdout)
    # Same paths, lines, columns (flake8 prints the 0-based tuple column + 1), codes, messages.
    assert got == expected


def _project(tmp_path, config):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / ".flake8").write_text(textwrap.dedent(config))
    return tmp_path


def test_select_e_f_hides_ref_until_extend_select(tmp_path):
    _project(tmp_path, """\
        [flake8]
        select = E,F
    """)
    r = flake8("bad.py", cwd=tmp_path)
    assert "REF007" not in r.stdout
    _project(tmp_path, """\
        [flake8]
        select = E,F
        extend-select = REF
    """)
    r = flake8("bad.py", cwd=tmp_path)
    assert r.returncode == 1
    assert parse_findings(r.stdout) == {
        ("bad.py", 5, 13, "REF007", next(iter(reflint_findings(["bad.py"], cwd=tmp_path)))[4])}


def test_default_selection_noqa_and_per_file_ignores(tmp_path):
    _project(tmp_path, """\
        [flake8]
    """)
    r = flake8("bad.py", cwd=tmp_path)
    assert [f[1:4] for f in parse_findings(r.stdout)] == [(5, 13, "REF007")]  # line 6: noqa
    _project(tmp_path, """\
        [flake8]
        per-file-ignores =
            bad.py: REF007
    """)
    r = flake8("bad.py", cwd=tmp_path)
    assert r.returncode == 0 and "REF" not in r.stdout
    _project(tmp_path, "[flake8]\n")
    r = flake8("--disable-noqa", "--select", "REF", "bad.py", cwd=tmp_path)
    # flake8's --disable-noqa cannot undo reflint's own noqa handling: same as reflint check.
    assert [f[1:4] for f in parse_findings(r.stdout)] == [(5, 13, "REF007")]


def test_flake8_stdin(tmp_path):
    r = flake8("--select", "REF", "--stdin-display-name", "editor.py", "-", cwd=tmp_path,
               input=BAD)
    assert r.returncode == 1
    assert [f[:4] for f in parse_findings(r.stdout)] == [("editor.py", 5, 13, "REF007")]


def test_reflint_config_applies_in_flake8(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.reflint]\nignore = ["REF007"]\n')
    _project(tmp_path, "[flake8]\n")
    assert reflint_findings(["bad.py"], cwd=tmp_path) == set()
    r = flake8("--select", "REF", "bad.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""


@pytest.mark.parametrize("source,code", [
    ("x = 1  # noqa: REF999\n", "REF901"),
])
def test_meta_codes_through_flake8(tmp_path, source, code):
    (tmp_path / "m.py").write_text(source)
    r = flake8("--select", "REF", "m.py", cwd=tmp_path)
    assert [f[3] for f in parse_findings(r.stdout)] == [code]
    assert parse_findings(r.stdout) == reflint_findings(["m.py"], cwd=tmp_path)
