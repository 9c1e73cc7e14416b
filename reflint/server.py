"""``reflint server``: a Language Server Protocol server on stdio (pygls/lsprotocol).

What it does, for every open ``.py``/``.pyi`` document, from its unsaved text:

* **Diagnostics**, the same as ``reflint check`` on a file with that text at that path (the
  same ``[tool.reflint]`` of the document's project, ``target-jax-version``,
  ``per-file-ignores``, ``noqa``; files that configuration excludes get none, as with
  ``--force-exclude``). Each has the rule code, a link to the rule's page (``codeDescription``)
  and, where the rule knows it, where the ref was created (``relatedInformation``).
  Published on open and save at once, on change after a short pause (``debounce``).
* **Code actions**: each fix ("Read the ref with [...]"; unsafe ones say so and are not
  preferred), "Suppress with ``# noqa: REFxxx``", and "Fix all safe reflint fixes" (kind
  ``source.fixAll.reflint``: what ``reflint check --fix`` writes, verified the same way).
* **Hover** over a finding: the rule's explanation (``reflint rule REFxxx``).

Responsiveness: the analysis runs in worker processes (``--workers``, default 2), so a slow
document does not block the others, and a worker that crashes (a native parser on
pathological input) or runs past ``--timeout`` is replaced while the server goes on. Each
document has at most one analysis in flight; edits that arrive meanwhile are coalesced, and a
result is published only if it is for the document's current version.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from . import __version__
from . import server_worker
from .config import ConfigError, Resolver
from .diagnostics import SAFE, Diagnostic
from .engine import PARSE_ERROR, noqa_comments

log = logging.getLogger("reflint.server")

FIX_ALL_KIND = "source.fixAll.reflint"
DEFAULT_DEBOUNCE = 0.05  # seconds after the last change before a document is analysed
DEFAULT_TIMEOUT = 30.0  # seconds one analysis may take before its worker is replaced
DEFAULT_WORKERS = 2
_LINE_SPLIT = re.compile(r"\r\n|\r|\n")  # LSP's line ends (the engine's too)


class WorkerCrashed(Exception):
    """The worker process died while analysing (twice: the text itself kills it)."""


class WorkerTimeout(Exception):
    """The analysis ran past the timeout; its worker was stopped."""


class Workers:
    """A pool of worker processes that is replaced when one of them dies or hangs.

    ``call`` runs a function of reflint.server_worker in a worker. If the pool breaks (a
    worker was killed by a signal: every call in flight fails with it), the pool is replaced
    and the call is tried once more, so a crash caused by another document costs a retry;
    a text that crashes a worker twice raises WorkerCrashed."""

    def __init__(self, workers: int = DEFAULT_WORKERS, timeout: float = DEFAULT_TIMEOUT,
                 processes: bool = True):
        self.workers = max(1, workers)
        self.timeout = timeout
        self.processes = processes
        self._pool = None
        self.restarts = 0

    def _get(self):
        if self._pool is None:
            if self.processes:
                import multiprocessing

                try:
                    # spawn: the server has threads (asyncio, pygls); a forked child would
                    # inherit their locks in any state.
                    self._pool = ProcessPoolExecutor(
                        self.workers, mp_context=multiprocessing.get_context("spawn"),
                        initializer=server_worker.watch_parent, initargs=(os.getpid(),))
                    for _ in range(self.workers):
                        self._pool.submit(server_worker.warm_up)
                except (OSError, ValueError, NotImplementedError) as e:
                    log.warning("no worker processes (%s): analysing in threads", e)
                    self.processes = False
            if not self.processes:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="reflint")
        return self._pool

    def _replace(self, pool, kill: bool = False) -> None:
        if self._pool is not pool:
            return  # another call replaced it already
        self._pool = None
        self.restarts += 1
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

    async def call(self, fn, *args):
        for attempt in (1, 2):
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


@dataclass
class DocState:
    """What the server knows of one open document."""

    uri: str
    running: bool = False  # an analysis of this document is in flight
    timer: Optional[asyncio.TimerHandle] = None  # debounced analysis
    version: Optional[int] = None  # version of the text of ``diagnostics``
    text: Optional[str] = None  # that text
    path: str = ""
    diagnostics: list = field(default_factory=list)  # reflint Diagnostics of ``text``
    settings: object = None


class ReflintServer(LanguageServer):
    def __init__(self, workers: int = DEFAULT_WORKERS, debounce: float = DEFAULT_DEBOUNCE,
                 timeout: float = DEFAULT_TIMEOUT, processes: bool = True):
        super().__init__("reflint", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.debounce = debounce
        self.pool = Workers(workers, timeout, processes)
        self.docs: dict = {}
        self.resolver = Resolver()
        self.config_errors: set = set()
        self.config_uris: set = set()  # configuration files with a published error

    # -- the message stream --------------------------------------------------------------

    def _start_io_async(self, stdin=None, stdout=None):
        """pygls's stdio loop, with a reader that resynchronises on framing errors
        (``read_messages``)."""
        import threading

        from pygls.io_ import StdinAsyncReader, StdoutWriter

        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(read_messages(self, reader))
        except BrokenPipeError:
            log.error("the connection to the editor is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def framing_error(self, message: str) -> None:
        """Say once per kind that the editor's message stream was malformed."""
        log.error("%s", message)
        if message in self.config_errors:
            return
        self.config_errors.add(message)
        try:
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"reflint: {message}"))
        except Exception:  # noqa: BLE001 - the stream itself may be gone
            pass

    # -- settings ------------------------------------------------------------------------

    def settings_for(self, path: str):
        """(settings, excluded) for a document at ``path``, as ``reflint check
        --force-exclude path`` resolves them; (None, True) on a configuration error."""
        from .discovery import excluded_with_parents

        try:
            if os.path.isabs(path):
                settings = self.resolver.for_file(path)
            else:
                root = self.workspace.root_path or os.getcwd()
                settings = self.resolver.for_dir(root)
        except ConfigError as e:
            message = f"reflint: {e}"
            if message not in self.config_errors:
                self.config_errors.add(message)
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error, message=message))
                self.config_diagnostic(str(e))
            return None, True
        excluded = os.path.isabs(path) and excluded_with_parents(path, settings)
        return settings, excluded

    def config_diagnostic(self, error: str) -> None:
        """A diagnostic on the configuration file an error names (``path: [tool.reflint]
        key: ...``), on the line of that key when it is found, else on line 1."""
        path, _, rest = error.partition(": ")
        if not rest or not os.path.isfile(path):
            return
        line = 0
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
            key = rest.split("]", 1)[1].strip().split(":")[0].split()[0] if "]" in rest else ""
            for i, text in enumerate(lines):
                if key and text.lstrip().startswith(key):
                    line = i
                    break
        except (OSError, IndexError):
            pass
        uri = from_fs_path(path)
        if uri is None:
            return
        self.config_uris.add(uri)
        rng = types.Range(start=types.Position(line=line, character=0),
                          end=types.Position(line=line + 1, character=0))
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[types.Diagnostic(
                range=rng, message=rest, severity=types.DiagnosticSeverity.Error,
                source="reflint")]))

    def reload_config(self) -> None:
        self.resolver = Resolver()
        self.config_errors.clear()
        for uri in self.config_uris:  # fixed (or not: analysing again says so)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, diagnostics=[]))
        self.config_uris.clear()
        for uri in list(self.docs):
            self.schedule(uri, 0)

    # -- analysis ------------------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        state = self.docs.get(uri)
        if state is None:
            return
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        loop = asyncio.get_running_loop()
        if delay <= 0:
            loop.create_task(self.analyse(uri))
        else:
            state.timer = loop.call_later(delay, lambda: loop.create_task(self.analyse(uri)))

    async def analyse(self, uri: str) -> None:
        """Analyse the document until the published diagnostics are for its current version.

        One analysis per document at a time: a change that arrives meanwhile is picked up
        when it finishes (the result for the older text is dropped, not published)."""
        state = self.docs.get(uri)
        if state is None or state.running:
            return
        state.running = True
        try:
            while True:
                doc = self.workspace.get_text_document(uri)
                text, version = doc.source, doc.version
                if state.version == version and state.text == text:
                    return  # published already
                path = document_path(uri)
                settings, excluded = self.settings_for(path)
                if settings is None or excluded:
                    diags = []
                elif len(text) > settings.max_file_size or \
                        len(text.encode("utf-8", "surrogatepass")) > settings.max_file_size:
                    diags = [_not_checked(path, f"file too large (more than max-file-size, "
                                                f"{settings.max_file_size:,} bytes)")]
                else:
                    try:
                        diags = await self.pool.call(server_worker.lint_text, text, path,
                                                     settings)
                    except WorkerCrashed:
                        diags = [_crash(path, RuntimeError(
                            "the worker process checking this file died (a crash in a native "
                            "parser, or killed for memory)"))]
                    except WorkerTimeout:
                        diags = [_not_checked(path, f"the analysis took longer than "
                                                    f"{self.pool.timeout:g} s (reflint server "
                                                    f"--timeout); gave up")]
                    except Exception as e:  # noqa: BLE001 - report, never crash the server
                        log.exception("analysis failed")
                        diags = [_crash(path, e)]
                if self.docs.get(uri) is not state:
                    return  # closed meanwhile
                current = self.workspace.get_text_document(uri)
                if current.version != version or current.source != text:
                    continue  # superseded while it ran: analyse the new text instead
                state.version, state.text, state.path = version, text, path
                state.diagnostics, state.settings = diags, settings
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=uri, version=version,
                    diagnostics=[self.to_lsp(d, text, uri) for d in diags]))
                return
        finally:
            state.running = False

    # -- conversions ---------------------------------------------------------------------

    def position(self, lines: list, line: int, column: int) -> types.Position:
        """A reflint position (1-based line, 1-based column in code points) for the client
        (0-based, in the negotiated position encoding: UTF-16 unless it said otherwise)."""
        li = max(line - 1, 0)
        ci = max(column - 1, 0)
        if li >= len(lines):
            return types.Position(line=len(lines), character=0)
        codec = self.workspace.position_codec
        return types.Position(line=li, character=codec.client_num_units(lines[li][:ci]))

    def range(self, lines: list, line, column, end_line, end_column) -> types.Range:
        start = self.position(lines, line, column)
        end = self.position(lines, end_line or line, end_column or column)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return types.Range(start=start, end=end)

    def to_lsp(self, d: Diagnostic, text: str, uri: str) -> types.Diagnostic:
        lines = _LINE_SPLIT.split(text)
        related = None
        if d.related is not None:
            related = [types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=self.range(
                    lines, d.related.line, d.related.column, d.related.line,
                    d.related.column)),
                message=d.related.message or "the ref was created here")]
        href = doc_href(d.code)
        return types.Diagnostic(
            range=self.range(lines, d.line, d.column, d.end_line, d.end_column),
            severity=(types.DiagnosticSeverity.Error if d.code == PARSE_ERROR
                      else types.DiagnosticSeverity.Warning),
            code=d.code,
            code_description=types.CodeDescription(href=href) if href else None,
            source="reflint",
            message=d.message,
            related_information=related,
            data={"name": d.name, "fix": d.fix.applicability if d.fix else None},
        )

    def text_edit(self, lines, e) -> types.TextEdit:
        return types.TextEdit(range=self.range(lines, e.line, e.column, e.end_line,
                                               e.end_column), new_text=e.content)

    def workspace_edit(self, uri: str, version, edits: list) -> types.WorkspaceEdit:
        caps = self.client_capabilities
        versioned = bool(caps and caps.workspace and caps.workspace.workspace_edit and
                         caps.workspace.workspace_edit.document_changes)
        if versioned:
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=version),
                edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    def current(self, uri: str) -> Optional[DocState]:
        """The document's state if its diagnostics are for the text the client has now."""
        state = self.docs.get(uri)
        if state is None or state.text is None:
            return None
        doc = self.workspace.get_text_document(uri)
        if doc.version != state.version or doc.source != state.text:
            return None
        return state

    def findings_at(self, state: DocState, rng: types.Range) -> list:
        lines = _LINE_SPLIT.split(state.text)
        out = []
        for d in state.diagnostics:
            r = self.range(lines, d.line, d.column, d.end_line, d.end_column)
            if (r.start.line, r.start.character) <= (rng.end.line, rng.end.character) and \
                    (rng.start.line, rng.start.character) <= (r.end.line, r.end.character):
                out.append(d)
        return out


