"""The pre-commit hooks (.pre-commit-hooks.yaml), run by the real `pre-commit try-repo`.

`try-repo` installs the hook into its own virtual environment from a git repository. It only
sees committed (and staged) files, so the tests commit a snapshot of this checkout's working
tree (tracked and untracked, non-ignored files) into a temporary repository and point
`try-repo` at it. Installing the hook needs the package index (for libcst).
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from integration_helpers import SAMPLE, flake8, parse_findings, reflint_findings

pytestmark = pytest.mark.skipif(
    subprocess.run([sys.executable, "-m", "pre_commit", "--version"],
                   capture_output=True).returncode != 0,
    reason="pre-commit is not installed (pip install -e '.[test]')")

BAD = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    y = jnp.sin(x_ref)
""")
GOOD = BAD.replace("jnp.sin(x_ref)", "jnp.sin(x_ref[...])")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, **GIT_ENV))


def _checkout_files() -> list:
    r = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                       capture_output=True)
    if r.returncode == 0 and r.stdout:
        return [f for f in r.stdout.decode().split("\0") if f]
    out = []  # not a git checkout: everything but build products and environments
    for root, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in (".git", ".venv", "venv", "build", "dist",
                                                "__pycache__", ".pytest_cache", "node_modules")
                   and not d.endswith(".egg-info")]
        out += [os.path.relpath(os.path.join(root, f), ROOT) for f in files]
    return out


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A git repository holding this checkout's working tree, committed."""
    snap = tmp_path_factory.mktemp("reflint-hook-repo")
    for rel in _checkout_files():
        src = os.path.join(ROOT, rel)
        if os.path.isfile(src):
            dst = snap / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    git("init", "-q", cwd=snap)
    git("add", "-A", cwd=snap)
    git("commit", "-q", "-m", "snapshot", cwd=snap)
    return snap


def _user_repo(path):
    path.mkdir()
    git("init", "-q", cwd=path)
    (path / "bad.py").write_text(BAD)
    (path / "good.py").write_text(GOOD)
    shutil.copy(SAMPLE, path / "sample.py")
    # A kernel that only another module launches (docs/project.md): pre-commit passes the
    # changed file alone; the hook reads the rest of the repository's summaries.
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures_projects", "kernel_elsewhere", "pkg"),
                    path / "pkg")
    git("add", "-A", cwd=path)
    return path


def try_repo(hook_repo, repo, hook, *files):
    env = dict(os.environ, **GIT_ENV)
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook,
                           "--color", "never", "--files", *files],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def runs(hook_repo, tmp_path_factory):
    """The try-repo runs the tests look at. try-repo installs the hook environment afresh on
    every call (it uses a temporary store), so the calls are made once, here."""
    base = tmp_path_factory.mktemp("users")
    check_repo = _user_repo(base / "check")
    fix_repo = _user_repo(base / "fix")
    return {
        "check_repo": check_repo,
        "bad": try_repo(hook_repo, check_repo, "reflint", "bad.py", "sample.py",
                        "pkg/kernels.py"),
        "good": try_repo(hook_repo, check_repo, "reflint", "good.py"),
        "fix_repo": fix_repo,
        "fix": try_repo(hook_repo, fix_repo, "reflint-fix", "bad.py", "good.py"),
    }


def test_manifest_is_valid():
    path = os.path.join(ROOT, ".pre-commit-hooks.yaml")
    r = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    import yaml  # a dependency of pre-commit

    with open(path, encoding="utf-8") as fh:
        hooks = {h["id"]: h for h in yaml.safe_load(fh)}
    assert set(hooks) == {"reflint", "reflint-fix"}
    assert hooks["reflint"]["entry"].startswith("reflint check")
    # pre-commit passes the changed files: both hooks read the repository's summaries.
    assert all("--project-root ." in h["entry"] for h in hooks.values())
    assert "--fix" in hooks["reflint-fix"]["entry"].split()
    assert all("python" in h["types_or"] for h in hooks.values())


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_hook_fails_on_bad_file_and_passes_on_good(runs):
    r = runs["bad"]
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "bad.py:5:13: REF007 " in out and "Failed" in out
    # pkg/kernels.py, given alone, is checked with the repository's other modules.
    assert "kernels.scale is launched by pl.pallas_call in pkg/ops.py:10" in out, out
    r = runs["good"]
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout


@pytest.mark.slow  # issue 28: installs the hook environment (minutes)
def test_fix_hook_rewrites_the_file(runs):
    r = runs["fix"]
    assert r.returncode == 1, r.stdout + r.stderr  # pre-commit fails a hook that modifies files
    assert "files were modified by this hook" in r.stdout
    assert (runs["fix_repo"] / "bad.py").read_text() == GOOD
    assert (runs["fix_repo"] / "good.py").read_text() == GOOD


@pytest.mark.slow  # issue 28: installs the hook environment (minutes)
def test_cli_flake8_and_pre_commit_agree_on_a_fixture(runs):
    repo = runs["check_repo"]
    cli = reflint_findings(["sample.py"], cwd=repo)
    assert {(f[1], f[3]) for f in cli} == {(10, "REF001"), (22, "REF002"), (24, "REF007"),
                                           (25, "REF007")}
    f8 = flake8("--isolated", "--select", "REF", "sample.py", cwd=repo)
    hook = {f for f in parse_findings(runs["bad"].stdout) if f[0] == "sample.py"}
    assert parse_findings(f8.stdout) == cli
    assert hook == cli
    # The kernel module given alone: the hook, flake8 and `--project-root` read the project.
    cli = reflint_findings(["--project-root", ".", "pkg/kernels.py"], cwd=repo)
    assert {f[3] for f in cli} == {"REF007"}
    f8 = flake8("--isolated", "--select", "REF", "pkg/kernels.py", cwd=repo)
    assert parse_findings(f8.stdout) == cli
    assert {f for f in parse_findings(runs["bad"].stdout) if f[0] == "pkg/kernels.py"} == cli
