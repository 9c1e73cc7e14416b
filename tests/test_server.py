"""``reflint server`` driven over stdio by a real LSP client (pytest-lsp on pygls), as an
editor drives it: diagnostics, quick fixes, noqa, fix-all, hover, configuration, and input
that must not crash or wedge it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402

from lsp_helpers import (ROOT, apply_edits, change_doc, initialize, open_doc,  # noqa: E402
                         published, server_config, workspace_edits)

pytestmark = pytest.mark.asyncio(loop_scope="function")

BUGGY = """import jax
import jax.numpy as jnp


def f(x):
    r = jax.new_ref(x)
    return jnp.sum(r)
"""

RETURNED = """import jax


@jax.jit
def make(x):
    r = jax.new_ref(x)
    return r
"""


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path):
    await initialize(lsp_client, str(tmp_path))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config())
async def client_no_resolve(lsp_client: LanguageClient, tmp_path):
    await initialize(lsp_client, str(tmp_path), resolve=False)
    yield
    await lsp_client.shutdown_session()


def _uri(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return from_fs_path(str(path))


async def _actions(client, uri, rng, only=None) -> list:
    diags = client.diagnostics.get(uri, [])
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=list(diags), only=only))) or []


async def test_open_diagnose_quick_fix_and_clean(client, tmp_path):
    uri = _uri(tmp_path, "a.py", BUGGY)
    open_doc(client, uri, BUGGY)
    diags = await published(client, uri, 1)
    assert [d.code for d in diags] == ["REF007"]
    d = diags[0]
    assert d.source == "reflint"
    assert d.range == types.Range(start=types.Position(line=6, character=19),
                                  end=types.Position(line=6, character=20))
    assert d.code_description is not None and d.code_description.href.endswith("REF007.md")
    assert d.severity == types.DiagnosticSeverity.Warning

    actions = await _actions(client, uri, d.range)
    titles = [a.title for a in actions]
    fix = next(a for a in actions if a.title == "Read the ref with [...]")
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    assert "Suppress with # noqa: REF007" in titles
    fixed = apply_edits(BUGGY, workspace_edits(fix.edit, uri))
    assert fixed == BUGGY.replace("jnp.sum(r)", "jnp.sum(r[...])")
    # The edit is for the version it was computed on.
    assert fix.edit.document_changes[0].text_document.version == 1

    change_doc(client, uri, 2, fixed)
    assert await published(client, uri, 2) == []


async def test_quick_fix_after_a_comment_keystroke_is_built_for_the_text_now(client,
                                                                           tmp_path):
    """The findings of a comment keystroke are the published ones (not analysed again) and
    their fixes are built when a code action asks, from the text the editor has then: the
    edit applies to that text, the comment kept."""
    uri = _uri(tmp_path, "c.py", BUGGY)
    open_doc(client, uri, BUGGY)
    await published(client, uri, 1)
    await asyncio.sleep(0.5)  # the line facts arrive from a worker
    line = BUGGY.split("\n")[6]
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=6, character=len(line)),
                              end=types.Position(line=6, character=len(line))),
            text="  # sum")]))
    text = BUGGY.replace(line, line + "  # sum")
    diags = await published(client, uri, 2)
    assert [d.code for d in diags] == ["REF007"]
    fix = next(a for a in await _actions(client, uri, diags[0].range)
               if a.title == "Read the ref with [...]")
    assert fix.edit.document_changes[0].text_document.version == 2
    assert apply_edits(text, workspace_edits(fix.edit, uri)) == \
        text.replace("jnp.sum(r)", "jnp.sum(r[...])")


async def test_related_information_is_where_the_ref_was_created(client, tmp_path):
    uri = _uri(tmp_path, "r.py", RETURNED)
    open_doc(client, uri, RETURNED)
    diags = await published(client, uri, 1)
    assert [d.code for d in diags] == ["REF001"]
    related = diags[0].related_information
    assert related and related[0].location.uri == uri
    assert related[0].location.range.start == types.Position(line=5, character=8)
    assert related[0].message == "created here"


async def test_noqa_action_suppresses(client, tmp_path):
    uri = _uri(tmp_path, "n.py", BUGGY)
    open_doc(client, uri, BUGGY)
    diags = await published(client, uri, 1)
    actions = await _actions(client, uri, diags[0].range)
    noqa = next(a for a in actions if a.title == "Suppress with # noqa: REF007")
    assert not noqa.is_preferred
    text = apply_edits(BUGGY, workspace_edits(noqa.edit, uri))
    assert "    return jnp.sum(r)  # noqa: REF007\n" in text
    change_doc(client, uri, 2, text)
    assert await published(client, uri, 2) == []


async def test_noqa_action_extends_an_existing_comment(client, tmp_path):
    text = BUGGY.replace("jnp.sum(r)", "jnp.sum(r)  # noqa: E501")
    uri = _uri(tmp_path, "n2.py", text)
    open_doc(client, uri, text)
    diags = await published(client, uri, 1)
    actions = await _actions(client, uri, diags[0].range)
    noqa = next(a for a in actions if a.title.startswith("Suppress"))
    new = apply_edits(text, workspace_edits(noqa.edit, uri))
    assert "# noqa: E501, REF007\n" in new
    change_doc(client, uri, 2, new)
    assert await published(client, uri, 2) == []


async def test_noqa_after_a_multiline_string_not_inside_it(client, tmp_path):
    text = ('import jax\n\n\n@jax.jit\ndef f(x):\n    r = jax.new_ref(x)\n'
            '    return r, """a\nb"""\n')
    uri = _uri(tmp_path, "n3.py", text)
    open_doc(client, uri, text)
    diags = await published(client, uri, 1)
    assert [d.code for d in diags] == ["REF001"]
    actions = await _actions(client, uri, diags[0].range)
    noqa = next(a for a in actions if a.title.startswith("Suppress"))
    new = apply_edits(text, workspace_edits(noqa.edit, uri))
    assert new.endswith('b"""  # noqa: REF001\n')
    change_doc(client, uri, 2, new)
    assert await published(client, uri, 2) == []


