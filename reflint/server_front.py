"""The first moments of ``reflint server``, on the standard library only.

Importing the protocol machinery (lsprotocol's types and pygls: ~0.5 CPU-s) and the analysis
(reflint.analysis, in the workers) takes long enough for an editor to notice. So ``reflint
server`` starts here: it starts the worker processes at once, and reads the editor's
messages itself. It answers ``initialize`` at once (the capabilities are static,
``capabilities``), and sends each document opened meanwhile to a worker, publishing its
diagnostics as soon as they exist (JSON built by ``diagnostic_json``, the same function the
server uses later). reflint.server is imported in a thread once those are published, or as
soon as the editor sends anything else (``Front.go``; at most ``GO_TIMEOUT`` later): on two
cores, importing it meanwhile would take the CPU the first analyses need (launch to first
diagnostics: ~420 → ~300 ms). When it is imported, the messages read so far are handed to it
in order (its own answer to ``initialize`` is dropped: the editor has one) and it serves the
rest of the session.

Also here, because both phases use them: the worker pool (``Workers``), the reader of the
message stream (``FrameReader``: resynchronises after a malformed frame) and the conversion
of a reflint Diagnostic to LSP's JSON.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import sys
import threading
from typing import Optional

from . import server_project, server_worker

log = logging.getLogger("reflint.server")

# Seconds after the last change before a document is analysed. 0: "latest wins": an edit is
# analysed at once unless its document is being analysed; then only the newest text is kept,
# and analysed when the running analysis ends (edits typed meanwhile coalesce).
DEFAULT_DEBOUNCE = 0.0
DEFAULT_TIMEOUT = 30.0  # seconds before a slow analysis is reported as still running
DEFAULT_WORKERS = 2
# The longest the server phase's import waits for the first documents' analyses (seconds).
GO_TIMEOUT = 1.0
FIX_ALL_KIND = "source.fixAll.reflint"
_LINE_SPLIT = re.compile(r"\r\n|\r|\n")  # LSP's line ends (the engine's too)

# One message may not be larger than this: a Content-Length above it ends the session (a
# larger one is a corrupt header, and reading it would hold the whole stream).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r?\n\Z", re.I)


class WorkerCrashed(Exception):
    """The worker process died while analysing (twice: the text itself kills it)."""


class WorkerTimeout(Exception):
    """The analysis ran past the timeout; its worker was stopped."""


class Workers:
    """A pool of worker processes that is replaced when one of them dies or hangs.

    ``call`` runs a function of reflint.server_worker in a worker. If the pool breaks (a
    worker was killed by a signal: every call in flight fails with it), the pool is replaced
    and the call is tried once more, so a crash caused by another document costs a retry;
    a text that crashes a worker twice raises WorkerCrashed. ``timeout`` (None: none) bounds
    one call; past it the worker is stopped and WorkerTimeout raised."""

    def __init__(self, workers: int = DEFAULT_WORKERS, timeout: Optional[float] = None,
                 processes: bool = True):
        self.workers = max(1, workers)
        self.timeout = timeout
        self.processes = processes
        self._pool = None
        self.restarts = 0

    def _get(self, first: Optional[int] = None):
        """The pool (started if needed); ``first``: start only that many workers for now
        (``grow`` starts the others)."""
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            if self.processes:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                try:
                    # spawn: the server has threads (asyncio, pygls); a forked child would
                    # inherit their locks in any state.
                    self._pool = ProcessPoolExecutor(
                        self.workers, mp_context=multiprocessing.get_context("spawn"),
                        initializer=server_worker.watch_parent, initargs=(os.getpid(),))
                    if first is not None and first < self.workers and \
                            hasattr(self._pool, "_max_workers"):
                        # ProcessPoolExecutor starts processes on demand, up to this
                        # (read at each submit): the others start when ``grow`` is called.
                        self._pool._max_workers = first
                        self._growing = self._pool
                    for _ in range(first or self.workers):
                        self._pool.submit(server_worker.warm_up)
                except (OSError, ValueError, NotImplementedError) as e:
                    log.warning("no worker processes (%s): analysing in threads", e)
                    self.processes = False
            if not self.processes:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="reflint")
        return self._pool

    def start(self):
        """Start the pool with one worker: at launch the server's own imports and that
        worker's compete for the CPU until the first document's findings are out; ``grow``
        starts the others."""
        return self._get(first=1)

    def grow(self) -> None:
        pool = getattr(self, "_growing", None)
        if pool is not None and pool is self._pool:
            self._growing = None
            pool._max_workers = self.workers
            # A submit starts a process only when no worker is idle: the first, idle once
            # warm, would take every job. Start the others now.
            spawn = getattr(pool, "_spawn_process", None)
            processes = getattr(pool, "_processes", None)
            if spawn is not None and isinstance(processes, dict):
                try:
                    while len(processes) < self.workers:
                        spawn()
                except Exception:  # noqa: BLE001 - the jobs below start them, or the next
                    pass
            for _ in range(self.workers - 1):
                try:
                    pool.submit(server_worker.warm_up)
                except Exception:  # noqa: BLE001 - a broken pool is replaced on its next use
                    break

    def _replace(self, pool, kill: bool = False) -> None:
        if self._pool is not pool:
            return  # another call replaced it already
        self._pool = None
        self.restarts += 1
        from concurrent.futures import ProcessPoolExecutor

        if kill and isinstance(pool, ProcessPoolExecutor):
            terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
            if terminate is not None:
                terminate()
            else:
                for p in list((getattr(pool, "_processes", None) or {}).values()):
                    try:
                        p.kill()
                    except Exception:  # noqa: BLE001 - already gone
                        pass
        try:
            pool.shutdown(wait=False, cancel_futures=True)
        except Exception:  # noqa: BLE001 - a broken pool may complain; it is dropped anyway
            pass

    def submit(self, fn, *args):
        """A concurrent.futures Future of ``fn(*args)`` in a worker (no retry, no time
        limit: the start-up phase's early analyses), or None if none can be started."""
        try:
            return self._get().submit(fn, *args)
        except Exception:  # noqa: BLE001 - the server phase analyses it again
            return None

    async def call(self, fn, *args, future=None):
        """``fn(*args)`` in a worker (``future``: the Future of a call already submitted)."""
        import asyncio
        from concurrent.futures.process import BrokenProcessPool

        for attempt in (1, 2):
            pool = self._pool
            if future is None:
                pool = self._get()
                try:
                    future = pool.submit(fn, *args)
                except (BrokenProcessPool, RuntimeError):
                    self._replace(pool)
                    continue
                except OSError as e:  # processes cannot be started here: use threads
                    log.warning("no worker processes (%s): analysing in threads", e)
                    self.processes = False
                    self._replace(pool)
                    continue
            try:
                return await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
            except BrokenProcessPool:
                future = None
                self._replace(pool)
                if attempt == 2:
                    raise WorkerCrashed() from None
            except asyncio.TimeoutError:
                self._replace(pool, kill=True)
                raise WorkerTimeout() from None
        raise WorkerCrashed()

    def close(self) -> None:
        if self._pool is not None:
            self._replace(self._pool, kill=True)

    def kill_now(self) -> None:
        """Kill the worker processes without taking any lock: for a signal handler, which may
        run while this thread holds the pool's own lock (inside ``submit``, starting a
        worker), where ``close`` would wait for it forever."""
        pool = self._pool
        try:
            processes = list((getattr(pool, "_processes", None) or {}).values())
        except Exception:  # noqa: BLE001 - changed while copied: the workers watch the server
            processes = []
        for p in processes:
            try:
                p.kill()
            except Exception:  # noqa: BLE001 - already gone
                pass


# -- the message stream ----------------------------------------------------------------------

class FrameReader(threading.Thread):
    """Reads LSP frames from a binary stream and hands each event to ``sink``:
    ("message", body bytes), ("fatal", text) (a Content-Length beyond MAX_MESSAGE_BYTES: the
    session ends), ("eof", None). Unlike pygls's reader, a header is recognised at the end of
    any line, so after a message whose Content-Length was too small (its tail is read as a
    header line) or too large (it swallowed the next ones) the next header found
    resynchronises the stream. ``redirect`` changes the sink (the server phase's queue)."""

    def __init__(self, stream, sink):
        super().__init__(name="reflint-reader", daemon=True)
        self.stream = stream
        self.sink = sink
        self._lock = threading.Lock()

    def emit(self, event) -> None:
        with self._lock:
            self.sink(event)

    def redirect(self, sink, backlog: "queue.Queue") -> None:
        """Send the events not yet taken from ``backlog`` (in order) and all later ones to
        ``sink``."""
        with self._lock:
            while True:
                try:
                    sink(backlog.get_nowait())
                except queue.Empty:
                    break
            self.sink = sink

    def run(self) -> None:
        length = 0
        try:
            while True:
                line = self.stream.readline()
                if not line:
                    break
                m = _CONTENT_LENGTH.search(line)
                if m:
                    length = int(m.group(1))
                    if length > MAX_MESSAGE_BYTES:
                        self.emit(("fatal", f"a message from the editor declares {length:,} "
                                            f"bytes (more than {MAX_MESSAGE_BYTES:,}): the "
                                            f"stream is corrupt; the server stops"))
                        return
                    continue
                if not length or line.strip():
                    continue  # another header, or noise between messages
                body = self.stream.read(length)
                length = 0
                if not body:
                    break
                self.emit(("message", body))
        except Exception:  # noqa: BLE001 - a closed stream, a closed event loop: the end
            pass
        finally:
            try:
                self.emit(("eof", None))
            except Exception:  # noqa: BLE001 - nobody listens any more
                pass


def frame(obj) -> bytes:
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


# -- capabilities and diagnostics as JSON ------------------------------------------------------

_ENCODINGS = ("utf-8", "utf-16", "utf-32")


def position_encoding(client_capabilities) -> str:
    """pygls's choice (ServerCapabilitiesBuilder.choose_position_encoding): the client's first
    supported encoding, else UTF-16."""
    general = client_capabilities.get("general") if isinstance(client_capabilities, dict) \
        else None
    encodings = general.get("positionEncodings") if isinstance(general, dict) else None
    for e in encodings or ():
        if e in _ENCODINGS:
            return e
    return "utf-16"


NOTEBOOK_SELECTOR = [{"notebook": {"notebookType": "jupyter-notebook"},
                      "cells": [{"language": "python"}]}]


def capabilities(encoding: str, client_capabilities=None) -> dict:
    """The server's capabilities, as reflint.server's features make pygls build them
    (tests/test_server_start.py compares the two): notebook sync to a client that has it."""
    caps = {
        "positionEncoding": encoding,
        "textDocumentSync": {"openClose": True, "change": 2, "willSave": False,
                             "willSaveWaitUntil": False, "save": {"includeText": False}},
        "hoverProvider": True,
        "codeActionProvider": {"codeActionKinds": ["quickfix", "source.fixAll", FIX_ALL_KIND],
                               "resolveProvider": True},
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                      "fileOperations": {}},
    }
    if isinstance(client_capabilities, dict) and client_capabilities.get("notebookDocument"):
        caps["notebookDocumentSync"] = {"notebookSelector": NOTEBOOK_SELECTOR, "save": False}
    return caps


