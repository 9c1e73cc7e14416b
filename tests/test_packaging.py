"""The distribution name: ``reflint`` on the package index is another project, so reflint is
published as ``jax-reflint`` (the import package and the ``reflint`` command stay). Every
install line in the docs, the CLI's own hints and the pre-commit docs must use that name."""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIST = "jax-reflint"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_distribution_name_is_not_the_taken_one():
    project = _project()
    assert project["name"] == DIST
    assert project["scripts"]["reflint"] == "reflint.cli:main"


def test_self_referencing_extras_use_the_distribution_name():
    for name, reqs in _project()["optional-dependencies"].items():
        for r in reqs:
            assert not re.match(r"reflint\[", r), (name, r)


def _texts():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "reflint").rglob("*.py")), ROOT / ".ci" / "run"]
    for f in files:
        yield f, f.read_text(encoding="utf-8")


# `pip install reflint`, `pip install 'reflint[server]'`, `pip install "reflint>=0.1"`.
_WRONG = re.compile(r"pip install\s+(?:-U\s+|--upgrade\s+)?['\"]?reflint(?![-\w])")


@pytest.mark.parametrize("path,text", list(_texts()), ids=lambda v: str(v)[-40:])
def test_no_install_line_names_the_other_project(path, text):
    bad = [m.group(0) for m in _WRONG.finditer(text)]
    assert not bad, f"{path}: {bad}"


def test_cli_hints_name_the_distribution(capsys, monkeypatch):
    from reflint import cli

    source = (ROOT / "reflint" / "cli.py").read_text()
    assert "pip install 'jax-reflint[runtime]'" in source
    assert "pip install 'jax-reflint[server]'" in source


def test_pre_commit_docs_name_a_rev_and_how_to_get_one():
    text = (ROOT / "docs" / "integrations" / "pre-commit.md").read_text()
    m = re.search(r"^\s+rev:\s*(\S+)", text, re.M)
    assert m, "pre-commit.md names no rev"
    version = _project()["version"]
    assert m.group(1) == f"v{version}", "rev must be the tag of the current version"
    assert "commit SHA" in text and "git ls-remote" in text


def test_pre_commit_hooks_install_this_project():
    # pre-commit installs the hook repository itself (language: python), so the hooks run
    # this checkout's `reflint` command whatever the distribution is called.
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "entry: reflint check" in text
    assert "language: python" in text