FIX_ALL = """import jax
import jax.numpy as jnp


def f(x, y):
    r = jax.new_ref(x)
    s = jax.new_ref(y)
    return jnp.sum(r) + jnp.tanh(s)
"""


@pytest.mark.parametrize("resolve", [True, False])
@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
async def test_fix_all(client, client_no_resolve, tmp_path, resolve):
    c = client if resolve else client_no_resolve
    uri = _uri(tmp_path, "fa.py", FIX_ALL)
    open_doc(c, uri, FIX_ALL)
    diags = await published(c, uri, 1)
    assert [d.code for d in diags] == ["REF007", "REF007"]
    whole = types.Range(start=types.Position(line=0, character=0),
                        end=types.Position(line=8, character=0))
    actions = await _actions(c, uri, whole, only=["source.fixAll"])
    assert [a.kind for a in actions] == ["source.fixAll.reflint"]
    action = actions[0]
    if action.edit is None:
        assert resolve
        action = await c.code_action_resolve_async(action)
    new = apply_edits(FIX_ALL, workspace_edits(action.edit, uri))
    # Exactly what `reflint check --fix` writes.
    path = tmp_path / "cli.py"
    path.write_text(FIX_ALL, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "reflint", "check", "--fix", "--no-cache", "-q",
                    str(path)], cwd=ROOT, capture_output=True, check=False)
    assert new == path.read_text(encoding="utf-8")
    assert "jnp.sum(r[...]) + jnp.tanh(s[...])" in new
    change_doc(c, uri, 2, new)
    assert await published(c, uri, 2) == []


async def test_hover_explains_the_rule(client, tmp_path):
    uri = _uri(tmp_path, "h.py", BUGGY)
    open_doc(client, uri, BUGGY)
    await published(client, uri, 1)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=6, character=19)))
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    assert "REF007" in hover.contents.value and "## Why is this bad?" in hover.contents.value
    nothing = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=0)))
    assert nothing is None


async def test_project_configuration_is_honoured(client, tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text(
        '[tool.reflint]\nignore = ["REF001"]\nper-file-ignores = {"legacy/*.py" = ["REF007"]}\n'
        'extend-exclude = ["vendored"]\n', encoding="utf-8")
    a = _uri(tmp_path, "proj/pkg/a.py", RETURNED + BUGGY.replace("import jax\n", "", 1))
    b = _uri(tmp_path, "proj/legacy/b.py", BUGGY)
    c = _uri(tmp_path, "proj/vendored/c.py", BUGGY)
    d = _uri(tmp_path, "proj/pkg/d.py", BUGGY)
    for uri in (a, b, c, d):
        open_doc(client, uri, (tmp_path / uri.split(str(tmp_path.name) + "/", 1)[1]).read_text())
    assert [x.code for x in await published(client, a, 1)] == ["REF007"]  # REF001 ignored
    assert await published(client, b, 1) == []  # per-file ignore
    assert await published(client, c, 1) == []  # excluded
    assert [x.code for x in await published(client, d, 1)] == ["REF007"]


async def test_target_jax_version_is_honoured(client, tmp_path):
    text = "import jax\n\nx = jax.new_ref(1)\n"
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "pyproject.toml").write_text(
        '[tool.reflint]\ntarget-jax-version = "0.6.0"\n', encoding="utf-8")
    old = _uri(tmp_path, "old/m.py", text)
    new = _uri(tmp_path, "new.py", text)
    open_doc(client, old, text)
    open_doc(client, new, text)
    assert "REF015" in [x.code for x in await published(client, old, 1)]
    assert "REF015" not in [x.code for x in await published(client, new, 1)]


