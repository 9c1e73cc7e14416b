"""[tool.reflint] in pyproject.toml: discovery, keys, errors, exclusion, per-file-ignores."""

import textwrap

import pytest

BAD = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    y = jnp.sin(x_ref)
""")


def codes_of(stdout):
    out = set()
    for line in stdout.splitlines():
        path, line_no, _col, rest = line.split(":", 3)
        out.add((path, int(line_no), rest.split()[0]))
    return out


@pytest.fixture
def project(tmp_path):
    (tmp_path / "src" / "gen").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    for rel in ("src/a.py", "src/gen/b.py", "tests/test_a.py"):
        (tmp_path / rel).write_text(BAD)
    return tmp_path


def write_config(root, body, name="pyproject.toml"):
    (root / name).write_text("[project]\nname = 'demo'\n\n[tool.reflint]\n" +
                             textwrap.dedent(body))


def check(reflint, cwd, *args):
    return reflint("check", "--format", "concise", "-q", *args, cwd=cwd)


def test_no_config_checks_everything(project, reflint):
    r = check(reflint, project)
    assert r.returncode == 1
    assert {p for p, _, _ in codes_of(r.stdout)} == {"src/a.py", "src/gen/b.py",
                                                        "tests/test_a.py"}


def test_exclude_per_file_ignores_and_ignore(project, reflint):
    write_config(project, """\
        extend-exclude = ["src/gen"]
        per-file-ignores = { "tests/**" = ["REF007"] }
    """)
    r = check(reflint, project)
    assert r.returncode == 1, r.stderr
    assert codes_of(r.stdout) == {("src/a.py", 5, "REF007")}
    write_config(project, 'ignore = ["REF007"]\n')
    r = check(reflint, project)
    assert r.returncode == 0 and r.stdout == ""


def test_config_found_upward_from_each_file(project, reflint):
    write_config(project, 'ignore = ["REF0"]\n')
    # Run from elsewhere: the file's own nearest pyproject.toml applies.
    r = check(reflint, project.parent, str(project / "src" / "a.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    # A nearer pyproject.toml (in tests/) wins for the files below it.
    write_config(project / "tests", 'select = ["REF007"]\n')
    r = check(reflint, project)
    assert codes_of(r.stdout) == {("tests/test_a.py", 5, "REF007")}


def test_pyproject_without_reflint_table_is_skipped(project, reflint):
    write_config(project, 'ignore = ["REF007"]\n')
    (project / "src" / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    r = check(reflint, project, "src/a.py")
    assert r.returncode == 0, r.stdout


def test_config_flag_overrides_discovery(project, reflint, tmp_path_factory):
    write_config(project, 'ignore = ["REF007"]\n')
    other = tmp_path_factory.mktemp("cfg")
    write_config(other, 'select = ["REF007"]\n')
    r = check(reflint, project, "--config", str(other / "pyproject.toml"), "src/a.py")
    assert codes_of(r.stdout) == {("src/a.py", 5, "REF007")}
    r = check(reflint, project, "--config", str(other / "missing.toml"))
    assert r.returncode == 2 and "missing.toml" in r.stderr


def test_cli_flags_override_config(project, reflint):
    write_config(project, 'ignore = ["REF007"]\n')
    assert check(reflint, project, "src/a.py").returncode == 0
    assert check(reflint, project, "--select", "REF007", "src/a.py").returncode == 1
    # The command line is applied after the file: --extend-select re-enables what it ignores.
    assert check(reflint, project, "--extend-select", "REF007", "src/a.py").returncode == 1
    write_config(project, 'select = ["REF007"]\n')
    assert check(reflint, project, "--ignore", "REF0", "src/a.py").returncode == 0


@pytest.mark.parametrize("body,needle", [
    ('selct = ["REF001"]\n', "'selct'"),
    ('select = ["REF999"]\n', "REF999"),
    ('per-file-ignores = { "x.py" = ["REF123"] }\n', "REF123"),
    ('extend-select = "REF001"\n', "extend-select must be a list"),
    ('target-jax-version = "zero"\n', "invalid JAX version"),
    ('select = [\n', "invalid TOML"),
])
def test_invalid_config_exits_2_naming_the_problem(project, reflint, body, needle):
    write_config(project, body)
    r = check(reflint, project)
    assert r.returncode == 2
    assert needle in r.stderr and "pyproject.toml" in r.stderr
    assert "Traceback" not in r.stderr


def test_explicit_files_checked_even_when_excluded_unless_force_exclude(project, reflint):
    write_config(project, 'extend-exclude = ["src/gen", "test_*.py"]\n')
    r = check(reflint, project, "src/gen/b.py", "tests/test_a.py")
    assert {p for p, _, _ in codes_of(r.stdout)} == {"src/gen/b.py", "tests/test_a.py"}
    r = check(reflint, project, "--force-exclude", "src/gen/b.py", "tests/test_a.py")
    assert r.returncode == 0 and r.stdout == ""
    r = check(reflint, project, "tests")  # walking: the pattern excludes test_a.py
    assert r.returncode == 0 and r.stdout == ""


def test_exclude_replaces_defaults(project, reflint):
    (project / "build").mkdir()
    (project / "build" / "c.py").write_text(BAD)
    assert "build/c.py" not in check(reflint, project).stdout
    write_config(project, 'exclude = ["src"]\n')
    r = check(reflint, project)
    assert {p for p, _, _ in codes_of(r.stdout)} == {"build/c.py", "tests/test_a.py"}


def test_show_settings(project, reflint):
    write_config(project, """\
        select = ["REF0"]
        ignore = ["REF003"]
        extend-exclude = ["src/gen"]
        per-file-ignores = { "tests/**" = ["REF007"] }
        target-jax-version = "0.8"
    """)
    r = reflint("check", "--show-settings", cwd=project)
    assert r.returncode == 0, r.stderr
    assert f"config-file = {project / 'pyproject.toml'}" in r.stdout
    assert "target-jax-version = 0.8.0" in r.stdout
    select_line = next(l for l in r.stdout.splitlines() if l.startswith("select = "))
    assert "REF001" in select_line and "REF003" not in select_line
    assert "REF900" not in select_line
    assert "src/gen" in r.stdout and "'tests/**': [REF007]" in r.stdout
