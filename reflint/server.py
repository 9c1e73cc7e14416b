"""``reflint server``: a Language Server Protocol server on stdio (pygls/lsprotocol).

What it does, for every open ``.py``/``.pyi`` document and Jupyter notebook, from its unsaved
text:

* **Diagnostics**, the same as ``reflint check ROOT`` on a file with that text at that path
  (with the other modules of its project and the unsaved texts of the open ones:
  reflint.server_project; an edit re-diagnoses the open documents that read it) (the
  same ``[tool.reflint]`` of the document's project, ``target-jax-version``,
  ``per-file-ignores``, ``noqa``; files that configuration excludes get none, as with
  ``--force-exclude``). Each has the rule code, a link to the rule's page (``codeDescription``)
  and, where the rule knows it, where the ref was created (``relatedInformation``).
  Published on open and save at once; on change at once too ("latest wins": while an
  analysis of the document runs, the edits that arrive are coalesced and only the newest
  text is analysed when it ends; ``--debounce`` waits that long after the last edit instead).
  A notebook (LSP notebook sync, VS Code's ``vscode-notebook-cell:`` documents) is linted as
  ``reflint check`` lints an ``.ipynb``: its code cells as one program, in order; each
  finding is published on its cell's document, at its line in the cell.
* **Code actions**: each fix ("Read the ref with [...]"; unsafe ones say so and are not
  preferred), "Suppress with ``# noqa: REFxxx``", and "Fix all safe reflint fixes" (kind
  ``source.fixAll.reflint``: what ``reflint check --fix`` writes, verified the same way).
  An analysis says which findings are fixable; a fix's edits (libcst's own parse of the
  text and a second analysis) are built by a worker when a code action asks for them, from
  the text of that moment, so a keystroke costs one analysis.
* **Hover** over a finding: the rule's explanation (``reflint rule REFxxx``).

Responsiveness (docs/integrations/editors.md): the server answers ``initialize`` and
publishes the first document's diagnostics before it has imported pygls
(reflint.server_front). The analysis runs in worker processes (``--workers``, default 2), so
a slow document does not block the others, and a worker that crashes (a native parser on
pathological input) is replaced while the server goes on. An analysis that runs past
``--timeout`` is said to be slow (a log message) and goes on in the background: its findings
are published when it ends (``--max-analysis-time`` stops it instead). Each document has at
most one analysis in flight; edits that arrive meanwhile are coalesced, and a result is
published only if it is for the document's current version. An edit that only changes a
comment is answered at once with the findings it cannot change (reflint.server_reuse), and
the last few texts of each document are remembered (undo, type-and-delete). An edit of a
document in a project is analysed with the project as it was before the edit, without
summarizing the text first (provisional findings), and settled once typing pauses
(``SETTLE_DELAY``; reflint.server_project).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections import OrderedDict
from typing import Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path

from . import __version__
from . import server_project, server_reuse, server_worker
from ._record import field, record
from .config import ConfigError, Resolver
from .diagnostics import SAFE, Diagnostic, LazyFix
from .discovery import excluded_with_parents
from .server_front import (DEFAULT_DEBOUNCE, DEFAULT_TIMEOUT, DEFAULT_WORKERS,  # noqa: F401
                           FIX_ALL_KIND, MAX_MESSAGE_BYTES, NOTEBOOK_SELECTOR, WorkerCrashed,
                           WorkerTimeout, Workers, diagnostic_json, doc_href, document_path,
                           is_python, range_json, split_lines, _LINE_SPLIT)

log = logging.getLogger("reflint.server")

PARSE_ERROR = "REF900"
CACHED_TEXTS = 4  # per document: results of its last texts (undo, type-and-delete)
# Seconds without an edit after provisional findings (reflint.server_project.analyse) before
# they are settled: typing goes on without a summary per keystroke.
SETTLE_DELAY = 0.2


@record
class DocState:
    """What the server knows of one open document (or notebook)."""

    uri: str
    notebook: bool = False  # a notebook document (LSP notebook sync): its cells published
    ipynb: bool = False  # an .ipynb opened as a text document (its JSON)
    running: bool = False  # an analysis of this document is in flight
    timer: Optional[asyncio.TimerHandle] = None  # debounced analysis
    version: Optional[int] = None  # version of the text of ``diagnostics``
    text: Optional[str] = None  # that text (a notebook's: its code cells joined)
    path: str = ""
    raw: list = field(default_factory=list)  # reflint Diagnostics of ``text``
    diagnostics: list = field(default_factory=list)  # the same, a notebook's on its cells
    facts: Optional[list] = None  # reflint.server_reuse.line_facts of ``text``
    settings: object = None
    lsp: dict = field(default_factory=dict)  # uri -> the LSP diagnostics published there
    cache: OrderedDict = field(default_factory=OrderedDict)  # text -> (settings, raw, facts)
    early: Optional[tuple] = None  # (version, text, future): an analysis started at launch
    cells: list = field(default_factory=list)  # a notebook's code cells: [(uri, version)]
    nb: object = None  # a notebook's reflint.notebook.Notebook (cell and line mapping)
    # The project (reflint.server_project): the digest of what the published findings read
    # from it (None: analysed alone); ``stale`` counts the times what it reads changed,
    # ``fresh`` the count its findings are for; ``propagate``: its next analysis re-checks
    # the other documents of its project.
    digest: Optional[str] = None
    stale: int = 0
    fresh: int = 0
    propagate: bool = False
    # The published findings are provisional (computed with the project as the worker built
    # it before the edit, reflint.server_project.analyse): what it was built from; ``settle``
    # checks them against the project of the text SETTLE_DELAY after the last edit.
    basis: Optional[dict] = None
    settle_timer: Optional[asyncio.TimerHandle] = None


class ReflintProtocol(LanguageServerProtocol):
    """pygls's protocol, which does not answer the requests reflint.server_front answered."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.answered: set = set()

    def _send_response(self, msg_id, result=None, error=None):
        if msg_id in self.answered:
            self.answered.discard(msg_id)
            return
        super()._send_response(msg_id, result, error)