def units(s: str, encoding: str) -> int:
    """The length of ``s`` in the position encoding's code units."""
    if encoding == "utf-32" or s.isascii():
        return len(s)
    if encoding == "utf-8":
        return len(s.encode("utf-8", "surrogatepass"))
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def position(lines: list, line: int, column: int, encoding: str) -> dict:
    """A reflint position (1-based line, 1-based column in code points) for the client
    (0-based, in the negotiated position encoding)."""
    li = max(line - 1, 0)
    ci = max(column - 1, 0)
    if li >= len(lines):
        return {"line": len(lines), "character": 0}
    return {"line": li, "character": units(lines[li][:ci], encoding)}


def range_json(lines: list, line, column, end_line, end_column, encoding: str) -> dict:
    start = position(lines, line, column, encoding)
    end = position(lines, end_line or line, end_column or column, encoding)
    if (end["line"], end["character"]) < (start["line"], start["character"]):
        end = start
    return {"start": start, "end": end}


def diagnostic_json(d, lines: list, uri: str, encoding: str) -> dict:
    """A reflint Diagnostic as an LSP Diagnostic (JSON); ``lines``: the text's lines."""
    out = {"range": range_json(lines, d.line, d.column, d.end_line, d.end_column, encoding),
           "severity": 1 if d.code == "REF900" else 2,
           "code": d.code}
    href = doc_href(d.code)
    if href:
        out["codeDescription"] = {"href": href}
    out["source"] = "reflint"
    out["message"] = d.message
    if d.related is not None:
        r = d.related
        out["relatedInformation"] = [{
            "location": {"uri": uri, "range": range_json(lines, r.line, r.column, r.line,
                                                         r.column, encoding)},
            "message": r.message or "the ref was created here"}]
    out["data"] = {"name": d.name, "fix": d.fix.applicability if d.fix else None}
    return out


