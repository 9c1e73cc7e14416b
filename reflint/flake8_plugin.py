"""flake8 plugin: reflint's analysis and rules, reported through flake8 (code prefix REF).

There is no second implementation: the plugin joins the lines flake8 read, runs
``reflint.engine.lint_source`` on them with the settings ``reflint check`` would use for the
file (the nearest ``[tool.reflint]``), and yields flake8's tuples. flake8 then applies its own
selection (``--select``, ``extend-select``, ``per-file-ignores``) and ``# noqa`` handling.

As in ``reflint check``, a file the pre-filter keeps (one that may reach libcst's native
parser) is checked in a forked child (``reflint.isolate.Worker``, one per flake8 process, kept
warm between files): a crash or the per-file memory limit costs that file a REF903/REF904, not
flake8's run. Files the pre-filter rules out are checked here (no native parse, no fork).

**The project** (docs/project.md): a file that lives in a project (the folder of the nearest
``pyproject.toml`` above it, else flake8's working folder when it holds the file) is checked
with that project's module summaries, as ``reflint check ROOT`` checks it: a kernel launched
by another module, a jitted function called from another module ... The project is built from
the disk once per flake8 process, before the child is forked (the child inherits it), with
the summary cache ``reflint check`` keeps (``.reflint_cache`` at the root, or
``REFLINT_CACHE_DIR``; written here too, so the next run summarizes only changed modules);
at most ``reflint.server_project.MAX_FILES`` files, else each file is checked alone.
``--reflint-no-project`` (or ``reflint-no-project = true`` in flake8's configuration) checks
every file alone.
"""

from __future__ import annotations

import ast
import atexit
import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Iterator

from . import __version__, isolate
from .config import Resolver
from .engine import FileResult, internal_error, lint_source, prefilter

_RESOLVER = None
_NO_PROJECT = False  # --reflint-no-project


def _settings_for(filename: str):
    global _RESOLVER
    if _RESOLVER is None:
        _RESOLVER = Resolver()
    if filename in ("stdin", "-", "") or not os.path.exists(filename):
        base = os.path.dirname(os.path.abspath(filename)) if filename not in ("stdin", "-", "") \
            else os.getcwd()
        return _RESOLVER.for_dir(base if os.path.isdir(base) else os.getcwd())
    return _RESOLVER.for_file(filename)


_WORKER = None


def _worker() -> isolate.Worker:
    global _WORKER
    if _WORKER is None:
        isolate.preload()  # imports and first-use tables here, once: the child starts warm
        _WORKER = isolate.Worker(_lint_total)
        atexit.register(_WORKER.close)
    return _WORKER


def _project(filename: str, source: str):
    """The project the file is checked in (None: alone)."""
    if _NO_PROJECT or filename in ("stdin", "-", ""):
        return None
    try:
        from . import server_project

        return server_project.project_for_file(os.path.abspath(filename), source,
                                               (os.getcwd(),), write_cache=True)
    except Exception:  # noqa: BLE001 - a project is an extra: the file is still checked
        return None


_ASK = object()


def _lint_total(source: str, filename: str, settings, tree=None, project=_ASK) -> FileResult:
    """``lint_source`` with the file's project active, and the per-file memory limit's
    ``MemoryError`` as REF904. In the child, the project comes from the parent's memo (built
    there before the fork); in this process, the caller has it already."""
    if project is _ASK:
        project = _project(filename, source)
    if project is not None:
        from . import project as _active

        _active.activate(project)
    try:
        # flake8 reports findings, never fixes: a fix's edits (libcst's own parse and a second
        # analysis) are not built.
        return lint_source(source, filename, settings, tree=tree, lazy_fixes=True)
    except MemoryError:
        return FileResult(filename, [isolate.out_of_memory(filename)])
    finally:
        if project is not None:
            _active.activate(None)


def _must_analyse(filename: str, source: str, project) -> bool:
    """Whether the project gives the file facts that the pre-filter cannot see (a kernel
    that only another module launches): it is then checked in the child."""
    if project is None:
        return False
    try:
        view = project.view(os.path.abspath(filename))
        return view is not None and (view.must_analyse_text(source) or
                                     bool(view.traced_elsewhere()))
    except Exception:  # noqa: BLE001
        return False


class Flake8Plugin:
    """Registered as ``REF = "reflint.flake8_plugin:Flake8Plugin"`` (flake8.extension)."""

    name = "reflint"
    version = __version__

    @classmethod
    def add_options(cls, option_manager) -> None:
        import argparse

        try:
            option_manager.add_option(
                "--reflint-no-project", action="store_true", default=False,
                parse_from_config=True,
                help="reflint: check every file alone, without the summaries of the other "
                     "modules of its project (docs/project.md)")
        except argparse.ArgumentError:  # the plugin registered twice (two installed
            # distributions of it, e.g. before and after the rename): once is enough
            pass

    @classmethod
    def parse_options(cls, options) -> None:
        global _NO_PROJECT
        _NO_PROJECT = bool(getattr(options, "reflint_no_project", False))

    def __init__(self, tree, lines, filename):
        # flake8's ``ast`` of the file: the pre-filter's second stage and the fast tree
        # (reflint.fasttree) start from it instead of parsing the file again.
        self.tree = tree
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[tuple]:
        source = "".join(self.lines)
        settings = _settings_for(self.filename)
        tree = self.tree if isinstance(self.tree, ast.Module) else None
        try:
            # Built here, before the child is forked, so that the child inherits it.
            project = _project(self.filename, source)
            if isolate.enabled() and (
                    prefilter(settings.for_path(self.filename)).search(source) or
                    _must_analyse(self.filename, source, project)):
                # flake8's tree is not sent to the child: it parses the file again with ast.
                result = _worker().call(source, self.filename, settings)
                if isinstance(result, isolate.Died):
                    d = isolate.describe_death(self.filename, result)
                    yield 1, 0, f"{d.code} {d.message}", type(self)
                    return
            else:
                result = _lint_total(source, self.filename, settings, tree, project)
        except (Exception, RecursionError, MemoryError) as e:  # noqa: BLE001 - as `reflint
            # check`: report (REF903), do not crash
            yield 1, 0, f"REF903 {internal_error(self.filename, e).message}", type(self)
            return
        for d in result.diagnostics:
            # flake8 columns are 0-based in the tuple; flake8 adds 1 when printing.
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