class ReflintServer(LanguageServer):
    def __init__(self, workers=DEFAULT_WORKERS, debounce: float = DEFAULT_DEBOUNCE,
                 timeout: float = DEFAULT_TIMEOUT, processes: bool = True,
                 max_analysis_time: Optional[float] = None):
        super().__init__("reflint", __version__, protocol_cls=ReflintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=types.NotebookDocumentSyncOptions(
                             notebook_selector=[types.NotebookDocumentFilterWithCells(
                                 notebook=types.NotebookDocumentFilterNotebookType(
                                     notebook_type="jupyter-notebook"),
                                 cells=[types.NotebookCellLanguage(language="python")])],
                             save=False))
        self.debounce = debounce
        self.slow_after = timeout  # seconds before an analysis is said to be slow
        self.pool = workers if isinstance(workers, Workers) else \
            Workers(workers, max_analysis_time, processes)
        self.docs: dict = {}
        self.cell_owner: dict = {}  # a notebook cell's uri -> its notebook's uri
        self.resolver = Resolver()
        self.config_errors: set = set()
        self.config_uris: set = set()  # configuration files with a published error
        self.encoding = "utf-16"

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

    def send_json(self, method: str, params: dict) -> None:
        """A notification whose params are JSON already (no lsprotocol round trip)."""
        self.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    # -- settings ------------------------------------------------------------------------

    def settings_for(self, path: str):
        """(settings, excluded) for a document at ``path``, as ``reflint check
        --force-exclude path`` resolves them; (None, True) on a configuration error."""
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

    def subject(self, state: DocState):
        """(version, text, notebook or None) of what the client has now: a text document's
        text, or a notebook's code cells joined (reflint.notebook); None if it is gone."""
        from . import notebook as nbmod

        if not state.notebook:
            doc = self.workspace.get_text_document(state.uri)
            if not state.ipynb:
                return doc.version, doc.source, None
            try:
                return doc.version, doc.source, nbmod.parse(doc.source)
            except nbmod.NotebookError as e:
                return doc.version, doc.source, e

        nbdoc = self.workspace.get_notebook_document(notebook_uri=state.uri)
        if nbdoc is None:
            return None
        cells, sources = [], []
        for cell in nbdoc.cells:
            if cell.kind != types.NotebookCellKind.Code:
                continue
            doc = self.workspace.get_text_document(cell.document)
            if getattr(doc, "language_id", "python") not in (None, "python"):
                continue
            cells.append((cell.document, doc.version))
            sources.append(doc.source)
        nb = nbmod.Notebook("", {}, list(range(len(cells))), sources)
        nbmod._join(nb)
        nb.cell_uris = cells
        return (nbdoc.version, tuple(cells)), nb.program, nb

    def quick(self, state: DocState, text: str, settings) -> Optional[tuple]:
        """(diagnostics, line facts) of ``text`` without analysing it: a text analysed
        lately, or an edit of the published text that only changes a comment
        (reflint.server_reuse); None otherwise."""
        if settings is None or state.text is None or settings != state.settings or \
                state.fresh != state.stale:
            return None
        # A text of a document in a project is analysed again (its worker's memo answers at
        # once when nothing it reads changed): the analysis re-checks its dependents.
        hit = state.cache.get(text) if state.digest is None else None
        if hit is not None and hit[0] == settings:
            state.cache.move_to_end(text)
            return hit[1], hit[2]
        if state.ipynb:
            return None  # its text is JSON: comment edits are not recognised in it
        facts = server_reuse.reuse(state.text, state.facts, text, state.raw)
        if facts is None:
            return None
        return server_reuse.unbuilt_fixes(state.raw), facts

    def try_quick(self, uri: str) -> bool:
        """Publish the findings of the document's current text now if ``quick`` knows
        them (a keystroke in a comment); True if it did."""
        state = self.docs.get(uri)
        if state is None or state.running or state.text is None:
            return False
        subject = self.subject(state)
        if subject is None:
            return False
        version, text, nb = subject
        if state.path != self.path_of(state):
            return False
        settings, excluded = self.settings_for(state.path)
        if settings is None or excluded:
            return False
        found = self.quick(state, text, settings)
        if found is None:
            return False
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        self.publish(state, version, text, nb, state.path, settings, found)
        if state.basis is not None:  # as provisional as the findings it reused
            self.schedule_settle(state)
        return True

    def path_of(self, state: DocState) -> str:
        path = document_path(state.uri)
        if state.notebook and not path.endswith(".ipynb"):
            path = path[:-3] + ".ipynb" if path.endswith(".py") else path + ".ipynb"
        return path

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
                subject = self.subject(state)
                if subject is None:
                    return
                version, text, nb = subject
                if state.version == version and state.text == text and \
                        state.fresh == state.stale:
                    return  # published already
                wanted = state.stale
                propagate = text != state.text or state.propagate
                state.propagate = False
                path = self.path_of(state)
                settings, excluded = self.settings_for(path)
                found = self.quick(state, text, settings) if path == state.path else None
                reused = found is not None
                if found is None:
                    if settings is None or excluded:
                        found = [], None
                    elif len(text) > settings.max_file_size or \
                            len(text.encode("utf-8", "surrogatepass")) > settings.max_file_size:
                        found = [_not_checked(path, f"file too large (more than "
                                                    f"max-file-size, "
                                                    f"{settings.max_file_size:,} bytes)")], None
                    elif state.ipynb and not hasattr(nb, "program"):
                        found = ([_parse_error(path, str(nb))]
                                 if settings.enabled(PARSE_ERROR) else []), None
                    elif state.ipynb and not nb.program.strip():
                        found = [], None
                    else:
                        found = await self.run_analysis(
                            state, version, nb.program if state.ipynb else text, path,
                            settings)
                if self.docs.get(uri) is not state:
                    return  # closed meanwhile
                now = self.subject(state)
                if now is None:
                    return
                if now[0] != version or now[1] != text:
                    continue  # superseded while it ran: analyse the new text instead
                self.publish(state, version, text, nb, path, settings, found[:2])
                state.fresh = wanted
                if reused:  # as provisional as the findings it reused
                    if state.basis is not None:
                        self.schedule_settle(state)
                elif len(found) > 2 and found[2].get("basis") is not None:
                    state.basis = found[2]["basis"]
                    self.schedule_settle(state)
                else:
                    self.unsettled(state)
                    if len(found) > 2:
                        server_project.after_analysis(self, state, found[2], propagate)
                # (the loop ends at its top unless the project made the findings stale)
        finally:
            state.running = False

    async def run_analysis(self, state: DocState, version, text: str, path: str,
                           settings) -> tuple:
        """(diagnostics, line facts) from a worker. Past ``slow_after`` seconds the user is
        told (a log message) and the analysis goes on; it ends with its findings, or a
        REF903/REF904 if its worker crashed or ran past ``--max-analysis-time``."""
        future = None
        if state.early is not None:
            early_version, early_text, early_future = state.early
            state.early = None
            if early_version == version and early_text == text:
                future = early_future
        if future is not None:
            call = self.pool.call(server_worker.analyse_text, text, path, settings,
                                  future=future)
        else:  # the line facts come later (facts_later): not on the way to the findings
            ctx = server_project.server_context(self, state, path)
            # An edit of a published document: provisional findings if they come sooner.
            call = self._lint(text, path, settings) if ctx is None else \
                self.pool.call(server_project.analyse, text, path, settings, ctx, False,
                               state.text is not None)
        task = asyncio.ensure_future(call)
        try:
            try:
                return await asyncio.wait_for(asyncio.shield(task), self.slow_after)
            except asyncio.TimeoutError:
                self.say_slow(path)
                return await task
        except WorkerCrashed:
            return [_crash(path, RuntimeError(
                "the worker process checking this file died (a crash in a native parser, or "
                "killed for memory)"))], None
        except WorkerTimeout:
            return [_not_checked(path, f"the analysis took longer than "
                                       f"{self.pool.timeout:g} s (reflint server "
                                       f"--max-analysis-time); stopped")], None
        except Exception as e:  # noqa: BLE001 - report, never crash the server
            log.exception("analysis failed")
            return [_crash(path, e)], None

    def schedule_settle(self, state: DocState) -> None:
        if state.settle_timer is not None:
            state.settle_timer.cancel()
        loop = asyncio.get_running_loop()
        state.settle_timer = loop.call_later(
            SETTLE_DELAY, lambda: loop.create_task(self.settle(state.uri)))

    def unsettled(self, state: DocState) -> None:
        """The published findings are not provisional (any more)."""
        state.basis = None
        if state.settle_timer is not None:
            state.settle_timer.cancel()
            state.settle_timer = None

    async def settle(self, uri: str) -> None:
        """Check provisional findings (``DocState.basis``) against the project of the text
        they are published for, once no edit came for SETTLE_DELAY: they stand when that
        project is built from the same inputs (reflint.server_project.settle), else the text
        is analysed with it and its findings are published if they differ. Then the other
        documents that read from this one are checked, as after any analysis."""
        state = self.docs.get(uri)
        if state is None or state.basis is None:
            return
        state.settle_timer = None
        subject = self.subject(state)
        if subject is None:
            return
        if state.running or subject[0] != state.version or subject[1] != state.text:
            # An edit being analysed, or on its way: its findings replace these (and are
            # settled in turn); until then, look again later.
            self.schedule_settle(state)
            return
        version, text, path, settings, basis = \
            state.version, state.text, state.path, state.settings, state.basis
        ctx = server_project.server_context(self, state, path)
        try:
            if ctx is None:  # no project any more: the findings of the text alone
                diags, info = await self._lint(text, path, settings)
            else:
                diags, info = await self.pool.call(server_project.settle, text, path,
                                                   settings, ctx, basis)
        except Exception:  # noqa: BLE001 - the next edit analyses the document again
            log.exception("settling provisional findings failed")
            return
        if self.docs.get(uri) is not state or state.basis is not basis or \
                state.version != version or state.text != text:
            return  # edited meanwhile: its own analysis published since, or will
        self.unsettled(state)
        if diags is not None:
            lines = split_lines(text)
            if [diagnostic_json(d, lines, uri, self.encoding) for d in diags] != \
                    state.lsp.get(uri):
                self.publish(state, version, text, None, path, settings,
                             (diags, state.facts))
        if info is not None:
            server_project.after_analysis(self, state, info, True)

    async def _lint(self, text: str, path: str, settings) -> tuple:
        return await self.pool.call(server_worker.lint_text, text, path, settings), None

    def facts_later(self, state: DocState, text: str) -> None:
        """Compute the line facts of the published ``text`` in a worker, for the next
        keystroke's reuse check (until they arrive, an edit is analysed)."""
        async def job():
            try:
                facts = await self.pool.call(server_reuse.line_facts, text)
            except Exception:  # noqa: BLE001 - only an optimisation is lost
                return
            if state.text == text and state.facts is None:
                state.facts = facts
                hit = state.cache.get(text)
                if hit is not None and hit[2] is None:
                    state.cache[text] = (hit[0], hit[1], facts)

        asyncio.get_running_loop().create_task(job())

    def say_slow(self, path: str) -> None:
        message = (f"reflint: the analysis of {os.path.basename(path)} takes longer than "
                   f"{self.slow_after:g} s (reflint server --timeout); it goes on in the "
                   f"background and its findings will be shown when it ends")
        log.warning("%s", message)
        try:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Info,
                                                           message=message))
        except Exception:  # noqa: BLE001 - the stream may be gone
            pass

    def publish(self, state: DocState, version, text: str, nb, path: str, settings,
                found: tuple) -> None:
        raw, facts = found
        if facts is None and nb is None and state.facts is not None and \
                state.text is not None and not state.ipynb and \
                not any(d.code == PARSE_ERROR for d in raw):
            # A keystroke in a name: the facts of the text before, moved (no tokenizing).
            facts = server_reuse.edited_facts(state.text, state.facts, text)
        same_text = state.text is not None and state.facts is not None and facts is not None \
            and raw is state.raw and text.count("\n") == state.text.count("\n")
        state.version, state.text, state.path, state.settings = version, text, path, settings
        state.raw, state.facts = raw, facts
        if settings is not None:
            state.cache[text] = (settings, raw, facts)
            state.cache.move_to_end(text)
            while len(state.cache) > CACHED_TEXTS:
                state.cache.popitem(last=False)
        if state.ipynb:
            self.publish_ipynb(state, version, text, nb, raw)
            return
        if facts is None and not state.ipynb and "\r" not in text and \
                not any(d.code == PARSE_ERROR for d in raw):
            self.facts_later(state, text)
        if nb is None:
            state.diagnostics = raw
            if not (same_text and state.uri in state.lsp):  # a comment edit moves nothing
                lines = split_lines(text)
                state.lsp = {state.uri: [diagnostic_json(d, lines, state.uri, self.encoding)
                                         for d in raw]}
            self.send_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, {
                "uri": state.uri, "version": version, "diagnostics": state.lsp[state.uri]})
            return
        self.publish_cells(state, nb, raw)

    def publish_ipynb(self, state: DocState, version, text: str, nb, raw: list) -> None:
        """An .ipynb opened as JSON text: each finding at its place in the JSON (the cell's
        source string), its message saying which cell and line."""
        from ._record import replace

        from . import notebook as nbmod

        out = list(raw)  # an invalid notebook: its REF900 is on line 1
        if hasattr(nb, "program"):
            cells = server_reuse.JsonCells(text, nb)
            out = []
            for r, d in zip(raw, nbmod.map_diagnostics(nb, raw)):
                line, col = cells.where(d.cell, d.line, d.column)
                end_line, end_col = cells.where(d.cell, d.end_line or d.line,
                                                d.end_column or d.column)
                related = None
                if d.related is not None:
                    rc, rl = nbmod.to_cell(nb, r.related.line)
                    rl, rcol = cells.where(rc, rl, r.related.column)
                    related = replace(d.related, line=rl, column=rcol)
                out.append(replace(d, line=line, column=col, end_line=end_line,
                                   end_column=end_col, related=related, fix=None,
                                   message=f"cell {d.cell}, line {d.line}: {d.message}"))
        state.diagnostics, state.nb = out, nb if hasattr(nb, "program") else None
        lines = split_lines(text)
        state.lsp = {state.uri: [diagnostic_json(d, lines, state.uri, self.encoding)
                                 for d in out]}
        self.send_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, {
            "uri": state.uri, "version": version, "diagnostics": state.lsp[state.uri]})

    def publish_cells(self, state: DocState, nb, raw: list) -> None:
        """A notebook's findings, each on its cell's document at its line in the cell."""
        from . import notebook as nbmod

        mapped = nbmod.map_diagnostics(nb, raw)
        state.diagnostics, state.nb = mapped, nb
        per_cell: dict = {}
        for r, d in zip(raw, mapped):
            per_cell.setdefault(d.cell or 1, []).append((r, d))
        old = set(state.lsp)
        state.lsp = {}
        state.cells = list(nb.cell_uris)
        cell_lines = [split_lines(src) for src in nb.sources]
        for number, (cell_uri, cell_version) in enumerate(nb.cell_uris, start=1):
            self.cell_owner[cell_uri] = state.uri
            published = []
            for r, d in per_cell.get(number, []):
                item = diagnostic_json(d, cell_lines[number - 1], cell_uri, self.encoding)
                if r.related is not None:  # where the ref was made: perhaps another cell
                    rc, rl = nbmod.to_cell(nb, r.related.line)
                    where = item["relatedInformation"][0]["location"]
                    where["uri"] = nb.cell_uris[rc - 1][0]
                    where["range"] = range_json(cell_lines[rc - 1], rl, r.related.column, rl,
                                                r.related.column, self.encoding)
                published.append(item)
            state.lsp[cell_uri] = published
            self.send_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, {
                "uri": cell_uri, "version": cell_version, "diagnostics": state.lsp[cell_uri]})
        for gone in old - set(state.lsp):  # cells deleted since
            self.cell_owner.pop(gone, None)
            self.send_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
                           {"uri": gone, "diagnostics": []})

    def close(self, uri: str) -> None:
        state = self.docs.pop(uri, None)
        if state is None:
            return
        if state.timer is not None:
            state.timer.cancel()
        self.unsettled(state)
        server_project.closed(self, state)
        for target in (state.lsp or {uri: None}):
            self.cell_owner.pop(target, None)
            self.send_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
                           {"uri": target, "diagnostics": []})

    # -- conversions ---------------------------------------------------------------------

    def range(self, lines: list, line, column, end_line, end_column) -> types.Range:
        r = range_json(lines, line, column, end_line, end_column, self.encoding)
        return types.Range(start=types.Position(**r["start"]), end=types.Position(**r["end"]))

    def to_lsp(self, d: Diagnostic, text: str, uri: str) -> types.Diagnostic:
        return self.protocol._converter.structure(
            diagnostic_json(d, split_lines(text), uri, self.encoding), types.Diagnostic)

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
        """The text document's state if its diagnostics are for the text the client has now
        (None for a notebook's cells: they get diagnostics and hover, not code actions)."""
        state = self.docs.get(uri)
        if state is None or state.text is None or state.notebook or state.ipynb:
            return None
        doc = self.workspace.get_text_document(uri)
        if doc.version != state.version or doc.source != state.text:
            return None
        return state

    async def build_fixes(self, state: DocState, diags: list) -> None:
        """Build the edits of the fixes of ``diags`` that have none yet (LazyFix: the
        analysis says a finding is fixable; its edits take libcst's own parse of the text),
        in a worker, with the document's project."""
        lazy = [d.fix for d in diags if isinstance(d.fix, LazyFix) and not d.fix.resolved]
        if not lazy or state.text is None or state.settings is None:
            return
        try:
            edits = await self.pool.call(
                server_project.fix_edits, state.text, state.path, state.settings,
                server_project.server_context(self, state, state.path),
                [f.key for f in lazy])
        except Exception:  # noqa: BLE001 - no edits: the action is offered without a fix
            edits = {}
        for f in lazy:
            if not f.resolved:
                f.resolve(edits.get(tuple(f.key), ()))

    def findings_at(self, state: DocState, rng: types.Range) -> list:
        lines = split_lines(state.text)
        out = []
        for d in state.diagnostics:
            r = self.range(lines, d.line, d.column, d.end_line, d.end_column)
            if (r.start.line, r.start.character) <= (rng.end.line, rng.end.character) and \
                    (rng.start.line, rng.start.character) <= (r.end.line, r.end.character):
                out.append(d)
        return out

    def cell_findings_at(self, cell_uri: str, rng: types.Range) -> list:
        """A notebook cell's findings at ``rng`` (hover), if they are for its text now."""
        state = self.docs.get(self.cell_owner.get(cell_uri, ""))
        if state is None or state.nb is None:
            return []
        uris = [u for u, _ in state.nb.cell_uris]
        if cell_uri not in uris:
            return []
        number = uris.index(cell_uri) + 1
        source = state.nb.sources[number - 1]
        if self.workspace.get_text_document(cell_uri).source != source:
            return []
        lines = split_lines(source)
        out = []
        for d in state.diagnostics:
            if (d.cell or 1) != number:
                continue
            r = self.range(lines, d.line, d.column, d.end_line, d.end_column)
            if (r.start.line, r.start.character) <= (rng.end.line, rng.end.character) and \
                    (rng.start.line, rng.start.character) <= (r.end.line, r.end.character):
                out.append(d)
        return out