def split_lines(text: str) -> list:
    return _LINE_SPLIT.split(text)


_HREFS: dict = {}


def doc_href(code: str) -> Optional[str]:
    """The rule's documentation page: its web location (reflint.docs.doc_url: RULES_URL or
    ``REFLINT_DOCS_URL``); with links turned off (``REFLINT_DOCS_URL=""``) the page in the
    ``docs/rules/`` folder next to the installed package (a checkout or an editable install)
    as a ``file://`` URL; None when there is neither (hover still shows the text)."""
    if code not in _HREFS:
        from pygls.uris import from_fs_path

        from .docs import doc_url

        href = doc_url(code)
        if href is None:
            here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            page = os.path.join(here, "docs", "rules", f"{code}.md")
            if not os.path.exists(page):
                page = os.path.join(here, "docs", "rules", "README.md")
            href = from_fs_path(page) if os.path.exists(page) else None
        _HREFS[code] = href
    return _HREFS[code]


def document_path(uri: str) -> str:
    """The file system path of a document (a name relative to the workspace for an unsaved
    buffer such as ``untitled:Untitled-1``)."""
    from pygls.uris import to_fs_path

    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return path
    name = uri.rsplit("/", 1)[-1].rsplit(":", 1)[-1] or "untitled"
    return name if name.endswith((".py", ".pyi")) else name + ".py"


