"""reflint.server.Workers: a worker that crashes or hangs is replaced; the server goes on."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

pytest.importorskip("pygls")

from lsp_helpers import die  # noqa: E402
from reflint import server_worker  # noqa: E402
from reflint.server import Workers, WorkerCrashed, WorkerTimeout  # noqa: E402
from reflint.settings import Settings  # noqa: E402

BUGGY = "import jax\nimport jax.numpy as jnp\n\n\ndef f(x):\n    r = jax.new_ref(x)\n    " \
        "return jnp.sum(r)\n"


def test_a_crashing_worker_is_replaced():
    async def go():
        w = Workers(1, timeout=60)
        try:
            first = await w.call(os.getpid)
            with pytest.raises(WorkerCrashed):
                await w.call(die)
            assert w.restarts == 2  # tried twice: the text itself kills it
            diags = await w.call(server_worker.lint_text, BUGGY, "a.py", Settings())
            assert [d.code for d in diags] == ["REF007"]
            assert await w.call(os.getpid) not in (first, os.getpid())
        finally:
            w.close()

    asyncio.run(go())


def test_a_hanging_worker_is_stopped():
    async def go():
        w = Workers(1, timeout=120)
        try:
            await w.call(os.getpid)  # started and warm (slow on a loaded machine)
            w.timeout = 1.0
            t = time.perf_counter()
            with pytest.raises(WorkerTimeout):
                await w.call(time.sleep, 60)
            assert time.perf_counter() - t < 30
            w.timeout = 120  # a new worker starts: give it time
            diags = await w.call(server_worker.lint_text, BUGGY, "a.py", Settings())
            assert [d.code for d in diags] == ["REF007"]
        finally:
            w.close()

    asyncio.run(go())


def test_lint_text_is_reflint_check():
    from reflint.engine import lint_source

    s = Settings()
    assert server_worker.lint_text(BUGGY, "a.py", s) == lint_source(BUGGY, "a.py", s).diagnostics
    fixed, n, error = server_worker.fix_text(BUGGY, "a.py", s)
    assert (n, error) == (1, None) and "jnp.sum(r[...])" in fixed
    assert server_worker.fix_text("x = 1\n", "a.py", s) == (None, 0, None)


def test_the_signal_path_kills_workers_while_the_pool_lock_is_held():
    # SIGTERM may arrive while the main thread is inside the pool's submit (starting a
    # worker, its lock held): the handler's kill must not wait for that lock (it once did,
    # and the server outlived SIGTERM).
    import threading

    from lsp_raw import alive

    async def go():
        w = Workers(1, timeout=120)
        try:
            pid = await w.call(os.getpid)
            lock = w._pool._shutdown_lock
            with lock:
                done = threading.Event()
                t = threading.Thread(target=lambda: (w.kill_now(), done.set()), daemon=True)
                t.start()
                assert done.wait(10), "kill_now waited for the pool's lock"
            end = time.monotonic() + 20
            while time.monotonic() < end and alive(pid):
                time.sleep(0.1)
            assert not alive(pid)
        finally:
            w.close()

    asyncio.run(go())


def test_grow_starts_every_worker():
    """The pool starts with one worker (launch); ``grow`` starts the others, even while the
    first is idle (a submit alone would hand every job to it): two jobs at once run in two
    processes."""
    async def go():
        w = Workers(2, timeout=60)
        try:
            w.start()
            first = await w.call(os.getpid)
            w.grow()
            pids = set()
            for _ in range(20):
                got = await asyncio.gather(w.call(time.sleep, 0.2), w.call(os.getpid),
                                           w.call(os.getpid))
                pids.update(got[1:])
                if len(pids) == 2:
                    break
            assert first in pids and len(pids) == 2
        finally:
            w.close()

    asyncio.run(go())


def test_the_next_text_of_an_analysed_document_skips_the_ast_stage(monkeypatch):
    """A keystroke in a document whose last text was analysed is analysed without the gate's
    walk, with the findings `reflint check` gives; a text the gate would rule out is still
    checked right, and the text after it asks the gate again."""
    from reflint import engine

    asked = []
    real = engine.gate_verdict
    monkeypatch.setattr(engine, "gate_verdict", lambda *a, **k: asked.append(1) or real(*a, **k))
    monkeypatch.setattr(server_worker, "_ANALYSED", {})
    settings = Settings()
    # The textual pre-filter keeps it (`jax.numpy`, a subscript), the gate rules it out.
    clean = "import jax.numpy as jnp\n\n\ndef f(x):\n    return jnp.sum(x[0])\n"
    edited = BUGGY.replace("r = jax", "rr = jax").replace("sum(r)", "sum(rr)")
    texts = [BUGGY, edited, clean, clean, BUGGY]
    got = [server_worker.lint_text(t, "doc.py", settings) for t in texts]
    checked = [engine.lint_source(t, "doc.py", settings, lazy_fixes=True) for t in texts]
    assert got == [c.diagnostics for c in checked]
    assert checked[2].stage == "gated"
    assert [[d.code for d in g] for g in got] == [["REF007"], ["REF007"], [], [], ["REF007"]]
    # Asked for the first text, not for its edit (the first had a finding), not for the clean
    # text after it (analysed: nothing found), then again for the clean text and the buggy
    # one after it; and once per text by the check just above.
    assert len(asked) == 3 + len(texts)
