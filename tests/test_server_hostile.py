"""The language server under a hostile or careless editor (issue 29): framing errors
resynchronise (or end the session with a message), bad configuration is shown to the user,
``max-file-size`` applies to documents, the time limit is configurable, no worker outlives
the server, and open/close cycles do not grow it."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from lsp_raw import RawClient, alive, children, frame, rss_kb

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")

BAD = "import jax\nx_ref = jax.new_ref(1)\ny = x_ref + 1\n"


@pytest.fixture
def client(tmp_path):
    clients = []

    def make(*args, env=None):
        c = RawClient(str(tmp_path), *args, env=env)
        clients.append(c)
        c.initialize(str(tmp_path))
        return c

    yield make
    for c in clients:
        c.close()


def _open(c, path, text, version=1):
    uri = f"file://{path}"
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": version, "text": text}})
    return uri


def _diagnostics(c, uri, timeout=60):
    msg = c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and
                     m["params"]["uri"] == uri, timeout)
    return msg["params"]["diagnostics"]


@pytest.mark.parametrize("delta", [-7, +40])
def test_a_wrong_content_length_is_survived(client, tmp_path, delta):
    c = client()
    bad = {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
           "params": {"textDocument": {"uri": "file:///x.py"},
                      "position": {"line": 0, "character": 0}}}
    c.send(frame(bad, delta))
    # The next messages get through (a too-large length swallows the start of the next
    # one: send a few).
    for _ in range(3):
        uri = _open(c, tmp_path / f"a{_}.py", BAD)
    diags = _diagnostics(c, uri)
    assert [d["code"] for d in diags] == ["REF007"]
    rid = c.request("shutdown")
    assert c.wait_for(lambda m: m.get("id") == rid, 60) is not None
    shown = c.wait_for(lambda m: m.get("method") == "window/showMessage", 5)
    assert "malformed" in shown["params"]["message"]


def test_an_absurd_content_length_ends_the_session_with_a_message(client):
    c = client()
    c.send(b"Content-Length: 99999999999999\r\n\r\n{}")
    shown = c.wait_for(lambda m: m.get("method") == "window/showMessage", 30)
    assert "corrupt" in shown["params"]["message"]
    assert c.proc.wait(timeout=30) is not None


def test_bad_configuration_is_shown_to_the_user(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.reflint]\nexclude = ["[z-a]"]\n')
    c = client()
    _open(c, tmp_path / "a.py", BAD)
    shown = c.wait_for(lambda m: m.get("method") == "window/showMessage", 60)
    assert "invalid pattern" in shown["params"]["message"]
    assert "exclude" in shown["params"]["message"]
    # And a diagnostic on the configuration file, at the key's line.
    (d,) = _diagnostics(c, f"file://{tmp_path / 'pyproject.toml'}")
    assert d["range"]["start"]["line"] == 1 and "invalid pattern" in d["message"]


def test_max_file_size_applies_to_documents(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.reflint]\nmax-file-size = "1KB"\n')
    c = client()
    uri = _open(c, tmp_path / "big.py", BAD + "# padding\n" * 200)
    (d,) = _diagnostics(c, uri)
    assert d["code"] == "REF904" and "too large" in d["message"]


def _server_phase(c, tmp_path) -> None:
    """Wait until the server has left its start-up phase (reflint.server_front), where
    documents are analysed without time limits: a hover is answered only after it."""
    rid = c.request("textDocument/hover", {"textDocument": {"uri": f"file://{tmp_path}/none.py"},
                                           "position": {"line": 0, "character": 0}})
    assert c.wait_for(lambda m: m.get("id") == rid, 120) is not None


def test_a_slow_analysis_goes_on_in_the_background(client, tmp_path):
    """Past --timeout the user is told, and the findings come when the analysis ends (issue
    29: not a REF904 "gave up")."""
    from reflint.engine import lint_source
    from reflint.settings import Settings

    c = client("--timeout", "0.001")
    _server_phase(c, tmp_path)
    text = BAD * 50
    uri = _open(c, tmp_path / "a.py", text)
    note = c.wait_for(lambda m: m.get("method") == "window/logMessage", 60)
    assert "goes on in the background" in note["params"]["message"]
    assert "--timeout" in note["params"]["message"]
    got = _diagnostics(c, uri, 120)
    want = lint_source(text, str(tmp_path / "a.py"), Settings()).diagnostics
    assert len(want) == 50
    assert sorted((d["range"]["start"]["line"] + 1, d["code"]) for d in got) == \
        sorted((d.line, d.code) for d in want)


def test_the_hard_time_limit_is_configurable(client, tmp_path):
    c = client("--max-analysis-time", "0.001")
    _server_phase(c, tmp_path)
    uri = _open(c, tmp_path / "a.py", BAD * 50)
    (d,) = _diagnostics(c, uri)
    assert d["code"] == "REF904" and "--max-analysis-time" in d["message"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_no_worker_outlives_the_server(client, tmp_path, sig):
    c = client()
    uri = _open(c, tmp_path / "a.py", BAD)
    _diagnostics(c, uri)
    workers = children(c.proc.pid)
    assert workers
    os.kill(c.proc.pid, sig)
    c.proc.wait(timeout=30)
    end = time.monotonic() + 20
    while time.monotonic() < end and any(alive(p) for p in workers):
        time.sleep(0.2)
    assert not [p for p in workers if alive(p)]


def test_open_close_cycles_do_not_grow_the_server(client, tmp_path):
    c = client()

    def cycles(start, n):
        for i in range(start, start + n):
            uri = _open(c, tmp_path / f"doc{i}.py", BAD.replace("1", str(i)))
            _diagnostics(c, uri)
            c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            _diagnostics(c, uri)  # the cleared diagnostics

    cycles(0, 60)  # warm: caches, first-use tables
    before = rss_kb(c.proc.pid)
    cycles(60, 150)
    grown = rss_kb(c.proc.pid) - before
    # Before: about 4 KB per cycle (pygls kept every notification's future).
    assert grown < 200, f"{grown} KB over 150 open/close cycles"