def _not_checked(path: str, reason: str) -> Diagnostic:
    from .engine import not_checked

    return not_checked(path, reason)


def _parse_error(path: str, message: str) -> Diagnostic:
    from .engine import parse_error

    return parse_error(path, message)


def _crash(path: str, error: BaseException) -> Diagnostic:
    """REF903, as ``reflint check`` reports a failed worker (a bug in reflint, not the file)."""
    from .engine import internal_error

    return internal_error(path, error)


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


def noqa_comments(text: str) -> list:
    from .engine import noqa_comments as comments

    return comments(text)


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


def serve(args, pool: Workers, front, reader, backlog) -> int:
    """The server phase of ``reflint server`` (reflint.server_front.main has read the first
    messages; ``backlog`` holds those it has not taken yet)."""
    server = create_server(pool, args.debounce, args.timeout)
    server.project = not getattr(args, "no_project", False)
    from pygls.io_ import StdoutWriter

    server._stop_event = __import__("threading").Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    rc = 0
    try:
        asyncio.run(_session(server, front, reader, backlog))
    except BrokenPipeError:
        log.error("the connection to the editor is lost; shutting down")
    except KeyboardInterrupt:
        pass
    except SystemExit as e:  # `exit`: 0 after `shutdown`, else 1 (pygls, as LSP says)
        rc = e.code if isinstance(e.code, int) else 0
    finally:
        server.shutdown()
        pool.close()
    return rc


