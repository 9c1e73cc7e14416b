"""A real LSP client (pytest-lsp's, on pygls) driving ``reflint server`` over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
import time

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features
from pygls.protocol import default_converter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append((time.perf_counter(), params))


def make_client() -> LanguageClient:
    """pytest-lsp's test client, also recording every publishDiagnostics with its version."""
    client = LanguageClient(converter_factory=default_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _publish
    register_lsp_features(client, features)
    client.published = []
    return client


def server_config(*args: str) -> ClientServerConfig:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return ClientServerConfig(server_command=[sys.executable, "-m", "reflint", "server", *args],
                              client_factory=make_client, server_env=env)


def capabilities(resolve: bool = True) -> types.ClientCapabilities:
    """A client that takes versioned workspace edits and, if ``resolve``, resolves code
    actions' edits lazily (as VS Code and Neovim do)."""
    code_action = types.CodeActionClientCapabilities(
        code_action_literal_support=types.ClientCodeActionLiteralOptions(
            code_action_kind=types.ClientCodeActionKindOptions(value_set=[
                types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll])),
        resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])
        if resolve else None,
        data_support=True)
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)),
        text_document=types.TextDocumentClientCapabilities(
            code_action=code_action,
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown]),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True,
                code_description_support=True, data_support=True)))


async def initialize(client: LanguageClient, root: str, resolve: bool = True) -> None:
    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities(resolve), root_uri=from_fs_path(root),
        workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(root), name="w")]))


async def published(client: LanguageClient, uri: str, version: int, timeout: float = 60):
    """The diagnostics published for ``uri`` at ``version`` (waits for them)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for _, p in client.published:
            if p.uri == uri and p.version == version:
                return list(p.diagnostics)
        await asyncio.sleep(0.005)
    raise AssertionError(f"no diagnostics for {uri} version {version} within {timeout} s; "
                         f"got {[(p.uri, p.version) for _, p in client.published]}")


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version,
                                             text=text)))


def change_doc(client: LanguageClient, uri: str, version: int, text: str) -> None:
    """Replace the whole text (a full-document change event)."""
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def apply_edits(text: str, edits: list) -> str:
    """Apply LSP TextEdits (UTF-16 positions) to ``text`` as an editor does."""
    lines = text.splitlines(True)

    def offset(pos: types.Position) -> int:
        before = sum(len(line) for line in lines[:pos.line])
        line = lines[pos.line] if pos.line < len(lines) else ""
        units = 0
        i = 0
        while i < len(line) and units < pos.character:
            units += 2 if ord(line[i]) > 0xFFFF else 1
            i += 1
        return before + i

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits),
                   reverse=True)
    for a, b, new in spans:
        text = text[:a] + new + text[b:]
    return text


def workspace_edits(edit: types.WorkspaceEdit, uri: str) -> list:
    if edit.document_changes:
        return [e for dc in edit.document_changes if dc.text_document.uri == uri
                for e in dc.edits]
    return list((edit.changes or {}).get(uri, []))


def die() -> None:
    """Kill the calling process as a crashing native parser would (tests of the workers)."""
    import signal

    os.kill(os.getpid(), signal.SIGSEGV)


def reflint_wrapper(directory) -> str:
    """An executable ``reflint`` in ``directory`` running this checkout's reflint with this
    interpreter (what an editor's configuration names)."""
    path = os.path.join(str(directory), "reflint")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"#!/bin/sh\nPYTHONPATH={ROOT}${{PYTHONPATH:+:$PYTHONPATH}} "
                 f"exec {sys.executable} -m reflint \"$@\"\n")
    os.chmod(path, 0o755)
    return path