def _not_checked(path: str, reason: str) -> Diagnostic:
    from .engine import not_checked

    return not_checked(path, reason)


def _crash(path: str, error: BaseException) -> Diagnostic:
    """REF903, as ``reflint check`` reports a failed worker (a bug in reflint, not the file)."""
    from .engine import internal_error

    return internal_error(path, error)


def document_path(uri: str) -> str:
    """The file system path of a document (a name relative to the workspace for an unsaved
    buffer such as ``untitled:Untitled-1``)."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return path
    name = uri.rsplit("/", 1)[-1].rsplit(":", 1)[-1] or "untitled"
    return name if name.endswith((".py", ".pyi")) else name + ".py"


_HREFS: dict = {}


def doc_href(code: str) -> Optional[str]:
    """The rule's documentation page: the package's declared documentation URL
    (``[project.urls] Documentation``, see reflint.docs.doc_url) if any, else the page in the
    ``docs/rules/`` folder next to the installed package (a checkout or an editable install)
    as a ``file://`` URL; None when there is neither (hover still shows the text)."""
    if code not in _HREFS:
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


def rule_markdown(code: str) -> Optional[str]:
    """``reflint rule CODE`` as Markdown."""
    from .docs import META_DOCS, render_meta, render_rule
    from .rule import rule_by_code

    rule = rule_by_code(code)
    if rule is not None:
        return render_rule(rule)
    if code in META_DOCS:
        return render_meta(code)
    return None