async def _session(server: ReflintServer, front, reader, backlog) -> None:
    loop = asyncio.get_running_loop()
    events: asyncio.Queue = asyncio.Queue()

    def sink(event):
        loop.call_soon_threadsafe(events.put_nowait, event)

    server.protocol.answered.update(front.suppress)
    for event in front.pending:
        if not _handle(server, event):
            return
        if front.early or front.published:
            _take_early(server, front)
    _take_early(server, front)
    server.pool.grow()  # the other workers (the start-up phase started one)
    reader.redirect(sink, backlog)
    while not server._stop_event.is_set():
        event = await events.get()
        if event[0] in ("result", "ready"):
            continue  # an early analysis the server phase took over
        if not _handle(server, event):
            break


def _take_early(server: ReflintServer, front) -> None:
    """Hand the start-up phase's analyses to the documents' states: a published one is not
    analysed again, one still running is awaited instead of started again."""
    server.encoding = front.encoding
    for uri, (version, text, path, settings, found) in list(front.published.items()):
        state = server.docs.get(uri)
        if state is not None and state.text is None:
            del front.published[uri]
            state.version, state.text, state.path, state.settings = version, text, path, settings
            state.raw, state.facts = found[:2]
            state.diagnostics = found[0]
            state.digest = found[2].get("digest") if len(found) > 2 else None
            state.lsp = {uri: [diagnostic_json(d, split_lines(text), uri, front.encoding)
                               for d in found[0]]}
    for uri, (version, text, path, settings, future) in list(front.early.items()):
        state = server.docs.get(uri)
        if state is not None and state.text is None:
            del front.early[uri]
            state.early = (version, text, future)


