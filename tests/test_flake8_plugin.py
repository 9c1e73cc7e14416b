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


# -- the project (docs/project.md): flake8 checks a file with its project's summaries -------

KERNELS = textwrap.dedent("""\
    def scale(x_ref, o_ref):
        o_ref[...] = x_ref * 2
""")
OPS = textwrap.dedent("""\
    import jax
    from jax.experimental import pallas as pl

    from . import kernels


    def run(x):
        return pl.pallas_call(kernels.scale,
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
""")


def _package(root, *, launched=True):
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(KERNELS)
    (pkg / "ops.py").write_text(OPS if launched else OPS.replace("kernels.scale", "len"))
    return pkg


def test_flake8_reads_the_project(tmp_path):
    """kernels.py spells nothing of Pallas: only ops.py, launching it, makes x_ref a ref. The
    file given alone to flake8 (as pre-commit and editors do) is checked with its project:
    the same finding, message and all, as `reflint check --project-root`."""
    _package(tmp_path)
    r = flake8("--isolated", "--select", "REF", "pkg/kernels.py", cwd=tmp_path)
    got = parse_findings(r.stdout)
    assert [f[:4] for f in got] == [("pkg/kernels.py", 2, 18, "REF007")], r.stdout + r.stderr
    assert "kernels.scale is launched by pl.pallas_call in pkg/ops.py:8" in next(iter(got))[4]
    # The summaries went to the cache `reflint check` keeps: the next run reads them.
    entries = list((tmp_path / ".reflint_cache").rglob("*"))
    assert sum(1 for p in entries if p.is_file() and p.parent.parent.name == "s") == 3
    r = flake8("--isolated", "--select", "REF", "pkg/kernels.py", cwd=tmp_path)
    assert parse_findings(r.stdout) == got
    assert got == reflint_findings(["--project-root", ".", "pkg/kernels.py"], cwd=tmp_path)
    # Without the project (the option, or flake8's configuration): the file alone.
    r = flake8("--isolated", "--select", "REF", "--reflint-no-project", "pkg/kernels.py",
               cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    (tmp_path / ".flake8").write_text("[flake8]\nselect = REF\nreflint-no-project = true\n")
    r = flake8("pkg/kernels.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr


def test_flake8_project_is_the_nearest_pyproject(tmp_path):
    """Run from elsewhere, the project is the folder of the nearest pyproject.toml; a
    launcher that goes away takes the finding with it (a tricky negative: the same kernel,
    launched by nothing)."""
    proj = tmp_path / "proj"
    _package(proj)
    (proj / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    target = str(proj / "pkg" / "kernels.py")
    r = flake8("--isolated", "--select", "REF", target, cwd=other)
    assert [f[1:4] for f in parse_findings(r.stdout)] == [(2, 18, "REF007")], r.stdout
    quiet = tmp_path / "quiet"
    _package(quiet, launched=False)
    (quiet / "pyproject.toml").write_text("[project]\nname = 'q'\n")
    r = flake8("--isolated", "--select", "REF", str(quiet / "pkg" / "kernels.py"), cwd=other)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr


def test_flake8_stdin_text_takes_the_files_place(tmp_path):
    """`--stdin-display-name`: the text read from stdin is the module at that path (an
    editor's unsaved buffer): its own launch, absent from the disk's file, counts."""
    _package(tmp_path, launched=False)
    buffer = OPS  # launches kernels.scale; ops.py on disk does not
    (tmp_path / "pkg" / "kernels.py").write_text(KERNELS)
    r = flake8("--isolated", "--select", "REF", "--stdin-display-name", "pkg/ops.py", "-",
               cwd=tmp_path, input=buffer)
    assert r.returncode == 0, r.stdout + r.stderr  # ops.py itself has nothing to report
    r = flake8("--isolated", "--select", "REF", "--stdin-display-name", "pkg/kernels.py",
               "-", cwd=tmp_path, input=KERNELS)
    assert r.returncode == 0 and r.stdout == "", r.stdout  # the disk's ops.py launches nothing
    (tmp_path / "pkg" / "ops.py").write_text(OPS)
    r = flake8("--isolated", "--select", "REF", "--stdin-display-name", "pkg/kernels.py",
               "-", cwd=tmp_path, input=KERNELS.replace("x_ref * 2", "x_ref[...] * 2"))
    assert r.returncode == 0 and r.stdout == "", r.stdout  # the buffer's fix counts
    r = flake8("--isolated", "--select", "REF", "--stdin-display-name", "pkg/kernels.py",
               "-", cwd=tmp_path, input=KERNELS)
    assert [f[1:4] for f in parse_findings(r.stdout)] == [(2, 18, "REF007")], r.stdout