def is_python(uri: str, language_id: Optional[str] = None) -> bool:
    if language_id is not None:
        return language_id == "python"
    return uri.endswith((".py", ".pyi"))


# -- the start-up phase --------------------------------------------------------------------

class Front:
    """What the server does until reflint.server is imported (see the module's doc)."""

    def __init__(self, pool: Workers, out, resolver_factory=None):
        self.pool = pool
        self.out = out
        self.pending: list = []  # the events read so far, for the server, in order
        self.suppress: set = set()  # ids of requests answered here
        self.encoding = "utf-16"
        self.root: Optional[str] = None
        self.folders: list = []  # the workspace folders (paths)
        self.project = True  # analyse documents with their project (reflint.server_project)
        self.initialized = False
        self.closing = False
        self.open: dict = {}  # uri -> (version, text) as opened; dropped when it changes
        # uri -> (version, text, path, settings, future): early analyses handed to the server
        self.early: dict = {}
        self.published: dict = {}  # uri -> (version, text, path, settings, (diags, facts))
        self._resolver = None
        # Set when the server phase is wanted: reflint.server (pygls: ~0.5 CPU-s) is imported
        # then, not while the first document's analysis needs the CPU (see ``main``).
        self.go = threading.Event()

    def write(self, obj) -> None:
        self.out.write(frame(obj))
        self.out.flush()

    def handle(self, event, events: "queue.Queue") -> None:
        kind, payload = event
        if kind == "result":
            try:
                self._result(*payload)
            finally:
                if not any(not entry[4].done() for entry in self.early.values()):
                    self.go.set()  # every early document published: the server's turn
            return
        self.pending.append(event)
        if kind != "message":
            self.closing = True
            self.go.set()
            return
        try:
            msg = json.loads(payload)
        except Exception:  # noqa: BLE001 - the server phase reports it
            return
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if method not in ("initialize", "initialized", "textDocument/didOpen"):
            self.go.set()  # a request or an edit only the server phase answers
        if method == "initialize" and "id" in msg and not self.initialized:
            self._initialize(msg["id"], params)
        elif method == "textDocument/didOpen" and self.initialized and not self.closing:
            doc = params.get("textDocument")
            if isinstance(doc, dict) and isinstance(doc.get("uri"), str) and \
                    isinstance(doc.get("text"), str) and isinstance(doc.get("version"), int) \
                    and is_python(doc["uri"], doc.get("languageId")):
                self._open(doc["uri"], doc["version"], doc["text"], events)
            if not self.early:
                self.go.set()  # nothing analysed here
        elif method in ("textDocument/didChange", "textDocument/didClose"):
            doc = params.get("textDocument")
            if isinstance(doc, dict):
                self.open.pop(doc.get("uri"), None)
        elif method in ("shutdown", "exit"):
            self.closing = True

    def _initialize(self, msg_id, params: dict) -> None:
        from . import __version__

        caps = params.get("capabilities")
        self.encoding = position_encoding(caps if isinstance(caps, dict) else {})
        root = params.get("rootUri")
        if isinstance(root, str) and root.startswith("file:"):
            from pygls.uris import to_fs_path

            self.root = to_fs_path(root)
        elif isinstance(params.get("rootPath"), str):
            self.root = params["rootPath"]
        for f in params.get("workspaceFolders") or ():
            if isinstance(f, dict) and isinstance(f.get("uri"), str) and \
                    f["uri"].startswith("file:"):
                from pygls.uris import to_fs_path

                self.folders.append(to_fs_path(f["uri"]))
        self.write({"jsonrpc": "2.0", "id": msg_id, "result": {
            "capabilities": capabilities(self.encoding, caps),
            "serverInfo": {"name": "reflint", "version": __version__}}})
        self.suppress.add(msg_id)
        self.initialized = True

    def _open(self, uri: str, version: int, text: str, events: "queue.Queue") -> None:
        """Analyse a document opened before the server phase, if its settings are plain
        (anything unusual, a configuration error included, is left to the server)."""
        path = document_path(uri)
        if not os.path.isabs(path):
            return
        try:
            from .config import Resolver
            from .discovery import excluded_with_parents

            if self._resolver is None:
                self._resolver = Resolver()
            settings = self._resolver.for_file(path)
            if excluded_with_parents(path, settings) or \
                    len(text.encode("utf-8", "surrogatepass")) > settings.max_file_size:
                return
        except Exception:  # noqa: BLE001 - the server phase reports it
            return
        if any(not entry[4].done() for entry in self.early.values()):
            self.pool.grow()  # a second document must not wait behind the first
        ctx = None
        if self.project:
            try:
                ctx = server_project.context(path, self.folders + [self.root], {
                    document_path(u): t for u, (_, t) in self.open.items()} | {path: text})
            except Exception:  # noqa: BLE001 - analysed alone
                ctx = None
        future = self.pool.submit(server_worker.analyse_text, text, path, settings) \
            if ctx is None else \
            self.pool.submit(server_project.analyse, text, path, settings, ctx, True)
        if future is None:
            return
        self.open[uri] = (version, text)
        self.early[uri] = (version, text, path, settings, future)
        future.add_done_callback(lambda f: events.put(("result", (uri, version, text, f))))

    def _result(self, uri: str, version: int, text: str, future) -> None:
        if self.open.get(uri) != (version, text) or self.closing:
            return  # changed or closed since: the server phase analyses it
        try:
            found = future.result()
            diags = found[0]
        except Exception:  # noqa: BLE001 - the server phase analyses it again
            return
        _, _, path, settings, _ = self.early.pop(uri)
        lines = split_lines(text)
        self.write({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": uri, "version": version,
            "diagnostics": [diagnostic_json(d, lines, uri, self.encoding) for d in diags]}})
        self.published[uri] = (version, text, path, settings, found)
        self.pool.grow()


