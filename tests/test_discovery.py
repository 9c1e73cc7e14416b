"""Which files are checked: .gitignore respected in any tree (git repository or not), a named
file that is not Python warned about and not parsed, "0 files checked" warned about, and the
paths the configuration excluded said in the summary."""

from __future__ import annotations

import pytest

from reflint.cli import discover, main
from reflint.config import Overrides, Resolver

BAD = "import jax\nx_ref = jax.new_ref(1.0)\ny = x_ref + 1\n"


def run(capsys, *args):
    code = main(["check", "--no-cache", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def files(root, **kw):
    return sorted(str(p.relative_to(root)) for p, _ in
                  ((__import__("pathlib").Path(f), s) for f, s in
                   discover([str(root)], Resolver(Overrides(**kw)))))


@pytest.fixture
def tree(tmp_path):
    for rel in ("build2/a.py", "src/b.py", "src/skip.py", "src/c.gen.py", "src/keep.gen.py",
                "keep/skip.py", "src/sub/d.py", "nb/n.ipynb"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(BAD if rel.endswith(".py") else '{"cells": []}')
    (tmp_path / ".gitignore").write_text(
        "# generated\nbuild2/\n*.gen.py\n!keep.gen.py\n/src/skip.py\n\n")
    (tmp_path / "src" / ".gitignore").write_text("sub\n")
    return tmp_path


def test_gitignore_is_respected_without_a_git_repository(tree, monkeypatch):
    monkeypatch.chdir(tree)
    assert not (tree / ".git").exists()
    assert files(tree) == ["keep/skip.py", "nb/n.ipynb", "src/b.py", "src/keep.gen.py"]
    assert len(files(tree, respect_gitignore=False)) == 8


def test_gitignore_of_the_repository_above_a_named_directory(tree, monkeypatch):
    (tree / ".git").mkdir()
    monkeypatch.chdir(tree / "src")
    # Walking src/ alone: the root's .gitignore (up to the .git directory) still applies.
    got = sorted(f for f, _ in discover(["."], Resolver()))
    assert got == ["b.py", "keep.gen.py"]


def test_a_named_ignored_file_is_still_checked(tree, capsys):
    code, out, _ = run(capsys, "--format", "concise", tree / "build2" / "a.py")
    assert code == 1 and "REF007" in out


def test_respect_gitignore_config_key(tree, capsys):
    (tree / "pyproject.toml").write_text("[tool.reflint]\nrespect-gitignore = false\n")
    code, out, _ = run(capsys, "--format", "concise", tree)
    assert out.count("REF007") == 7  # the 7 .py files
    (tree / "pyproject.toml").write_text("[tool.reflint]\nrespect-gitignore = 1\n")
    code, _, err = run(capsys, tree)
    assert code == 2 and "respect-gitignore must be true or false" in err


def test_a_named_file_that_is_not_python_is_not_parsed(tmp_path, capsys):
    txt = tmp_path / "notes.txt"
    txt.write_text("this is not python (\n")
    code, out, err = run(capsys, txt)
    assert code == 0 and "REF900" not in out
    assert f"reflint: warning: {txt} is not a Python file or notebook" in err
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env python3\n" + BAD)
    code, out, _ = run(capsys, "--format", "concise", script)
    assert code == 1 and "REF007" in out  # a Python script without a suffix is checked


def test_zero_files_checked_is_warned_about(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, out, err = run(capsys, tmp_path / "empty")
    assert code == 0
    assert "All checks passed (0 files checked)." in out
    assert "warning: no Python files or notebooks found under" in err


def test_fully_excluded_path_and_excluded_paths_said(tmp_path, capsys, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.reflint]\nextend-exclude = ["examples"]\n')
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "e.py").write_text(BAD)
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, ".")
    assert code == 0
    assert "All checks passed (1 file checked)." in out
    assert ("Not checked: 1 path excluded by the configuration (examples); name a path to "
            "check it, or see --show-settings.") in out
    code, out, err = run(capsys, "--force-exclude", "examples")
    assert code == 0
    assert "warning: examples is excluded by the configuration (--force-exclude)" in err
    code, out, _ = run(capsys, "examples")  # named: checked (as ruff without --force-exclude)
    assert code == 1


def test_summary_counts_the_files_with_findings(tmp_path, capsys):
    (tmp_path / "a.py").write_text(BAD + "z = x_ref * 2\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    code, out, _ = run(capsys, tmp_path)
    assert "Found 2 errors in 1 file." in out