def _handle(server: ReflintServer, event) -> bool:
    """Handle one event of the message stream; False when the session ends."""
    import json

    kind, payload = event
    if kind == "eof":
        return False
    if kind == "fatal":
        server.framing_error(payload)
        return False
    if kind != "message":
        return True
    try:
        message = json.loads(payload, object_hook=server.protocol.structure_message)
    except Exception:  # noqa: BLE001 - a framing error: skip it, resynchronise
        server.framing_error("a message from the editor was malformed (its Content-Length "
                             "does not match its body?); it was skipped")
        return True
    try:
        server.protocol.handle_message(message)
    except Exception as exc:  # noqa: BLE001 - as pygls: report and go on
        log.exception("unable to handle a message")
        from pygls.exceptions import JsonRpcException

        server.report_server_error(exc, JsonRpcException)
    _forget_finished(server.protocol)
    return True


def create_server(workers=DEFAULT_WORKERS, debounce: float = DEFAULT_DEBOUNCE,
                  timeout: float = DEFAULT_TIMEOUT, processes: bool = True,
                  max_analysis_time: Optional[float] = None) -> ReflintServer:
    """The server; ``workers``: their number, or a started Workers pool."""
    server = ReflintServer(workers, debounce, timeout, processes, max_analysis_time)

    @server.feature(types.INITIALIZE)
    def initialize(ls: ReflintServer, params) -> None:
        encoding = ls.workspace.position_encoding
        ls.encoding = getattr(encoding, "value", encoding) or "utf-16"

    @server.feature(types.INITIALIZED)
    def initialized(ls: ReflintServer, params) -> None:
        ls.pool._get()  # start the workers (they import the analysis) while the user reads

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ReflintServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        ipynb = doc.uri.lower().endswith(".ipynb")
        if not ipynb and not is_python(doc.uri, doc.language_id):
            return
        ls.docs[doc.uri] = DocState(doc.uri, ipynb=ipynb)
        ls.schedule(doc.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ReflintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in ls.docs and not ls.try_quick(uri):
            ls.schedule(uri, ls.debounce)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: ReflintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        ls.docs[uri] = DocState(uri, notebook=True)
        ls.schedule(uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: ReflintServer,
                        params: types.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        if uri in ls.docs:
            ls.schedule(uri, ls.debounce)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: ReflintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.close(params.notebook_document.uri)

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
        ls.close(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: ReflintServer, params: types.HoverParams) -> Optional[types.Hover]:
        uri = params.text_document.uri
        at = types.Range(start=params.position, end=params.position)
        state = ls.current(uri)
        if state is not None:
            found = ls.findings_at(state, at)
        else:
            found = ls.cell_findings_at(uri, at) if uri in ls.cell_owner else []
        parts = []
        for d in found:
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
            found = ls.findings_at(state, params.range)
            text = state.text
            await ls.build_fixes(state, found)
            if ls.current(uri) is not state or state.text != text:
                return None  # the document changed meanwhile: its actions are asked again
            for d in found:
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
            fixed, count, error = await ls.pool.call(
                server_project.fix, state.text, state.path, state.settings,
                server_project.server_context(ls, state, state.path))
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
    """``reflint server`` (reflint.server_front.main: the start-up phase, then ``serve``)."""
    from .server_front import main as front_main

    return front_main(argv)
