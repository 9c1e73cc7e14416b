"""reflint.server_front: ``reflint server`` answers ``initialize`` and publishes the first
document's diagnostics before it has imported pygls and lsprotocol (issue 23), with the
capabilities pygls would have computed."""

from __future__ import annotations

import json
import os
import textwrap
import time

import pytest

pytest.importorskip("pygls")

from lsp_raw import RawClient  # noqa: E402

BUGGY = "import jax\nimport jax.numpy as jnp\n\n\ndef f(x):\n    r = jax.new_ref(x)\n" \
        "    return jnp.sum(r)\n"


@pytest.mark.parametrize("client_caps", [
    {},
    {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
    {"general": {"positionEncodings": ["utf-32"]}},
    {"general": {"positionEncodings": ["latin-1"]}},
    {"textDocument": {"synchronization": {"willSave": True, "willSaveWaitUntil": True,
                                          "didSave": True}}},
    {"notebookDocument": {"synchronization": {"executionSummarySupport": True}}},
])
def test_the_early_capabilities_are_pyglss(client_caps):
    from lsprotocol import types
    from pygls.capabilities import ServerCapabilitiesBuilder

    from reflint.server import create_server
    from reflint.server_front import capabilities, position_encoding

    server = create_server(1, processes=False)
    p = server.protocol
    caps = p._converter.structure(client_caps, types.ClientCapabilities)
    encoding = ServerCapabilitiesBuilder.choose_position_encoding(caps)
    built = ServerCapabilitiesBuilder(
        caps, set({**p.fm.features, **p.fm.builtin_features}), p.fm.feature_options,
        list(p.fm.commands), server._text_document_sync_kind, server._notebook_document_sync,
        encoding).build()
    theirs = json.loads(json.dumps(p._converter.unstructure(built)))
    mine = capabilities(position_encoding(client_caps), client_caps)
    # pygls says willSave/willSaveWaitUntil only to a client that can send them (false).
    for key in ("willSave", "willSaveWaitUntil"):
        assert theirs["textDocumentSync"].pop(key, False) is False
        assert mine["textDocumentSync"].pop(key) is False
    assert mine == theirs


SLOW_IMPORT = '''
import importlib.machinery, os, sys, time


class _SlowLoader:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        time.sleep(float(os.environ["REFLINT_TEST_SLOW_LSP"]))
        open(os.environ["REFLINT_TEST_MARK"], "w").close()
        self.loader.exec_module(module)


class _Slow:
    """Delays the import of lsprotocol.types (what pygls needs first), as a slow disk or
    machine would (in the module's loader: the global import lock is not held)."""
    def find_spec(self, name, path=None, target=None):
        if name != "lsprotocol.types" or not os.environ.get("REFLINT_TEST_SLOW_LSP"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _SlowLoader(spec.loader)
        return spec


sys.meta_path.insert(0, _Slow())
'''


def test_initialize_and_first_diagnostics_before_pygls_is_imported(tmp_path):
    """With lsprotocol's import made 60 s slow, the editor still gets the answer to
    ``initialize`` and the first document's diagnostics (from the start-up phase)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(SLOW_IMPORT))
    mark = tmp_path / "imported"
    root = tmp_path / "w"
    root.mkdir()
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")]),
        "REFLINT_TEST_SLOW_LSP": "60", "REFLINT_TEST_MARK": str(mark)}
    c = RawClient(str(root), env=env)
    try:
        t = time.monotonic()
        c.initialize(str(root), timeout=50)
        (root / "a.py").write_text(BUGGY)
        uri = f"file://{root}/a.py"
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": BUGGY}})
        msg = c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics", 50)
        assert time.monotonic() - t < 55
        assert not mark.exists()  # pygls's types are not imported yet
        assert msg["params"]["uri"] == uri and msg["params"]["version"] == 1
        (d,) = msg["params"]["diagnostics"]
        assert d["code"] == "REF007" and d["range"]["start"] == {"line": 6, "character": 19}
        assert d["source"] == "reflint" and d["data"] == {"name": "ref-used-as-array",
                                                          "fix": "safe"}
    finally:
        c.close()


def test_the_start_up_phase_hands_over(tmp_path):
    """Messages read before the server phase (a change, a hover, a second document) are
    handled in order after it: the editor sees one consistent session."""
    root = tmp_path
    c = RawClient(str(root))
    try:
        c.initialize(str(root))
        uri = f"file://{root}/a.py"
        (root / "a.py").write_text(BUGGY)
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": BUGGY}})
        fixed = BUGGY.replace("jnp.sum(r)", "jnp.sum(r[...])")
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": fixed}]})
        rid = c.request("textDocument/hover", {"textDocument": {"uri": uri},
                                               "position": {"line": 6, "character": 20}})
        assert c.wait_for(lambda m: m.get("id") == rid, 120) is not None
        msg = c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and
                         m["params"].get("version") == 2, 120)
        assert msg["params"]["diagnostics"] == []
        rid = c.request("shutdown")
        assert c.wait_for(lambda m: m.get("id") == rid, 60)["result"] is None
    finally:
        c.close()


class _Pool:
    """Workers whose analyses end when the test says (``futures``)."""

    def __init__(self):
        self.futures = []

    def submit(self, fn, *args):
        from concurrent.futures import Future

        f = Future()
        self.futures.append(f)
        return f

    def grow(self):
        pass


def _message(method, params, msg_id=None) -> tuple:
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        msg["id"] = msg_id
    return ("message", json.dumps(msg).encode())


def test_the_server_phase_waits_for_the_first_documents_diagnostics(tmp_path):
    """reflint.server (pygls) is imported once the documents opened at start-up are
    published (``Front.go``), not while their analyses need the CPU; at once when the
    editor asks for something only the server phase answers, or opens nothing to analyse."""
    import io
    import queue

    from reflint.server_front import Front

    (tmp_path / "a.py").write_text(BUGGY)
    uri = f"file://{tmp_path}/a.py"
    for then, go_before_result in (("nothing", False), ("hover", True), ("text", False)):
        pool = _Pool()
        front = Front(pool, io.BytesIO())
        front.project = False
        events: queue.Queue = queue.Queue()
        front.handle(_message("initialize", {"rootUri": f"file://{tmp_path}",
                                             "capabilities": {}}, 1), events)
        front.handle(_message("initialized", {}), events)
        assert not front.go.is_set()
        front.handle(_message("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": BUGGY}}), events)
        assert len(pool.futures) == 1 and not front.go.is_set()
        if then == "hover":
            front.handle(_message("textDocument/hover", {
                "textDocument": {"uri": uri}, "position": {"line": 6, "character": 20}}, 2),
                events)
        elif then == "text":
            front.handle(_message("textDocument/didOpen", {"textDocument": {
                "uri": f"file://{tmp_path}/notes.txt", "languageId": "plaintext",
                "version": 1, "text": "x"}}), events)
        assert front.go.is_set() == go_before_result, then
        pool.futures[0].set_result(([], None))
        front.handle(events.get(timeout=5), events)  # the result: published
        assert front.go.is_set()
        assert b"publishDiagnostics" in front.out.getvalue()
    # Only a document reflint does not analyse: nothing to wait for.
    front = Front(_Pool(), io.BytesIO())
    front.handle(_message("initialize", {"capabilities": {}}, 1), queue.Queue())
    front.handle(_message("textDocument/didOpen", {"textDocument": {
        "uri": f"file://{tmp_path}/notes.txt", "languageId": "plaintext", "version": 1,
        "text": "x"}}), queue.Queue())
    assert front.go.is_set()