async def test_superseded_versions_are_not_published(client, tmp_path):
    uri = _uri(tmp_path, "s.py", BUGGY)
    open_doc(client, uri, BUGGY)
    await published(client, uri, 1)
    for v in range(2, 21):
        change_doc(client, uri, v, BUGGY + f"\n# edit {v}\n")
    change_doc(client, uri, 21, BUGGY.replace("jnp.sum(r)", "jnp.sum(r[...])"))
    assert await published(client, uri, 21) == []
    await asyncio.sleep(0.3)
    versions = [p.version for _, p in client.published if p.uri == uri]
    assert versions[0] == 1 and versions[-1] == 21
    assert len(versions) <= 3, versions  # intermediate versions coalesced, not each analysed


async def test_syntax_errors_and_half_written_code_recover(client, tmp_path):
    uri = _uri(tmp_path, "half.py", BUGGY)
    open_doc(client, uri, BUGGY)
    await published(client, uri, 1)
    half = BUGGY.replace("return jnp.sum(r)", "return jnp.sum(r")
    change_doc(client, uri, 2, half)
    diags = await published(client, uri, 2)
    assert [d.code for d in diags] == ["REF900"]
    assert diags[0].severity == types.DiagnosticSeverity.Error
    change_doc(client, uri, 3, BUGGY)
    assert [d.code for d in await published(client, uri, 3)] == ["REF007"]


async def test_malformed_edits_do_not_crash_it(client, tmp_path):
    uri = _uri(tmp_path, "m.py", BUGGY)
    open_doc(client, uri, BUGGY)
    await published(client, uri, 1)
    far = types.Position(line=10_000, character=10_000)
    bad = [
        # A range past the end of the document.
        types.TextDocumentContentChangePartial(range=types.Range(start=far, end=far),
                                               text="x = 1\n"),
        # An inverted range.
        types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=5, character=4),
                              end=types.Position(line=1, character=0)), text=""),
    ]
    for i, change in enumerate(bad):
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2 + i),
            content_changes=[change]))
    # An older version than the document has, and a change to a document never opened.
    change_doc(client, uri, 1, BUGGY + "\n")
    change_doc(client, from_fs_path(str(tmp_path / "never.py")), 7, "x = (")
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=from_fs_path(str(tmp_path / "no.py")))))
    # The server is alive and answers for a fresh, valid text.
    change_doc(client, uri, 50, BUGGY)
    assert [d.code for d in await published(client, uri, 50)] == ["REF007"]
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=6, character=19)))
    assert hover is not None


async def test_deep_nesting_does_not_crash_it(client, tmp_path):
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    uri = _uri(tmp_path, "deep.py", "")
    open_doc(client, uri, deep)
    diags = await published(client, uri, 1, timeout=120)
    assert [d.code for d in diags] in ([], ["REF900"])
    other = _uri(tmp_path, "other.py", BUGGY)
    open_doc(client, other, BUGGY)
    assert [d.code for d in await published(client, other, 1)] == ["REF007"]
    change_doc(client, uri, 2, BUGGY)
    assert [d.code for d in await published(client, uri, 2)] == ["REF007"]


