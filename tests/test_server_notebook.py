"""Notebooks in ``reflint server`` (issue 28): a notebook document (LSP notebook sync, VS
Code's ``vscode-notebook-cell:`` cell documents) is linted as ``reflint check`` lints the
``.ipynb``: its code cells as one program, each finding published on its cell's document at
its line in the cell; an ``.ipynb`` opened as a text document gets its findings at their
place in the JSON."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402

from lsp_helpers import ROOT, capabilities, published, server_config  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="function")

CELLS = [
    ("markdown", "# Refs\n"),
    ("code", "%matplotlib inline\nimport jax\nimport jax.numpy as jnp\n"
             "x_ref = jax.new_ref(jnp.zeros(3))\n"),
    ("code", "!pip install jax\ny = jnp.sin(x_ref) + 1\nz = x_ref * 2  # noqa: REF007\n"),
    ("code", "w = jnp.cos(x_ref)"),
]


def notebook_json(cells) -> str:
    nb = {"cells": [{"cell_type": kind, "metadata": {}, "source": src.splitlines(True),
                     **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                    for kind, src in cells],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                      "name": "python3"},
                       "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1) + "\n"


def check_json(path) -> list:
    out = subprocess.run([sys.executable, "-m", "reflint", "check", "--format", "json",
                          "--no-cache", "--exit-zero", str(path)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path):
    caps = capabilities()
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities())
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=from_fs_path(str(tmp_path))))
    yield
    await lsp_client.shutdown_session()


async def test_notebook_cells_get_the_findings_of_reflint_check(client, tmp_path):
    path = tmp_path / "demo.ipynb"
    path.write_text(notebook_json(CELLS), encoding="utf-8")
    nb_uri = from_fs_path(str(path))
    cell_uris = [f"vscode-notebook-cell:{path}#W{i}sZmlsZQ==" for i in range(len(CELLS))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=nb_uri, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code if kind == "code"
                                      else types.NotebookCellKind.Markup, document=u)
                   for (kind, _), u in zip(CELLS, cell_uris)]),
        cell_text_documents=[types.TextDocumentItem(
            uri=u, language_id="python" if kind == "code" else "markdown", version=1,
            text=src) for (kind, src), u in zip(CELLS, cell_uris)]))
    got = {u: await published(client, u, 1) for u in cell_uris[1:]}
    assert cell_uris[0] not in client.diagnostics  # a markdown cell: nothing published
    # reflint check on the same notebook: cell (code cells counted from 1) and line.
    expected = check_json(path)
    assert expected and {d["cell"] for d in expected} == {2, 3}
    mine = sorted((cell_no, d.range.start.line + 1, d.range.start.character + 1, d.code,
                   d.message)
                  for cell_no, u in enumerate(cell_uris[1:], start=1) for d in got[u])
    theirs = sorted((d["cell"], d["line"], d["column"], d["code"], d["message"])
                    for d in expected)
    assert mine == theirs
    (sin,) = [d for d in got[cell_uris[2]] if d.range.start.line == 1]
    assert sin.code == "REF007" and "cell 1, line 4" in sin.message  # made in another cell
    # Fix the read in cell 3 (code cell 2): its finding goes; cell 4's stays.
    fixed = CELLS[2][1].replace("jnp.sin(x_ref)", "jnp.sin(x_ref[...])")
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=nb_uri),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
            text_content=[types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell_uris[2], version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])]))))
    assert await published(client, cell_uris[2], 2) == []
    assert [d.code for d in client.diagnostics[cell_uris[3]]] == ["REF007"]
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=nb_uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in cell_uris]))
    for _ in range(200):
        if not client.diagnostics.get(cell_uris[3]):
            break
        await asyncio.sleep(0.05)
    assert list(client.diagnostics[cell_uris[3]]) == []


async def test_an_ipynb_opened_as_text_gets_its_findings_in_the_json(client, tmp_path):
    path = tmp_path / "demo.ipynb"
    text = notebook_json(CELLS)
    path.write_text(text, encoding="utf-8")
    uri = from_fs_path(str(path))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="json", version=1,
                                             text=text)))
    got = await published(client, uri, 1)
    expected = check_json(path)
    assert sorted(d.code for d in got) == sorted(d["code"] for d in expected)
    lines = text.split("\n")
    for d in got:
        cell_no, line = d.message.split(":", 1)[0].replace("cell ", "").split(", line ")
        (theirs,) = [e for e in expected if e["cell"] == int(cell_no) and
                     e["line"] == int(line) and e["message"] in d.message]
        json_line = lines[d.range.start.line]
        # The range is on the cell's source string, at the finding's text.
        src_line = [s for k, s in CELLS if k == "code"][theirs["cell"] - 1].splitlines()[
            theirs["line"] - 1]
        assert json.dumps(src_line)[1:-1] in json_line
        at = json_line[d.range.start.character:]
        assert at.startswith(src_line[theirs["column"] - 1:][:5])
    # Not a notebook: REF900, not a crash.
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json", encoding="utf-8")
    bad_uri = from_fs_path(str(bad))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=bad_uri, language_id="json", version=1,
                                             text="{not json")))
    (d,) = await published(client, bad_uri, 1)
    assert d.code == "REF900" and "not a valid notebook" in d.message
