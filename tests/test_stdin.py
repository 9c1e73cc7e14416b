"""reflint check - : source from standard input, for editors and tools that pipe."""

import json
import textwrap

BAD = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    y = jnp.sin(x_ref)
""")
FIXED = BAD.replace("jnp.sin(x_ref)", "jnp.sin(x_ref[...])")


def test_stdin_check(tmp_path, reflint):
    r = reflint("check", "--format", "concise", "-", cwd=tmp_path, input=BAD)
    assert r.returncode == 1
    assert r.stdout.startswith("-:5:13: REF007 ")
    r = reflint("check", "-", cwd=tmp_path, input=FIXED)
    assert r.returncode == 0 and "All checks passed" in r.stdout


def test_stdin_filename_names_the_file_and_selects_its_config(tmp_path, reflint):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.reflint]\nper-file-ignores = { \"tests/**\" = [\"REF007\"] }\n")
    r = reflint("check", "--format", "json", "--stdin-filename", "src/mod.py", "-",
                cwd=tmp_path, input=BAD)
    assert r.returncode == 1
    assert [d["path"] for d in json.loads(r.stdout)] == ["src/mod.py"]
    r = reflint("check", "--stdin-filename", "tests/test_mod.py", "-", cwd=tmp_path,
                input=BAD)
    assert r.returncode == 0, r.stdout
    # --force-exclude applies the configured exclusions to the stdin file name.
    (tmp_path / "pyproject.toml").write_text("[tool.reflint]\nextend-exclude = [\"gen\"]\n")
    r = reflint("check", "--force-exclude", "--stdin-filename", "gen/x.py", "-",
                cwd=tmp_path, input=BAD)
    assert r.returncode == 0 and r.stdout == ""
    r = reflint("check", "--fix", "--force-exclude", "--stdin-filename", "gen/x.py", "-",
                cwd=tmp_path, input=BAD)
    assert r.returncode == 0 and r.stdout == BAD


def test_stdin_fix_writes_fixed_source_to_stdout(tmp_path, reflint):
    r = reflint("check", "--fix", "-", cwd=tmp_path, input=BAD)
    assert r.returncode == 0, r.stderr
    assert r.stdout == FIXED
    assert list(tmp_path.iterdir()) == []  # nothing written
    # Remaining (unfixable) findings go to stderr, exit 1.
    unfixable = BAD + "jax.jit(lambda r: r)(x_ref)\n"
    r = reflint("check", "--fix", "--format", "concise", "-", cwd=tmp_path, input=unfixable)
    assert r.stdout == unfixable.replace("jnp.sin(x_ref)", "jnp.sin(x_ref[...])")
    assert r.returncode == 1 and "REF001" in r.stderr
    # A clean file comes back unchanged.
    r = reflint("check", "--fix", "-", cwd=tmp_path, input=FIXED)
    assert r.returncode == 0 and r.stdout == FIXED


def test_stdin_diff(tmp_path, reflint):
    r = reflint("check", "--diff", "--stdin-filename", "mod.py", "-", cwd=tmp_path, input=BAD)
    assert r.returncode == 1
    assert "--- a/mod.py" in r.stdout and "+++ b/mod.py" in r.stdout
    assert "-y = jnp.sin(x_ref)\n+y = jnp.sin(x_ref[...])" in r.stdout
    r = reflint("check", "--diff", "-", cwd=tmp_path, input=FIXED)
    assert r.returncode == 0 and r.stdout == ""


def test_stdin_syntax_error_and_mixing_paths(tmp_path, reflint):
    r = reflint("check", "--format", "concise", "-", cwd=tmp_path,
                input="import jax\nr = jax.new_ref(0.)\ndef f(:\n")
    assert r.returncode == 1 and "-:3:" in r.stdout and "REF900" in r.stdout
    r = reflint("check", "-", "other.py", cwd=tmp_path, input=BAD)
    assert r.returncode == 2 and "standard input" in r.stderr
