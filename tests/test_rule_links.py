"""Rule links point to the rule pages' web location (reflint.docs.RULES_URL, the one place
that says where): the language server's codeDescription.href, SARIF's helpUri, `reflint rule`
and `reflint rules --format json`. Every code reflint reports has its page in docs/rules/;
REFLINT_DOCS_URL overrides the location (a template with {code}, a base, or empty: off)."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

from reflint import docs
from reflint.cli import main
from reflint.output import sarif_rules

ROOT = pathlib.Path(__file__).resolve().parent.parent
CODES = [row[0] for row in docs.rule_help()]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.fixture(autouse=True)
def default_location(monkeypatch):
    monkeypatch.delenv("REFLINT_DOCS_URL", raising=False)


@pytest.mark.parametrize("code", CODES)
def test_every_code_links_to_its_page_in_the_repository(code):
    url = docs.doc_url(code)
    prefix = docs.REPOSITORY_URL + "/blob/main/"
    assert url.startswith(prefix)
    assert (ROOT / url[len(prefix):]).is_file(), "run: python -m reflint.docs docs/rules"
    assert url.endswith(f"docs/rules/{code}.md")


def test_meta_pages_are_current():
    for code in docs.META_DOCS:
        assert (ROOT / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8") == \
            docs.render_meta(code)


def test_the_repository_url_is_the_same_everywhere():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["urls"]["Repository"] == docs.REPOSITORY_URL
    assert all(u.startswith(docs.REPOSITORY_URL + "/") for k, u in project["urls"].items()
               if k != "Repository")
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert package["repository"]["url"] == docs.REPOSITORY_URL


@pytest.mark.parametrize("value,expected", [
    ("https://example.org/reflint/{code}.html", "https://example.org/reflint/REF007.html"),
    ("https://example.org/mirror/docs/rules/", "https://example.org/mirror/docs/rules/REF007.md"),
    ("https://example.org/mirror/docs/rules", "https://example.org/mirror/docs/rules/REF007.md"),
    ("", None),
    ("  ", None),
])
def test_reflint_docs_url_overrides_the_location(monkeypatch, value, expected):
    monkeypatch.setenv("REFLINT_DOCS_URL", value)
    assert docs.doc_url("REF007") == expected


def test_sarif_help_uri_is_the_web_page():
    rules = {r["id"]: r for r in sarif_rules()}
    assert set(rules) == set(CODES)
    for code, r in rules.items():
        assert r["helpUri"] == docs.doc_url(code)


def test_sarif_has_no_help_uri_when_links_are_off(monkeypatch):
    monkeypatch.setenv("REFLINT_DOCS_URL", "")
    assert not any("helpUri" in r for r in sarif_rules())


@pytest.mark.parametrize("code", ["REF007", "ref-returned", "REF904"])
def test_reflint_rule_ends_with_the_page(capsys, code):
    assert main(["rule", code]) == 0
    out = capsys.readouterr().out
    expected = "REF001" if code == "ref-returned" else code
    assert out.rstrip("\n").splitlines()[-1] == f"Documentation: {docs.doc_url(expected)}"


def test_reflint_rules_json_has_the_urls(capsys):
    assert main(["rules", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["code"]: r["url"] for r in rows} == {c: docs.doc_url(c) for c in
                                                   {r["code"] for r in rows}}


def test_server_code_description_is_the_web_page(monkeypatch):
    pytest.importorskip("pygls")
    from reflint import server_front as server

    monkeypatch.setattr(server, "_HREFS", {})
    assert server.doc_href("REF007") == docs.doc_url("REF007")
    monkeypatch.setattr(server, "_HREFS", {})
    monkeypatch.setenv("REFLINT_DOCS_URL", "https://example.org/{code}")
    assert server.doc_href("REF013") == "https://example.org/REF013"
    monkeypatch.setattr(server, "_HREFS", {})
    monkeypatch.setenv("REFLINT_DOCS_URL", "")
    assert server.doc_href("REF013").startswith("file://")  # links off: the local page