def noqa_edit(text: str, d: Diagnostic) -> Optional[tuple]:
    """(line, column, end_line, end_column, content) adding ``# noqa: CODE`` for ``d``: to
    the existing noqa comment that covers its line, or as a new comment at the end of the
    last line of its token group (after a multi-line string, not inside it; after a
    backslash continuation, not before it). Verified: the new text has a comment covering the
    line that names the code. None if no safe place is found."""
    lines = _LINE_SPLIT.split(text)
    for c in noqa_comments(text):
        if d.line in c.lines and c.codes:
            written, col = c.codes[-1]
            end = col + len(written)
            edit = (c.line, end, c.line, end, f", {d.code}")
            break
    else:
        target = _group_end(text, d.line)
        if target is None or target > len(lines):
            return None
        line = lines[target - 1]
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            return None
        col = len(stripped) + 1
        edit = (target, col, target, len(line) + 1, f"{'  ' if stripped else ''}"
                                                     f"# noqa: {d.code}")
    new_text = _apply(text, lines, edit)
    if any(d.line in c.lines and c.codes and any(d.code.startswith(w) for w, _ in c.codes)
           for c in noqa_comments(new_text)):
        try:
            compile(new_text, "<noqa>", "exec", dont_inherit=True, flags=0x400)
        except SyntaxError:
            try:
                compile(text, "<noqa>", "exec", dont_inherit=True, flags=0x400)
                return None  # the comment broke code that compiled before
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
        except (ValueError, RecursionError, MemoryError):
            pass
        return edit
    return None