async def test_a_slow_document_does_not_block_another(client, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        from startup import kernel_file
    finally:
        sys.path.pop(0)
    # Slow: ~0.5 s of analysis on this machine, several times what the small document takes
    # even with the second worker to start (2,000 lines stopped being slow enough).
    big_text = kernel_file(8000)
    big = _uri(tmp_path, "big.py", big_text)
    small = _uri(tmp_path, "small.py", BUGGY)
    open_doc(client, big, big_text)
    await asyncio.sleep(0.05)
    open_doc(client, small, BUGGY)
    await published(client, small, 1)
    await published(client, big, 1, timeout=120)
    order = [p.uri for _, p in client.published if p.uri in (big, small)]
    assert order == [small, big]


async def test_findings_equal_reflint_check_on_every_fixture(client, tmp_path):
    """Every fixture, opened in the server, gets exactly what `reflint check` reports on the
    same file (positions, codes, messages, fixes)."""
    fixtures = os.path.join(ROOT, "tests", "fixtures")
    work = tmp_path / "fx"
    names = []
    for dirpath, _, files in os.walk(fixtures):
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), fixtures)
                dest = work / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(os.path.join(dirpath, f), dest)
                names.append(rel)
    assert len(names) > 100
    out = subprocess.run([sys.executable, "-m", "reflint", "check", "--format", "json",
                          "--no-cache", "--exit-zero", str(work)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    expected: dict = {}
    for d in json.loads(out):
        expected.setdefault(os.path.relpath(d["path"], work), []).append(d)
    uris = {}
    for rel in names:
        path = work / rel
        uris[rel] = from_fs_path(str(path))
        open_doc(client, uris[rel], path.read_text(encoding="utf-8"))
    total = 0
    for rel in names:
        got = await published(client, uris[rel], 1, timeout=300)
        text = (work / rel).read_text(encoding="utf-8").split("\n")

        def col(line: int, utf16: int) -> int:  # back to 1-based code points
            s = text[line] if line < len(text) else ""
            units = i = 0
            while i < len(s) and units < utf16:
                units += 2 if ord(s[i]) > 0xFFFF else 1
                i += 1
            return i + 1

        mine = sorted((d.range.start.line + 1, col(d.range.start.line, d.range.start.character),
                       d.range.end.line + 1, col(d.range.end.line, d.range.end.character),
                       d.code, d.message) for d in got)
        theirs = sorted((d["line"], d["column"], d["end_line"] or d["line"],
                         d["end_column"] or d["column"], d["code"], d["message"])
                        for d in expected.get(rel, []))
        assert mine == theirs, rel
        total += len(mine)
    assert total > 100  # the fixtures are full of findings: the comparison is not vacuous


UNSAFE = '''import jax
import jax.numpy as jnp


def loss(x, log_ref):
    y = jnp.sin(x) * 2.0
    log_ref[...] = y
    return y


jax.grad(loss)(1.0, jax.new_ref(0.0))
'''


async def test_unsafe_fix_is_marked_and_not_preferred(client, tmp_path):
    uri = _uri(tmp_path, "u.py", UNSAFE)
    open_doc(client, uri, UNSAFE)
    diags = await published(client, uri, 1)
    assert [d.code for d in diags] == ["REF008"]
    assert diags[0].data["fix"] == "unsafe"
    actions = await _actions(client, uri, diags[0].range)
    unsafe = [a for a in actions if a.title.startswith("Wrap the value")]
    assert len(unsafe) == 1
    assert unsafe[0].title.endswith("(unsafe fix: review the change)")
    assert not unsafe[0].is_preferred
    new = apply_edits(UNSAFE, workspace_edits(unsafe[0].edit, uri))
    assert "log_ref[...] = jax.lax.stop_gradient(y)" in new
    # "Fix all" applies safe fixes only: none here, so it is not offered.
    whole = types.Range(start=types.Position(line=0, character=0),
                        end=types.Position(line=11, character=0))
    assert await _actions(client, uri, whole, only=["source.fixAll"]) == []


async def test_keystrokes_in_comments_and_code_get_reflint_checks_findings(client, tmp_path):
    """Typing, one incremental change per character: in a new comment (answered without
    analysing once the line facts are known, reflint.server_reuse), then a noqa comment and
    code (analysed). Every version's diagnostics are reflint check's on its text."""
    from reflint.engine import lint_source
    from reflint.settings import Settings

    path = tmp_path / "k.py"
    uri = _uri(tmp_path, "k.py", BUGGY)
    open_doc(client, uri, BUGGY)
    await published(client, uri, 1)
    await asyncio.sleep(0.5)  # the line facts arrive from a worker
    text, version = BUGGY, 1

    def typed(line: int, col: int, s: str):
        nonlocal text, version
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line, character=col),
                                  end=types.Position(line=line, character=col)),
                text=s)]))
        lines = text.split("\n")
        lines[line] = lines[line][:col] + s + lines[line][col:]
        text = "\n".join(lines)
        return version

    async def same():
        got = await published(client, uri, version)
        want = lint_source(text, str(path), Settings()).diagnostics
        assert sorted((d.range.start.line + 1, d.range.start.character + 1, d.code, d.message)
                      for d in got) == sorted((d.line, d.column, d.code, d.message)
                                              for d in want), text
        return got

    for i, ch in enumerate("# a note"):
        typed(3, i, ch)
        assert [d.code for d in await same()] == ["REF007"]
    for i, ch in enumerate("  # noqa: REF007"):
        typed(6, len("    return jnp.sum(r)") + i, ch)
        await same()
    assert await same() == []
    typed(5, len("    r = jax.new_ref(x)"), "; y = jnp.cos(r)")
    assert [d.code for d in await same()] == ["REF007"]
