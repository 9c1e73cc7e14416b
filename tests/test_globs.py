"""Config globs validated when read and matched in linear time (issue 29)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from reflint import globs
from reflint.settings import path_matches

BAD = "import jax\nx_ref = jax.new_ref(1)\ny = x_ref + 1\n"


@pytest.mark.parametrize("table,key", [
    ('exclude = ["[]"]', "exclude"),
    ('extend-exclude = ["src/[z-a].py"]', "extend-exclude"),
    ('per-file-ignores = {"[!]" = ["REF007"]}', "per-file-ignores"),
])
def test_an_invalid_glob_is_a_one_line_error_naming_the_key(tmp_path, table, key):
    (tmp_path / "pyproject.toml").write_text(f"[tool.reflint]\n{table}\n")
    (tmp_path / "a.py").write_text(BAD)
    r = subprocess.run([sys.executable, "-m", "reflint", "check", "--no-cache", "."],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and "invalid pattern" in lines[0], r.stderr


def test_an_invalid_glob_on_the_command_line(tmp_path):
    (tmp_path / "a.py").write_text(BAD)
    r = subprocess.run([sys.executable, "-m", "reflint", "check", "--exclude", "[b-a]", "."],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--exclude" in r.stderr and "Traceback" not in r.stderr


def test_many_double_star_segments_match_in_linear_time(tmp_path):
    pattern = "**/" * 60 + "x.py"
    path = "/".join(["d"] * 300) + "/y.py"
    start = time.process_time()
    for _ in range(10):
        assert not globs.compile_glob(pattern).match(path)
        assert globs.compile_glob(pattern).match("a/b/x.py")
    assert time.process_time() - start < 2.0
    (tmp_path / "pyproject.toml").write_text(f'[tool.reflint]\nextend-exclude = ["{pattern}"]\n')
    deep = tmp_path / os.path.join(*["d"] * 30)
    deep.mkdir(parents=True)
    (deep / "y.py").write_text(BAD)
    r = subprocess.run([sys.executable, "-m", "reflint", "check", "--no-cache", "."],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "REF007" in r.stdout


@pytest.mark.parametrize("pattern,path,expected", [
    ("*.py", "a.py", True), ("*.py", "a/b.py", False), ("**/*.py", "a/b/c.py", True),
    ("**/*.py", "c.py", True), ("tests/**", "tests/a/b.py", True), ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True), ("a/**/b", "ab", False), ("[ab].py", "b.py", True),
    ("[!ab].py", "b.py", False), ("[a-c]x", "bx", True), ("?.py", "/.py", False),
    ("a[", "a[", True), ("**", "a/b", True), ("a*b*c*d*e*f", "a" * 50 + "f", False),
])
def test_glob_semantics(pattern, path, expected):
    assert globs.compile_glob(pattern).match(path) is expected


def test_path_matches_uses_the_linear_globs(tmp_path):
    assert path_matches(str(tmp_path / "tests" / "x" / "a.py"), "tests/**", str(tmp_path))
    assert not path_matches(str(tmp_path / "src" / "a.py"), "[]", str(tmp_path))