def _apply(text: str, lines: list, edit: tuple) -> str:
    starts = [0]
    for m in _LINE_SPLIT.finditer(text):
        starts.append(m.end())
    a = starts[edit[0] - 1] + edit[1] - 1
    b = starts[edit[2] - 1] + edit[3] - 1
    return text[:a] + edit[4] + text[b:]


def _group_end(text: str, line: int) -> Optional[int]:
    """The last physical line of the token group (lines joined by a multi-line token or a
    backslash) that contains ``line``: where a noqa comment covers ``line`` (as in flake8).
    The engine's one token scan of the text (``engine.token_scan``), shared with its noqa
    check."""
    from .engine import token_scan

    scan = token_scan(text)
    return line if scan is None else scan.group_end(line)


def _minimal_edit(old: str, new: str) -> tuple:
    """(start offset, end offset in ``old``, replacement): the changed middle part only, so
    that the editor keeps the cursor and the undo history readable."""
    n = min(len(old), len(new))
    i = 0
    while i < n and old[i] == new[i]:
        i += 1
    j = 0
    while j < n - i and old[len(old) - 1 - j] == new[len(new) - 1 - j]:
        j += 1
    return i, len(old) - j, new[i:len(new) - j]


def _offset_to_position(text: str, offset: int) -> tuple:
    """(1-based line, 1-based column) of a character offset, lines as the engine splits."""
    line = 1
    start = 0
    for m in _LINE_SPLIT.finditer(text, 0, offset):
        if m.end() > offset:
            break
        line += 1
        start = m.end()
    return line, offset - start + 1


# One message may not be larger than this: a Content-Length above it ends the session (a
# larger one is a corrupt header, and reading it would hold the whole stream).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r?\n\Z", re.I)