def _import_server(events: "queue.Queue", go: Optional[threading.Event] = None) -> None:
    if go is not None:
        # The first documents' analyses (in the workers) first: this import would take the
        # CPU they need (two cores: a worker and this process). At most a second's wait.
        go.wait(GO_TIMEOUT)
    try:
        import importlib

        importlib.import_module("reflint.server")
        events.put(("ready", None))
    except BaseException as e:  # noqa: BLE001 - pygls missing, or broken: said on stderr
        events.put(("ready", e))


def parse_args(argv):
    import argparse

    p = argparse.ArgumentParser(prog="reflint server", description="Language server on "
                                "stdio: diagnostics, quick fixes and hover for JAX refs.")
    p.add_argument("--workers", type=int, default=DEFAULT_WORKERS,
                   help=f"analysis processes (default {DEFAULT_WORKERS})")
    p.add_argument("--debounce", type=float, default=DEFAULT_DEBOUNCE,
                   help=f"seconds after the last edit before analysing; 0: at once, "
                        f"unless the document is being analysed: then its newest text is "
                        f"analysed when that analysis ends (default {DEFAULT_DEBOUNCE:g})")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds after which an analysis still running is reported as such "
                        f"(a REF904 'still analysing' on the document); it goes on in the "
                        f"background and its findings replace that note when done "
                        f"(default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--max-analysis-time", type=float, default=None, metavar="SECONDS",
                   help="stop an analysis after this many seconds (its worker is replaced "
                        "and the document gets a REF904); default: no limit")
    p.add_argument("--no-project", action="store_true",
                   help="analyse each document alone, not with the other modules of its "
                        "project (docs/project.md)")
    p.add_argument("--threads", action="store_true",
                   help="analyse in threads of the server process instead of worker "
                        "processes (no protection against a crashing parser)")
    args = p.parse_args(argv)
    if args.timeout <= 0:
        p.error("--timeout must be positive")
    if args.max_analysis_time is not None and args.max_analysis_time <= 0:
        p.error("--max-analysis-time must be positive")
    return args


