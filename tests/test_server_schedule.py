"""When ``reflint server`` analyses an edited document ("latest wins", the default): at once
when no analysis of the document runs; while one runs, the edits that arrive are coalesced
and only the newest text is analysed when it ends; a result for a superseded text is not
published. Driven in this process, with a worker pool whose analyses end when the test says
(no timing)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace import Workspace  # noqa: E402

from reflint import server_worker  # noqa: E402
from reflint.server import DocState, create_server  # noqa: E402
from reflint.server_front import Workers, parse_args  # noqa: E402

asyncio_test = pytest.mark.asyncio(loop_scope="function")

URI = "untitled:Untitled-1"


def _text(n: int) -> str:
    """A document with ``n`` findings (each a different text)."""
    body = "".join(f"    r{i} = jax.new_ref(x)\n    s{i} = jnp.sum(r{i})\n" for i in range(n))
    return f"import jax\nimport jax.numpy as jnp\n\n\ndef f(x):\n{body}    return x\n"


class GatedPool(Workers):
    """Runs each call in this process; an analysis (``lint_text``) waits for its gate."""

    def __init__(self):
        super().__init__(1, None, False)
        self.texts: list = []  # the texts analysed, in order
        self.gates: list = []

    async def call(self, fn, *args, future=None):
        if fn is server_worker.lint_text:
            gate = asyncio.Event()
            self.texts.append(args[0])
            self.gates.append(gate)
            await gate.wait()
        return fn(*args)


async def _until(condition, what: str, limit: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit  # a bound on a wait, not a measurement
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.001)


def _server(debounce=None):
    pool = GatedPool()
    server = create_server(pool) if debounce is None else create_server(pool, debounce)
    server.protocol._workspace = Workspace(None, types.TextDocumentSyncKind.Incremental)
    sent: list = []
    server.send_json = lambda method, params: sent.append(
        (params["version"], len(params["diagnostics"])))
    return server, pool, sent


def _edit(server, version: int, text: str) -> None:
    server.workspace.put_text_document(types.TextDocumentItem(
        uri=URI, language_id="python", version=version, text=text))
    if URI not in server.docs:
        server.docs[URI] = DocState(URI)
    server.schedule(URI, server.debounce)  # what didOpen / didChange do


@asyncio_test
async def test_edits_during_an_analysis_coalesce_and_the_newest_wins():
    server, pool, sent = _server()
    assert server.debounce == 0
    _edit(server, 1, _text(1))
    await _until(lambda: len(pool.texts) == 1, "the first analysis starts")
    for v in range(2, 6):  # typed while version 1 is analysed
        _edit(server, v, _text(v))
    for _ in range(100):
        await asyncio.sleep(0)
    assert pool.texts == [_text(1)]  # one analysis of the document at a time
    pool.gates[0].set()
    await _until(lambda: len(pool.texts) == 2, "the newest text is analysed")
    assert pool.texts[1] == _text(5)  # versions 2-4: never analysed
    assert sent == []  # version 1's findings are for a superseded text
    pool.gates[1].set()
    await _until(lambda: sent, "version 5 is published")
    assert sent == [(5, 5)]
    # Idle again: the next edit is analysed at once, without waiting for another.
    _edit(server, 6, _text(2))
    await _until(lambda: len(pool.texts) == 3, "an edit of an idle document is analysed")
    pool.gates[2].set()
    await _until(lambda: len(sent) == 2, "version 6 is published")
    assert sent[-1] == (6, 2)


@asyncio_test
async def test_a_debounce_waits_for_the_last_edit():
    server, pool, sent = _server(debounce=0.05)
    _edit(server, 1, _text(1))
    _edit(server, 2, _text(2))
    _edit(server, 3, _text(3))
    await _until(lambda: len(pool.texts) == 1, "the analysis after the pause")
    await asyncio.sleep(0.2)  # let a wrongly kept timer of an older edit fire
    assert pool.texts == [_text(3)]  # only the last edit's text, once
    pool.gates[0].set()
    await _until(lambda: sent, "version 3 is published")
    assert sent == [(3, 3)]


def test_the_debounce_option():
    assert parse_args([]).debounce == 0
    assert parse_args(["--debounce", "0.2"]).debounce == 0.2