async def read_messages(server: "ReflintServer", reader) -> None:
    """Read LSP messages until the stream ends. Unlike pygls's loop, a header is recognised at
    the end of any line, so after a message whose Content-Length was too small (its tail is
    read as a header line) or too large (it swallowed the next ones) the next header found
    resynchronises the stream; a body that is not JSON is skipped with a message to the user;
    a Content-Length beyond ``MAX_MESSAGE_BYTES`` ends the session with a message."""
    import json

    length = 0
    while not server._stop_event.is_set():
        line = await reader.readline()
        if not line:
            break
        m = _CONTENT_LENGTH.search(line)
        if m:
            length = int(m.group(1))
            if length > MAX_MESSAGE_BYTES:
                server.framing_error(f"a message from the editor declares {length:,} bytes "
                                     f"(more than {MAX_MESSAGE_BYTES:,}): the stream is "
                                     f"corrupt; the server stops")
                break
            continue
        if not length or line.strip():
            continue  # another header, or noise between messages
        body = await reader.readexactly(length)
        length = 0
        if not body:
            break
        try:
            message = json.loads(body, object_hook=server.protocol.structure_message)
        except Exception:  # noqa: BLE001 - a framing error: skip it, resynchronise
            server.framing_error("a message from the editor was malformed (its Content-Length "
                                 "does not match its body?); it was skipped")
            continue
        try:
            server.protocol.handle_message(message)
        except Exception as exc:  # noqa: BLE001 - as pygls: report and go on
            log.exception("unable to handle a message")
            from pygls.exceptions import JsonRpcException

            server.report_server_error(exc, JsonRpcException)
        _forget_finished(server.protocol)


def _forget_finished(protocol) -> None:
    """pygls (2.0) keeps the future of every notification handled by a generator handler
    (didOpen, didClose, ...) in ``_request_futures`` under a random id that no response ever
    removes: about 2 KB per notification, forever. The finished ones are dropped here (a
    request's entry is only looked up to cancel it, or removed with a default, when its
    response is sent)."""
    futures = getattr(protocol, "_request_futures", None)
    if isinstance(futures, dict) and futures:
        for key in [k for k, f in futures.items() if f.done()]:
            del futures[key]