def main(argv: Optional[list] = None) -> int:
    """``reflint server``."""
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    pool = Workers(args.workers, args.max_analysis_time, not args.threads)
    import signal

    def terminate(signum, frame_):  # SIGTERM/SIGHUP: no worker outlives the server
        pool.kill_now()
        os._exit(0)

    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            try:
                signal.signal(sig, terminate)
            except (ValueError, OSError):  # not the main thread
                pass
    try:
        pool.start()  # the workers import the analysis while this process imports pygls
        events: queue.Queue = queue.Queue()
        reader = FrameReader(sys.stdin.buffer, events.put)
        reader.start()
        front = Front(pool, sys.stdout.buffer)
        threading.Thread(target=_import_server, args=(events, front.go), name="reflint-import",
                         daemon=True).start()
        front.project = not args.no_project
        while True:
            event = events.get()
            if event[0] == "ready":
                if event[1] is not None:
                    print(f"reflint: error: the language server needs pygls: pip install "
                          f"'jax-reflint[server]' ({event[1]})", file=sys.stderr)
                    return 2
                break
            front.handle(event, events)
        from .server import serve

        rc = serve(args, pool, front, reader, events)
    finally:
        pool.close()
    # The reader thread may be blocked reading standard input: an interpreter shutdown
    # would wait for its lock (a fatal error). Nothing is left to do: end here.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        from multiprocessing import util

        util._run_finalizers()  # the pool's semaphores (else the resource tracker warns)
    except Exception:  # noqa: BLE001 - ending anyway
        pass
    finally:
        os._exit(rc)