def create_server(workers: int = DEFAULT_WORKERS, debounce: float = DEFAULT_DEBOUNCE,
                  timeout: float = DEFAULT_TIMEOUT, processes: bool = True) -> ReflintServer:
    server = ReflintServer(workers, debounce, timeout, processes)

    def is_python(uri: str, language_id: Optional[str] = None) -> bool:
        if language_id is not None:
            return language_id == "python"
        return uri.endswith((".py", ".pyi"))

    @server.feature(types.INITIALIZED)
    def initialized(ls: ReflintServer, params) -> None:
        ls.pool._get()  # start the workers (they import libcst) while the user reads

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ReflintServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        if not is_python(doc.uri, doc.language_id):
            return
        ls.docs[doc.uri] = DocState(doc.uri)
        ls.schedule(doc.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ReflintServer, params: types.DidChangeTextDocumentParams) -> None:
        if params.text_document.uri in ls.docs:
            ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: ReflintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("/pyproject.toml"):
            ls.reload_config()
        elif uri in ls.docs:
            ls.schedule(uri, 0)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: ReflintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(c.uri.endswith("/pyproject.toml") for c in params.changes):
            ls.reload_config()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ReflintServer, params: types.DidCloseTextDocumentParams) -> None:
        state = ls.docs.pop(params.text_document.uri, None)
        if state is not None:
            if state.timer is not None:
                state.timer.cancel()
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=params.text_document.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: ReflintServer, params: types.HoverParams) -> Optional[types.Hover]:
        state = ls.current(params.text_document.uri)
        if state is None:
            return None
        at = types.Range(start=params.position, end=params.position)
        parts = []
        for d in ls.findings_at(state, at):
            doc = rule_markdown(d.code)
            head = f"**{d.code}** `{d.name}`: {d.message}"
            parts.append(head + (f"\n\n---\n\n{doc}" if doc else ""))
        if not parts:
            return None
        return types.Hover(contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll,
                           FIX_ALL_KIND], resolve_provider=True))
    async def code_action(ls: ReflintServer, params: types.CodeActionParams):
        uri = params.text_document.uri
        state = ls.current(uri)
        if state is None:
            return None
        only = params.context.only
        want_quick = not only or any(types.CodeActionKind.QuickFix.value.startswith(k)
                                     or k == "quickfix" for k in only)
        want_all = not only or any(FIX_ALL_KIND.startswith(k) for k in only)
        lines = _LINE_SPLIT.split(state.text)
        actions = []
        if want_quick:
            for d in ls.findings_at(state, params.range):
                lsp_diag = ls.to_lsp(d, state.text, uri)
                if d.fix is not None:
                    unsafe = d.fix.applicability != SAFE
                    title = d.fix.message + (" (unsafe fix: review the change)" if unsafe
                                             else "")
                    actions.append(types.CodeAction(
                        title=title, kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp_diag], is_preferred=not unsafe,
                        edit=ls.workspace_edit(uri, state.version,
                                               [ls.text_edit(lines, e) for e in d.fix.edits])))
                if d.code != PARSE_ERROR:
                    e = noqa_edit(state.text, d)
                    if e is not None:
                        edit = types.TextEdit(range=ls.range(lines, *e[:4]), new_text=e[4])
                        actions.append(types.CodeAction(
                            title=f"Suppress with # noqa: {d.code}",
                            kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_diag],
                            edit=ls.workspace_edit(uri, state.version, [edit])))
        if want_all and any(d.fix is not None and d.fix.applicability == SAFE
                            for d in state.diagnostics):
            action = types.CodeAction(title="Fix all safe reflint fixes", kind=FIX_ALL_KIND,
                                      data={"uri": uri, "version": state.version})
            caps = ls.client_capabilities
            resolvable = bool(
                caps and caps.text_document and caps.text_document.code_action and
                caps.text_document.code_action.resolve_support and
                "edit" in caps.text_document.code_action.resolve_support.properties)
            if not resolvable:
                action = await fix_all(ls, action)
            if action is not None:
                actions.append(action)
        return actions or None

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve(ls: ReflintServer, action: types.CodeAction) -> types.CodeAction:
        if action.kind == FIX_ALL_KIND and action.edit is None:
            return await fix_all(ls, action) or action
        return action

    async def fix_all(ls: ReflintServer, action: types.CodeAction):
        data = action.data or {}
        uri = data.get("uri") if isinstance(data, dict) else None
        state = ls.current(uri) if uri else None
        if state is None or state.settings is None:
            return None
        try:
            fixed, count, error = await ls.pool.call(server_worker.fix_text, state.text,
                                                     state.path, state.settings)
        except (WorkerCrashed, WorkerTimeout):
            return None
        if fixed is None:
            if error:
                ls.window_log_message(types.LogMessageParams(
                    type=types.MessageType.Warning, message=f"reflint: {error}"))
            return None
        if ls.current(uri) is not state:
            return None
        a, b, content = _minimal_edit(state.text, fixed)
        lines = _LINE_SPLIT.split(state.text)
        start = _offset_to_position(state.text, a)
        end = _offset_to_position(state.text, b)
        edit = types.TextEdit(range=ls.range(lines, *start, *end), new_text=content)
        action.edit = ls.workspace_edit(uri, state.version, [edit])
        action.title = f"Fix all safe reflint fixes ({count})"
        return action

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: ReflintServer, params) -> None:
        ls.pool.close()

    return server


def main(argv: Optional[list] = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="reflint server", description="Language server on "
                                "stdio: diagnostics, quick fixes and hover for JAX refs.")
    p.add_argument("--workers", type=int, default=DEFAULT_WORKERS,
                   help=f"analysis processes (default {DEFAULT_WORKERS})")
    p.add_argument("--debounce", type=float, default=DEFAULT_DEBOUNCE,
                   help=f"seconds after the last edit before analysing "
                        f"(default {DEFAULT_DEBOUNCE})")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds one analysis may take (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--threads", action="store_true",
                   help="analyse in threads of the server process instead of worker "
                        "processes (no protection against a crashing parser)")
    args = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.timeout <= 0:
        p.error("--timeout must be positive")
    server = create_server(args.workers, args.debounce, args.timeout, not args.threads)
    import signal

    def terminate(signum, frame):  # SIGTERM/SIGHUP: no worker outlives the server
        server.pool.close()
        os._exit(0)

    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            try:
                signal.signal(sig, terminate)
            except (ValueError, OSError):  # not the main thread
                pass
    try:
        server.start_io()
    finally:
        server.pool.close()
    return 0
