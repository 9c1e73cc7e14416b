"""Command line: ``reflint check``, ``reflint rule``, ``reflint rules``, ``reflint run``.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import gc
import os
import stat
import sys

from . import __version__, limits
from .codes import CODES, META_CODES
from .config import ConfigError, Resolver, overrides_from_args, show_settings
from .engine import FileResult, attach_fix_source, lint_bytes, ruled_out_by_text
from .engine import decode, lint_source
from .engine import INTERNAL_ERROR, internal_error, not_checked
from .discovery import (NOTEBOOK_SUFFIX, PYTHON_SUFFIXES, Unfit, UsageError, discover,  # noqa: F401
                        excluded_with_parents, is_lintable_name, is_notebook,
                        read_source_file, unfit)
from ._lazy import lazy
from .rule import all_rules, rule_by_code
from .settings import DEFAULT_EXCLUDE, DEFAULT_TARGET_JAX_VERSION, Settings

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

# Imported when first used: a check of files without findings reads no notebook, writes no
# report and forks no child (reflint.isolate).
notebook = lazy("reflint.notebook")

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

SKIP_DIRS = frozenset(d for d in DEFAULT_EXCLUDE if "*" not in d)  # --watch's snapshot
FORMATS = ["text", "concise", "json", "sarif", "github", "gitlab", "junit", "pylint"]


# Parallel checking: below this much source text to analyse, one process is faster than
# starting workers.
PARALLEL_MIN_CHARS = 64_000

_WORKER_SETTINGS: Optional[Settings] = None
# Whether the output reads the fixes' edits (json, --show-fixes): when not, a fix is a
# LazyFix (reflint.diagnostics) and a file with findings is never parsed by libcst.
_LAZY_FIXES = False


def _init_worker(settings: Settings, project=None, limit: bool = False,
                 lazy_fixes: Optional[bool] = None) -> None:
    global _WORKER_SETTINGS, _LAZY_FIXES
    _WORKER_SETTINGS = settings
    if lazy_fixes is not None:
        _LAZY_FIXES = lazy_fixes
    if project is not None:  # a spawned worker does not inherit the parent's
        from . import project as _project

        _project.activate(project)
    if limit:  # a pool worker: the per-file memory limit (isolate)
        from .isolate import limit_memory

        limit_memory()


def _lint_task(task) -> tuple:
    """(index, path, bytes[, kept by the textual pre-filter]) -> (index, diagnostics,
    cacheable, stage), run in a worker.

    Everything after reading happens here, in parallel: decoding, the textual pre-filter (a
    file it rules out only gets a syntax check and its suppressions checked: stage
    "skipped"), the ``ast`` stage (reflint.gate: "gated") and, for what is left, the tree and
    the analysis ("analysed")."""
    index, path, data = task[:3]
    regex_done = len(task) > 3 and task[3]  # the parent's textual pre-filter kept it
    settings = _WORKER_SETTINGS if _WORKER_SETTINGS is not None else Settings()
    if is_notebook(path):
        try:
            return index, notebook.lint(data, path, settings).diagnostics, True, "analysed"
        except (Exception, RecursionError, MemoryError) as e:  # noqa: BLE001 - one file
            return index, [internal_error(path, e)], False, "analysed"
    # A syntax tree is millions of young objects without cycles: the cyclic garbage collector
    # would scan the growing tree again and again while it is built. It is paused for the
    # file; one collection afterwards frees whatever the analysis left in cycles.
    gc_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            source = decode(data)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            return index, lint_bytes(data, path, settings).diagnostics, True, "skipped"
        # The engine stages the file (pre-filter, gate, analysis) and says which decided.
        res = lint_source(source, path, settings, regex_done=regex_done,
                          lazy_fixes=_LAZY_FIXES)
        return index, res.diagnostics, True, res.stage
    except MemoryError:  # over the per-file memory limit (isolate): not checked
        from .isolate import out_of_memory

        return index, [out_of_memory(path)], False, "analysed"
    except (Exception, RecursionError) as e:  # noqa: BLE001 - one file only
        return index, [internal_error(path, e)], False, "analysed"
    finally:
        if gc_enabled:
            gc.enable()
            if not limits.keep_until_exit():  # (a process about to exit frees nothing)
                gc.collect(0)


def _project_digest(path: str) -> str:
    m = sys.modules.get("reflint.project")
    return m.cache_digest(path) if m is not None and m.active() is not None else ""


def _lint_batch(batch: list) -> list:
    """_lint_task for each task of ``batch``, in one round trip to a worker."""
    return [_lint_task(t) for t in batch]


# Small files travel to the workers in batches of about this much text: one task per file
# costs a round trip (pickling, queues, a future) that is a good part of a small file's check.
BATCH_CHARS = 48_000


def _batches(ordered: list) -> list:
    """``ordered`` (biggest first) cut into batches: a big file alone, small ones together."""
    out: list = []
    batch: list = []
    size = 0
    for t in ordered:
        batch.append(t)
        size += _cost(t)
        if size >= BATCH_CHARS:
            out.append(batch)
            batch, size = [], 0
    if batch:
        out.append(batch)
    return out


def _cost(task) -> float:
    """A task's expected work: its size (a file the pre-filter rules out costs less, but
    which those are is only known in the worker)."""
    return len(task[2])


def _pool_context():
    import multiprocessing

    if sys.platform.startswith("linux"):
        try:
            return multiprocessing.get_context("fork")  # workers inherit the imports
        except ValueError:  # pragma: no cover
            pass
    return multiprocessing.get_context()


def _run_tasks(tasks: list, settings: Settings, jobs: int):
    """Yield _lint_task's result for every task, in any order.

    With several jobs, files are checked in worker processes, and a worker that dies (a
    segmentation fault in a native parser, the OOM killer) costs only its own file: the
    files not yet done are checked again in a new pool, one per task, and a file that still
    brings its worker down is checked alone and reported as REF903."""
    total = sum(_cost(t) for t in tasks)
    if jobs > 1 and len(tasks) > 1 and total >= PARALLEL_MIN_CHARS:
        # Imported here: multiprocessing costs ~20 ms of start-up that one file never needs.
        from concurrent.futures.process import BrokenProcessPool

        pending = {t[0]: t for t in tasks}

        def by_cost():  # biggest files first: the slowest task starts at once
            return sorted(pending.values(), key=lambda t: -_cost(t))

        rounds = (lambda: _batches(by_cost()), lambda: [[t] for t in by_cost()])
        for make_batches in rounds:
            try:
                yield from _pool_results(make_batches(), settings, jobs, pending)
                return
            except BrokenProcessPool:
                continue  # a worker died: the files not done yet, again
            except OSError:
                break  # no worker processes here (sandbox): finish in this process
        else:
            # Each file left runs alone: the one that kills its worker is the culprit.
            for t in sorted(pending.values(), key=lambda t: t[0]):
                try:
                    yield from _pool_results([[t]], settings, 1, {t[0]: t})
                except BrokenProcessPool:
                    yield t[0], [_worker_died(t[1])], False, "analysed"
            return
        tasks = list(pending.values())
    _init_worker(settings)
    # A file the textual pre-filter rules out never reaches libcst's native parser: it is
    # checked here. One forked child checks the others in turn; a crash costs only its file
    # (isolate). So a run over files without ref code forks no child.
    rest = []
    for t in tasks:
        res, kept = _ruled_out_task(t, settings)
        if res is None:
            rest.append((*t[:3], kept))  # kept: the child does not search the text again
        else:
            yield res
    if not rest:
        return
    from . import isolate

    for t, res in isolate.map_isolated(_lint_task, rest, keep_last=True):
        yield res if not isinstance(res, isolate.Died) else _died_result(t, res)


def _ruled_out_task(task, settings: Settings) -> tuple:
    """(_lint_task's result for a file decided without libcst, or None for any other file: a
    notebook, undecodable bytes, a candidate, a syntax error, an error here; whether the
    textual pre-filter kept it) (engine.ruled_out_by_text)."""
    index, path, data = task[:3]
    if is_notebook(path):
        return None, False
    gc_enabled = gc.isenabled()
    gc.disable()  # as in _lint_task: CPython's parse builds a tree of young objects
    try:
        res, kept = ruled_out_by_text(decode(data), path, settings)
    except (Exception, RecursionError):  # noqa: BLE001 - the child decides (and reports)
        return None, False
    finally:
        if gc_enabled:
            gc.enable()
    return (None if res is None else (index, res.diagnostics, True, res.stage)), kept


def _pool_results(batches: list, settings: Settings, jobs: int, pending: dict):
    """Run ``batches`` on a process pool; yield each result, removing its task from
    ``pending``. Raises BrokenProcessPool when a worker dies."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = _pool_context()
    if context.get_start_method() == "fork":
        _warm_for_fork()
    pool = ProcessPoolExecutor(max_workers=max(1, min(jobs, len(batches))),
                               mp_context=context, initializer=_init_worker,
                               initargs=(settings, _active_project(), True, _LAZY_FIXES))
    try:
        futures = [pool.submit(_lint_batch, b) for b in batches]
        for fut in as_completed(futures):
            for res in fut.result():
                pending.pop(res[0], None)
                yield res
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _warm_for_fork() -> None:
    """Import what every worker needs (the fast tree, the gate, the analysis, the rules; not
    libcst, which only a fix's edits need) once, here, before the workers are forked: they inherit it instead of each
    importing it (about 0.4 CPU-s a worker); ``gc.freeze`` keeps the inherited objects out of
    the workers' collections, so their pages stay shared."""
    import importlib

    for name in ("reflint.fasttree", "reflint.gate", "reflint.analysis"):
        importlib.import_module(name)
    all_rules()
    gc.freeze()


def _active_project():
    m = sys.modules.get("reflint.project")
    return m.active() if m is not None else None


def _died_result(task, died) -> tuple:
    """The result of a task whose child process died: REF904 when it ran out of memory,
    REF903 otherwise (a crash is a bug)."""
    from .isolate import describe_death

    return task[0], [describe_death(task[1], died)], False, "analysed"


def _worker_died(path: str):
    return internal_error(path, RuntimeError(
        "the worker process checking this file died (a crash in a native parser, or killed "
        "for memory)"))


def check_paths(files: list, settings: Settings, jobs: int, cache=None,
                stats: Optional[dict] = None) -> list:
    """Lint ``files``; one FileResult per file, in the order of ``files``.

    The parent only reads each file and looks its result up in ``cache`` (a
    reflint.cache.Cache, keyed by the bytes); everything else runs across ``jobs`` processes
    (see _lint_task). A result's ``source`` is decoded only if it has diagnostics (the
    output shows their lines)."""
    results: list = [None] * len(files)
    todo = []  # (index, path, bytes)
    keys: dict = {}
    data_of: dict = {}
    cached = 0
    for i, path in enumerate(files):
        try:
            data = read_source_file(path, settings.max_file_size)
        except Unfit as e:
            results[i] = FileResult(path, [not_checked(path, str(e))])
            continue
        except OSError as e:
            results[i] = FileResult(path, [not_checked(path, f"cannot read file: "
                                                                f"{e.strerror or e}")])
            continue
        data_of[i] = data
        if cache is not None:
            # The facts read from other modules are part of the key: a changed module
            # re-checks the modules that read it.
            key = cache.key(path, data, settings, _project_digest(path))
            diags = cache.get(key, path)
            if diags is not None:
                from .diagnostics import LazyFix

                if any(isinstance(d.fix, LazyFix) for d in diags):
                    _lazy_from_cache(diags, data, path, settings)
                results[i] = FileResult(path, diags)
                cached += 1
                continue
            keys[i] = key
        todo.append((i, path, data))
    counts = {"skipped": 0, "gated": 0, "analysed": 0}
    for index, diags, cacheable, stage in _run_tasks(todo, settings, jobs):
        results[index] = FileResult(files[index], diags, skipped=stage != "analysed")
        counts[stage] += 1
        if cache is not None and cacheable and index in keys:
            cache.put(keys[index], files[index], diags)
    for i, res in enumerate(results):
        if res.diagnostics and res.source is None and i in data_of:
            try:
                res.source = data_of[i].decode("utf-8-sig") if \
                    is_notebook(res.path) else decode(data_of[i])
            except (SyntaxError, UnicodeDecodeError, LookupError):
                pass
    # Work done in this run: skipped by the textual pre-filter (a syntax check only), ruled
    # out by its ast stage, analysed; cached: results read from the cache.
    info = {"files": len(files), "cached": cached, **counts}
    if stats is not None:
        stats.update(info)
    if os.environ.get("REFLINT_STATS"):
        print(f"reflint: {info['files']} files: {info['skipped']} skipped by the pre-filter, "
              f"{info['gated']} ruled out by its ast stage, {cached} from the cache, "
              f"{info['analysed']} analysed", file=sys.stderr)
    return results


def _lazy_from_cache(diags: list, data: bytes, path: str, settings: Settings) -> None:
    """Cached LazyFixes get their file back (and their edits now, when the output reads
    them)."""
    from .diagnostics import LazyFix

    try:
        attach_fix_source(diags, decode(data), path, settings)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return
    if not _LAZY_FIXES:
        for d in diags:
            if isinstance(d.fix, LazyFix):
                d.fix.edits  # noqa: B018 - built here, while the project is active


def _cache_from(args):
    if getattr(args, "no_cache", False):
        return None
    from .cache import Cache

    return Cache(getattr(args, "cache_dir", None))


def _check_grouped(pairs: list, jobs: int, cache=None) -> list:
    """Check files with their own settings (one ``check_paths`` call per configuration),
    returning results in the order of ``pairs``."""
    groups: dict = {}
    order: list = []
    for f, s in pairs:
        if id(s) not in groups:
            groups[id(s)] = (s, [])
            order.append(id(s))
        groups[id(s)][1].append(f)
    by_path = {}
    for key in order:
        s, files = groups[key]
        for res in check_paths(files, s, jobs, cache=cache):
            by_path[res.path] = res
    return [by_path[f] for f, _ in pairs if f in by_path]


def _resolver(args) -> Resolver:
    try:
        return Resolver(overrides_from_args(args), args.config)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def _emit(args, all_diags, sources, n_files, out=None) -> None:
    if out is None and getattr(args, "output_file", None):
        try:
            with open(args.output_file, "w", encoding="utf-8") as fh:
                return _emit(args, all_diags, sources, n_files, out=fh)
        except OSError as e:
            raise UsageError(f"--output-file {args.output_file}: {e.strerror or e}") from None
    from .output import (format_concise, format_github, format_gitlab, format_json,
                         format_junit, format_pylint, format_sarif, format_statistics,
                         format_statistics_json, format_text, summary_line, use_color)

    out = out or sys.stdout
    fmt = args.format
    if getattr(args, "fix_only", False):
        _emit_fix_only(args, out)
        return None
    if args.statistics and fmt == "json":
        out.write(format_statistics_json(all_diags))
    elif args.statistics:
        out.write(format_statistics(all_diags))
    elif fmt == "gitlab":
        out.write(format_gitlab(all_diags))
    elif fmt == "junit":
        out.write(format_junit(all_diags, getattr(args, "_checked", None)))
    elif fmt == "pylint":
        out.write(format_pylint(all_diags))
    elif fmt == "json":
        out.write(format_json(all_diags))
    elif fmt == "concise":
        out.write(format_concise(all_diags))
    elif fmt == "sarif":
        out.write(format_sarif(all_diags))
    elif fmt == "github":
        out.write(format_github(all_diags))
    else:
        text = format_text(all_diags, sources, color=use_color(out),
                           show_fixes=getattr(args, "show_fixes", False))
        if text:
            out.write(text + "\n")
    if fmt in ("text", "concise") and not args.quiet and not args.statistics:
        fixable = sum(1 for d in all_diags if d.fix and d.fix.applicability == "safe")
        out.write(summary_line(len(all_diags), n_files, 0 if args.fix else fixable,
                               len({d.path for d in all_diags})) + "\n")
        excluded = getattr(args, "_excluded", None)
        if excluded:
            out.write(excluded_line(excluded) + "\n")
        if getattr(args, "show_fixes", False) and getattr(args, "_fixed", None):
            out.write(fixed_report(args._fixed))
    return None


def fixed_report(fixed: dict) -> str:
    """``--show-fixes`` after ``--fix``: the fixes applied, per file and code (as ruff)."""
    from collections import Counter

    total = sum(sum(c.values()) for c in fixed.values())
    if not total:
        return ""
    names = {r.code: r.name for r in all_rules()}
    lines = [f"\nFixed {total} error{'s' if total != 1 else ''}:"]
    for path, counts in fixed.items():
        if not counts:
            continue
        lines.append(f"- {path}:")
        for code, n in sorted(Counter(counts).items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"    {n} \u00d7 {code} ({names.get(code, code)})")
    return "\n".join(lines) + "\n"


def _emit_fix_only(args, out) -> None:
    """``--fix-only``: what was fixed, never the findings left."""
    fixed = getattr(args, "_fixed", None) or {}
    total = sum(sum(c.values()) for c in fixed.values())
    if args.quiet:
        return
    if getattr(args, "show_fixes", False) and total:
        out.write(fixed_report(fixed).lstrip("\n"))
    elif total:
        out.write(f"Fixed {total} error{'s' if total != 1 else ''}.\n")
    else:
        out.write("No errors fixed.\n")


def excluded_line(excluded: list) -> str:
    """Which paths the configuration excluded (so that "All checks passed" at a repository's
    root does not hide that ``examples/`` was never checked), as ruff tells of excluded
    paths."""
    shown = [os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p
             for p, _ in excluded[:5]]
    more = f", and {len(excluded) - 5} more" if len(excluded) > 5 else ""
    n = len(excluded)
    return (f"Not checked: {n} path{'s' if n != 1 else ''} excluded by the configuration "
            f"({', '.join(shown)}{more}); name a path to check it, or see --show-settings.")


def _exit_code(args, diags) -> int:
    """0 clean, 1 findings (REF900 and REF904 included), 2 when reflint itself failed on a
    file (REF903), even with ``--exit-zero``: a run that did not check everything it should
    have must not pass silently. ``--fix-only`` exits 0 whatever is left, and
    ``--exit-non-zero-on-fix`` 1 when something was fixed (as ruff)."""
    if any(d.code == INTERNAL_ERROR for d in diags):
        return EXIT_ERROR
    fixed = getattr(args, "_fixed", None) or {}
    if getattr(args, "exit_non_zero_on_fix", False) and \
            any(sum(c.values()) for c in fixed.values()):
        return EXIT_FINDINGS
    if args.exit_zero or getattr(args, "fix_only", False):
        return EXIT_OK
    return EXIT_FINDINGS if diags else EXIT_OK


def cmd_check(args) -> int:
    if getattr(args, "fix_only", False):
        args.fix = True
    if args.fix and args.diff:
        raise UsageError("--fix and --diff cannot be used together")
    if getattr(args, "add_noqa", False) and (args.fix or args.diff):
        raise UsageError("--add-noqa cannot be used with --fix, --fix-only or --diff")
    if getattr(args, "watch", False):
        if "-" in (args.paths or []) or args.fix or args.diff or \
                getattr(args, "add_noqa", False):
            raise UsageError("--watch cannot be used with '-', --fix, --diff or --add-noqa")
        return watch(args)
    try:
        return _cmd_check(args)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    finally:
        _end_project()


WATCH_INTERVAL_S = 0.5


def _snapshot(paths: list) -> dict:
    """(mtime, size) of every lintable file and configuration under ``paths`` (and the
    pyproject.toml files above them)."""
    out = {}
    for p in paths:
        for root, dirs, files in os.walk(p) if os.path.isdir(p) else [("", [], [p])]:
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
            for f in files:
                if f.endswith((".py", ".pyi", NOTEBOOK_SUFFIX, ".toml", ".gitignore")) or \
                        not root:
                    full = os.path.join(root, f)
                    try:
                        st = os.stat(full)
                    except OSError:
                        continue
                    out[full] = (st.st_mtime_ns, st.st_size)
    return out


def watch(args, rounds: Optional[int] = None) -> int:
    """``--watch``: check, then check again whenever a file under the paths changes (as
    ruff's ``--watch``); Ctrl-C ends it (exit 0). ``rounds`` bounds the checks (tests)."""
    import time

    paths = args.paths or ["."]
    args.watch = False
    before = None
    done = 0
    try:
        while rounds is None or done < rounds:
            now = _snapshot(paths)
            if now != before:
                before = now
                if sys.stdout.isatty():
                    sys.stdout.write("\x1b[2J\x1b[H")
                stamp = time.strftime("%H:%M:%S")
                print(f"[{stamp}] {'Starting' if not done else 'File change detected'}: "
                      f"checking {', '.join(paths)} ...", file=sys.stderr)
                try:
                    _cmd_check(args)
                except (UsageError, ConfigError) as e:
                    print(f"reflint: error: {e}", file=sys.stderr)
                sys.stdout.flush()
                done += 1
                print(f"[{time.strftime('%H:%M:%S')}] Watching for file changes "
                      f"(Ctrl-C to stop).", file=sys.stderr)
            time.sleep(WATCH_INTERVAL_S)
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _cmd_check(args) -> int:
    resolver = _resolver(args)
    paths = args.paths or ["."]
    if "-" in paths:
        if len(paths) > 1:
            raise UsageError("'-' (standard input) cannot be combined with other paths")
        return cmd_check_stdin(args, resolver)
    if args.show_settings:
        p = paths[0]
        settings = resolver.for_file(p) if os.path.isfile(p) else resolver.for_dir(
            p if os.path.isdir(p) else ".")
        sys.stdout.write(show_settings(settings))
        return EXIT_OK
    problems: list = []
    excluded: list = []
    warnings: list = []
    pairs = discover(paths, resolver, args.force_exclude, problems, excluded, warnings)
    for w in warnings:
        print(f"reflint: warning: {w}", file=sys.stderr)
    if not pairs and not problems and not warnings:
        print(f"reflint: warning: no Python files or notebooks found under "
              f"{', '.join(paths)} (0 files checked)", file=sys.stderr)
    args._excluded = excluded
    args._fixed = {}
    args._checked = [f for f, _ in pairs]
    settings_of = {f: s for f, s in pairs}
    jobs = args.jobs if args.jobs else (os.cpu_count() or 1)
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    global _LAZY_FIXES
    _LAZY_FIXES = args.format != "json" and not getattr(args, "show_fixes", False)
    _start_project(args, _with_project_root(args, [f for f, _ in pairs], resolver), jobs,
                   settings_of=settings_of)
    results = _check_grouped(pairs, jobs, cache=_cache_from(args))
    results += [FileResult(p, [not_checked(p, why)]) for p, _, why in problems]
    roots = checked_roots(paths)
    all_diags = []
    sources = {}
    fix_notes = []
    diff_text = []
    fixing = [(i, (res.source, res.path, settings_of.get(res.path) or
                   resolver.for_file(res.path))) for i, res in enumerate(results)
              if (args.fix or args.diff) and res.source is not None and
              not is_notebook(res.path) and any(d.fix for d in res.diagnostics)]
    # All the fixes in one child process (reflint.isolate): a crash costs only its file.
    outcomes: dict = {}
    if fixing:
        from . import isolate

        outcomes = dict(zip([i for i, _ in fixing], isolate.fix_sources([t for _, t in fixing])))
    for i, res in enumerate(results):
        settings = settings_of.get(res.path) or resolver.for_file(res.path)
        if is_notebook(res.path):
            res = _notebook_fix(args, res, settings, roots, fix_notes, diff_text)
        elif args.fix or args.diff:
            if i in outcomes:
                outcome = outcomes[i]
                fix_notes.extend(f"{res.path}: {r}" for r in outcome.rejected)
                if outcome.error:
                    fix_notes.append(f"{res.path}: {outcome.error}")
                elif outcome.fixed:
                    if args.diff:
                        diff_text.append(_diff(res.source, outcome.source, res.path))
                    else:
                        problem = _write_fixed(res.path, outcome.source, roots,
                                               expected=res.source)
                        if problem:
                            fix_notes.append(f"{res.path}: {problem}")
                        else:
                            fix_notes.append(f"{res.path}: fixed {outcome.fixed} "
                                             f"finding{'s' if outcome.fixed != 1 else ''}")
                            args._fixed[res.path] = _fixed_codes(res.diagnostics,
                                                                 outcome.remaining)
                            res = FileResult(res.path, outcome.remaining, outcome.source)
        all_diags.extend(res.diagnostics)
        if res.source is not None and res.diagnostics:
            sources[res.path] = _frame_source(res)
    if args.diff:
        sys.stdout.write("".join(diff_text))
        for n in fix_notes:
            print(n, file=sys.stderr)
        if not diff_text:
            unsafe = sum(1 for d in all_diags if d.fix is not None and
                         d.fix.applicability != "safe" and not
                         (settings_of.get(d.path) or resolver.for_file(d.path)).unsafe_fixes)
            if unsafe:
                print(f"No safe fixes; {unsafe} unsafe fix{'es' if unsafe != 1 else ''} "
                      f"available: --diff --unsafe-fixes shows "
                      f"{'them' if unsafe != 1 else 'it'}.", file=sys.stderr)
        return EXIT_FINDINGS if diff_text and not args.exit_zero else EXIT_OK
    if getattr(args, "add_noqa", False):
        from .addnoqa import add_noqa

        return add_noqa(results, all_diags, roots)
    global _PENDING_EXIT
    _PENDING_EXIT = _exit_code(args, all_diags)  # what a broken pipe while printing returns
    _emit(args, all_diags, sources, len(pairs) + len(problems))
    if not args.quiet:
        for n in fix_notes:
            print(n, file=sys.stderr)
    return _exit_code(args, all_diags)


def _start_project(args, files: list, jobs: int, read=None,
                   settings_of: Optional[dict] = None) -> None:
    """The summary phase (reflint.project): every checked module's summary, then the facts
    each module reads from the others. ``--no-project``: every file alone. ``settings_of``
    (path -> settings of the files checked next): the summary phase also asks the gate about
    them (engine.SummaryPhaseGate)."""
    if getattr(args, "no_project", False) or not files:
        return
    from . import project as _project

    import time

    start = time.process_time()
    try:
        cache = _cache_from(args) if read is None else None
        # The check follows here (or in a child forked from here): the trees the summaries
        # parse whole are kept for it (reflint.gate.keep), one parse per file.
        decide = None
        if settings_of and read is None:
            from .engine import SummaryPhaseGate

            decide = SummaryPhaseGate(settings_of)
        _project.activate(_project.Project.build(files, read=read, jobs=jobs, cache=cache,
                                                 share_trees=True, decide=decide))
        # The project lives as long as the run: out of the collector's sight, so that the
        # forked child checking each file (reflint.isolate) does not walk, and copy, its
        # pages at every full collection.
        import gc

        gc.freeze()
    except Exception:  # noqa: BLE001 - without the project, every file is still checked
        _project.activate(None)
    if os.environ.get("REFLINT_STATS") and _project.active() is not None:
        p = _project.active()
        print(f"reflint: summary phase: {len(files)} modules ({p.summarized} summarized, "
              f"{len(files) - p.summarized} from the cache), {len(p.wrappers)} wrappers, "
              f"{len(p.launches)} functions launched elsewhere, "
              f"{time.process_time() - start:.2f} s CPU in this process", file=sys.stderr)


def _with_project_root(args, files: list, resolver=None) -> list:
    """``--project-root ROOT``: the modules ``reflint check ROOT`` would check join the
    project (summarized, not checked), so that the files given by name (pre-commit's changed
    files) are checked with what the rest of the project says about them."""
    root = getattr(args, "project_root", None)
    if not root or getattr(args, "no_project", False):
        return files
    if not os.path.isdir(root):
        raise UsageError(f"--project-root {root}: not a directory")
    try:
        pairs = discover([root], resolver or Resolver())
    except Exception:  # noqa: BLE001 - without the rest of the project, files are still checked
        return files
    given = {os.path.abspath(f) for f in files}
    return list(files) + sorted(f for f, _ in pairs if f.endswith((".py", ".pyi")) and
                                os.path.abspath(f) not in given)


def _end_project() -> None:
    m = sys.modules.get("reflint.project")
    if m is not None:
        m.activate(None)


def _stdin_project(args, name: str, data: bytes, resolver=None) -> None:
    """``--stdin-filename``: the text read from stdin takes that file's place in its
    package (the package's modules are summarized from disk)."""
    from .summary import module_name

    path = os.path.abspath(name)
    root, module = module_name(path)
    top = os.path.join(root, module.split(".")[0]) if "." in module or \
        os.path.basename(path) == "__init__.py" else None
    files = []
    if top and os.path.isdir(top):
        for d, dirs, names in os.walk(top):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "__pycache__"]
            files += [os.path.join(d, n) for n in names if n.endswith(".py")]
    else:
        folder = os.path.dirname(path)
        try:
            files = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py")]
        except OSError:
            files = []
    files = [f for f in files if os.path.abspath(f) != path] + [path]
    if getattr(args, "project_root", None):
        files = _with_project_root(args, [path], resolver)
    elif len(files) > 5000:
        return  # too big a folder to read for one buffer

    def read(p):
        if os.path.abspath(p) == path:
            try:
                return decode(data)
            except (SyntaxError, UnicodeDecodeError, LookupError):
                return None
        from .project import _read

        return _read(p)

    _start_project(args, files, 1, read)


def _fixed_codes(before: list, after: list) -> dict:
    """code -> how many of its findings the fixes removed."""
    from collections import Counter

    c = Counter(d.code for d in before)
    c.subtract(Counter(d.code for d in after))
    return {k: v for k, v in c.items() if v > 0}


def _frame_source(res: FileResult):
    """What the code frames show: the source, or for a notebook its cells by number."""
    if is_notebook(res.path):
        try:
            return notebook.cell_sources(notebook.parse(res.source))
        except notebook.NotebookError:
            return None
    return res.source


def _notebook_fix(args, res: FileResult, settings, roots, fix_notes, diff_text) -> FileResult:
    """``--fix``/``--diff`` for a notebook: the fixes apply to its joined cells and are
    written back into the JSON (reflint.notebook)."""
    if not (args.fix or args.diff) or res.source is None or \
            not any(d.fix for d in res.diagnostics):
        return res
    new_text, outcome, nb = notebook.fix(res.source.encode("utf-8"), res.path, settings)
    if outcome is None:
        return res
    fix_notes.extend(f"{res.path}: {notebook.cell_note(nb, r)}" for r in outcome.rejected)
    if outcome.error:
        fix_notes.append(f"{res.path}: {outcome.error}")
    if new_text is None:
        return res
    if args.diff:
        diff_text.append(_diff(res.source, new_text, res.path))
        return res
    problem = _write_fixed(res.path, new_text, roots)
    if problem:
        fix_notes.append(f"{res.path}: {problem}")
        return res
    fix_notes.append(f"{res.path}: fixed {outcome.fixed} finding"
                     f"{'s' if outcome.fixed != 1 else ''}")
    if isinstance(getattr(args, "_fixed", None), dict):
        args._fixed[res.path] = _fixed_codes(res.diagnostics, outcome.remaining)
    return FileResult(res.path, outcome.remaining, new_text)


def _diff(before: str, after: str, path: str) -> str:
    """A unified diff; `a/`/`b/` prefixes for paths under the working directory (as git)."""
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    if rel.startswith(".."):
        old, new = path, path
    else:
        old, new = f"a/{rel}", f"b/{rel}"
    import difflib

    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        fromfile=old, tofile=new))


def cmd_check_stdin(args, resolver: Resolver) -> int:
    """``reflint check -``: the source comes from standard input. ``--stdin-filename`` names
    it (for configuration, per-file-ignores and messages). With ``--fix`` the fixed source
    goes to standard output and the remaining findings to standard error; with ``--diff``
    the diff goes to standard output."""
    global _PENDING_EXIT
    name = args.stdin_filename or "-"
    if args.stdin_filename:
        settings = resolver.for_file(args.stdin_filename)
    else:
        settings = resolver.for_dir(os.getcwd())
    # Read at most max-file-size (+1 to tell): `reflint check - < /dev/zero` is REF904.
    data = sys.stdin.buffer.read(settings.max_file_size + 1)
    if len(data) > settings.max_file_size:
        size_msg = f"input too large (more than max-file-size, {settings.max_file_size:,} bytes)"
        _emit(args, [not_checked(name, size_msg)], {}, 1)
        return _exit_code(args, [not_checked(name, size_msg)])
    if args.show_settings:
        sys.stdout.write(show_settings(settings))
        return EXIT_OK
    if args.force_exclude and args.stdin_filename and \
            excluded_with_parents(args.stdin_filename, settings):
        if args.fix:
            sys.stdout.buffer.write(data)
        return EXIT_OK
    if args.stdin_filename:
        _stdin_project(args, args.stdin_filename, data, resolver)
    if is_notebook(name):
        return _notebook_stdin(args, data, name, settings)
    from . import isolate

    result = isolate.lint_bytes(data, name, settings)
    if args.fix or args.diff:
        fixed_source = result.source
        remaining = result.diagnostics
        if result.source is not None and any(d.fix for d in result.diagnostics):
            outcome = isolate.fix_source(result.source, name, settings)
            for r in outcome.rejected:
                print(f"{name}: {r}", file=sys.stderr)
            if outcome.error:
                print(f"{name}: {outcome.error}", file=sys.stderr)
            elif outcome.fixed:
                fixed_source, remaining = outcome.source, outcome.remaining
        if args.diff:
            diff = _diff(result.source, fixed_source, name) if result.source is not None else ""
            sys.stdout.write(diff)
            return EXIT_FINDINGS if diff and not args.exit_zero else EXIT_OK
        _PENDING_EXIT = _exit_code(args, remaining)
        sys.stdout.flush()
        if fixed_source is None or fixed_source == result.source:
            # Nothing fixed (or undecodable): the bytes pass through untouched (BOM, encoding).
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.buffer.write(_encode_like(fixed_source, data))
        sys.stdout.flush()
        _emit(args, remaining, {name: fixed_source} if fixed_source else {}, 1,
              out=sys.stderr)
        return _exit_code(args, remaining)
    _PENDING_EXIT = _exit_code(args, result.diagnostics)
    _emit(args, result.diagnostics, {name: result.source} if result.source else {}, 1)
    return _exit_code(args, result.diagnostics)


def _notebook_stdin(args, data: bytes, name: str, settings) -> int:
    """``reflint check - --stdin-filename x.ipynb``: a notebook on standard input."""
    result = notebook.lint(data, name, settings)
    result.source = data.decode("utf-8-sig", "replace")
    remaining = result.diagnostics
    new_text = None
    if (args.fix or args.diff) and any(d.fix for d in remaining):
        new_text, outcome, nb = notebook.fix(data, name, settings)
        if outcome is not None:
            for r in outcome.rejected:
                print(f"{name}: {notebook.cell_note(nb, r)}", file=sys.stderr)
            if new_text is not None:
                remaining = outcome.remaining
    if args.diff:
        diff = _diff(result.source, new_text, name) if new_text is not None else ""
        sys.stdout.write(diff)
        return EXIT_FINDINGS if diff and not args.exit_zero else EXIT_OK
    sources = {name: _frame_source(result)} if remaining else {}
    if args.fix:
        sys.stdout.flush()
        sys.stdout.buffer.write(new_text.encode("utf-8") if new_text is not None else data)
        sys.stdout.flush()
        _emit(args, remaining, sources, 1, out=sys.stderr)
        return _exit_code(args, remaining)
    _emit(args, remaining, sources, 1)
    return _exit_code(args, remaining)


def _encode_like(text: str, original: bytes) -> bytes:
    """``text`` encoded as ``original`` was (its PEP 263 cookie or BOM)."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return text.encode("utf-8", "surrogateescape")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def checked_roots(paths: list) -> list:
    """The real directories of the checked tree: each directory named, and the directory of
    each file named (``--fix`` writes nowhere else)."""
    roots = []
    for p in paths:
        d = p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
        roots.append(os.path.realpath(d))
    return roots


CHANGED_SINCE_READ = "changed since reflint read it: fixes not written (run again)"


def _decoded(raw: bytes) -> Optional[str]:
    try:
        return decode(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def _write_fixed(path: str, text: str, roots: Optional[list] = None,
                 expected: Optional[str] = None) -> Optional[str]:
    """Write fixed source back, or say why not (None when written).

    The file keeps its encoding (BOM and coding cookie: ``text`` still holds the cookie), line
    endings and trailing newline (``text`` is the decoded file with the fixes applied), and
    its mode. The write is atomic: a new file created exclusively (``mkstemp``, so no
    pre-existing name or link is followed) in the same directory, then renamed over the
    original. A symbolic link is written through only when its target is inside the checked
    tree (``roots``); a read-only file is not written. With ``expected`` (the source the
    fixes were computed from), a file that no longer holds it (an edit saved while reflint
    ran), or that changes while the new one is written, is not replaced."""
    import io
    import tempfile
    import tokenize

    target = os.path.realpath(path)
    if os.path.islink(path) or target != os.path.abspath(path):
        if roots is None or not any(_inside(target, r) for r in roots):
            return (f"is a symbolic link to {target}, outside the checked tree: fixes not "
                    f"written")
    try:
        st = os.stat(target)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file: fixes not written"
        if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or \
                not os.access(target, os.W_OK):
            return "file is read-only: fixes not written"
        with open(target, "rb") as fh:
            st = os.fstat(fh.fileno())
            raw = fh.read()
        if expected is not None and _decoded(raw) != expected:
            return CHANGED_SINCE_READ
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        data = text.encode(encoding)  # 'utf-8-sig' writes the BOM back
        directory, name = os.path.split(target)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".reflint-tmp")
    except (OSError, UnicodeError, SyntaxError, LookupError) as e:
        return f"cannot write fixes: {getattr(e, 'strerror', None) or e}"
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except OSError:
            pass  # not the owner: the new file is the writer's, as with any editor
        now = os.stat(target)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (st.st_ino, st.st_size, st.st_mtime_ns):
            os.unlink(tmp)
            return CHANGED_SINCE_READ
        os.replace(tmp, target)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return f"cannot write fixes: {e.strerror or e}"
    return None


def cmd_rule(args) -> int:
    if getattr(args, "all", False):
        from .docs import META_DOCS, render_meta, render_rule

        parts = [render_rule(r) for r in all_rules()]
        parts += [render_meta(c) for c in sorted(META_DOCS)]
        sys.stdout.write("\n".join(p.rstrip("\n") + "\n" for p in parts))
        return EXIT_OK
    if not args.code:
        raise UsageError("reflint rule: give a code or name (reflint rule REF001), or --all")
    code = args.code.strip()
    rule = rule_by_code(code) or rule_by_code(code.upper())
    if rule is not None:
        from .docs import render_rule
        sys.stdout.write(render_rule(rule) + _doc_line(rule.code))
        return EXIT_OK
    from .docs import META_DOCS, render_meta
    meta = code.upper() if code.upper() in META_DOCS else \
        next((c for c, n in CODES.items() if n == code and c in META_DOCS), None)
    if meta:
        sys.stdout.write(render_meta(meta) + _doc_line(meta))
        return EXIT_OK
    known = code.upper() if code.upper() in CODES else \
        next((c for c, n in CODES.items() if n == code), None)
    if known:
        raise UsageError(f"{known} ({CODES[known]}) is reserved but not implemented in "
                         f"reflint {__version__}; see `reflint rules`")
    raise UsageError(f"unknown rule: {args.code} (see `reflint rules`)")


def _doc_line(code: str) -> str:
    """The web page of a code's documentation, as the last line of `reflint rule CODE`."""
    from .docs import doc_url

    url = doc_url(code)
    return f"\nDocumentation: {url}\n" if url else ""


def _rules_table() -> list:
    from .docs import META_DOCS, doc_url

    rows = [{"code": r.code, "name": r.name, "fix": r.fixable or None,
             "summary": r.doc_sections().get("Summary", ""), "kind": "rule",
             "default": True} for r in all_rules()]
    for code in sorted(META_CODES):
        rows.append({"code": code, "name": CODES[code], "fix": None,
                     "summary": META_DOCS[code][0], "kind": "meta",
                     "default": code not in ("REF902",)})
    for row in rows:
        row["url"] = doc_url(row["code"])
    return rows


def cmd_rules(args) -> int:
    rows = _rules_table()
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            fix = {"safe": "fix", "unsafe": "fix (unsafe)"}.get(r["fix"] or "", "-")
            extra = "" if r["default"] else " (opt-in)"
            print(f"{r['code']}  {r['name']:<{width}}  {fix:<12}  {r['summary']}{extra}")
    return EXIT_OK


def cmd_run(args, rest) -> int:
    why = unfit(args.script) if os.path.lexists(args.script) else None
    if why:  # a FIFO, socket or device: opening it could block forever
        raise UsageError(f"{args.script}: {why}: not run")
    try:
        from .runtime import main as runtime_main
    except ImportError as e:
        raise UsageError(f"the runtime companion needs JAX: pip install 'jax-reflint[runtime]' "
                         f"({e})") from None
    return runtime_main([args.script] + rest)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, asking the terminal's width only when it formats text: argparse
    makes one per option while the parser is built, and the width costs importing shutil
    (~3 ms of a check's start-up)."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position,
                         width=0 if width is None else width)
        # (max_help_position, indent_increment) until the width is asked for
        self._pending = None if width is not None else (max_help_position, indent_increment)

    def _resolve(self) -> None:
        import shutil

        max_help_position, indent_increment = self._pending
        self._pending = None
        width = shutil.get_terminal_size().columns - 2  # as argparse.HelpFormatter
        self._width_ = width
        self._max_help_position_ = min(max_help_position,
                                       max(width - 20, indent_increment * 2))

    def _resolved(stored: str):  # noqa: N805 - builds the properties below
        """A property read through ``_resolve`` (the width asked for when first needed),
        kept in ``stored``."""
        def get(self):
            if getattr(self, "_pending", None) is not None:
                self._resolve()
            return getattr(self, stored)

        def put(self, value):
            setattr(self, stored, value)

        return property(get, put)

    _width = _resolved("_width_")
    _max_help_position = _resolved("_max_help_position_")
    del _resolved


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser (its subcommands' parsers too) with the lazy _HelpFormatter."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="reflint", description="Find misuse of JAX mutable array "
                                "references (jax.new_ref, jax.Ref, jax.freeze).")
    p.add_argument("--version", action="version", version=f"reflint {__version__}")
    sub = p.add_subparsers(dest="command")

    c = sub.add_parser("check", help="lint Python files",
                       description="Lint Python files ('-' reads standard input).")
    c.add_argument("paths", nargs="*", help="files or directories (default: .); '-' = stdin")
    c.add_argument("--select", help="comma-separated codes or prefixes to enable "
                   "(replaces the configured selection)")
    c.add_argument("--extend-select", help="codes to enable on top of the selection")
    c.add_argument("--ignore", help="comma-separated codes or prefixes to disable")
    c.add_argument("--config", metavar="PATH", help="use this pyproject.toml instead of the "
                   "nearest one with [tool.reflint]")
    c.add_argument("--exclude", help="comma-separated patterns replacing the excluded paths")
    c.add_argument("--extend-exclude", help="comma-separated patterns to exclude as well")
    c.add_argument("--force-exclude", action="store_true",
                   help="apply exclusions also to paths named on the command line")
    c.add_argument("--show-settings", action="store_true",
                   help="print the resolved settings (for the first path) and exit")
    c.add_argument("--format", "--output-format", dest="format", choices=FORMATS,
                   default="text", help="output format (default: text)")
    c.add_argument("--output-file", "-o", metavar="PATH",
                   help="write the report to this file instead of standard output")
    c.add_argument("--statistics", action="store_true", help="print counts per code")
    c.add_argument("--fix", action="store_true", help="apply safe fixes in place "
                   "(with '-': print the fixed source)")
    c.add_argument("--diff", action="store_true", help="print fixes as a diff; write nothing")
    c.add_argument("--fix-only", action="store_true", help="apply fixes, report only what "
                   "was fixed, and exit 0 (findings left are not reported)")
    c.add_argument("--show-fixes", action="store_true", help="show each fix in the text "
                   "output, and after --fix the fixes applied per file and code")
    c.add_argument("--exit-non-zero-on-fix", action="store_true",
                   help="exit 1 when a fix was applied, even if no finding is left")
    c.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` comments "
                   "to the lines with findings (suppressing them), then exit 0")
    c.add_argument("--unsafe-fixes", action="store_true", default=None,
                   help="also apply unsafe fixes (config: unsafe-fixes = true)")
    c.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false",
                   help="do not apply unsafe fixes, whatever the configuration says")
    c.add_argument("--respect-gitignore", action="store_true", default=None,
                   help="skip paths ignored by .gitignore files (the default)")
    c.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                   help="walk into paths ignored by .gitignore files too")
    c.add_argument("--target-jax-version", help="JAX version the code runs on (default: "
                   "the lowest the project's JAX requirement allows, else the installed JAX, "
                   f"else {DEFAULT_TARGET_JAX_VERSION}; --show-settings says which)")
    c.add_argument("--report-unused-noqa", action="store_true",
                   help="report REF noqa codes that suppress nothing (REF902)")
    c.add_argument("--stdin-filename", metavar="PATH",
                   help="the name of the file read from stdin (config, messages)")
    c.add_argument("--jobs", "-j", type=int, default=0, help="processes (default: all cores)")
    c.add_argument("--max-file-size", metavar="SIZE", help="skip (and report, REF904) files "
                   "larger than this (bytes, or e.g. 2MB; default 2MB)")
    c.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    c.add_argument("--no-project", action="store_true",
                   help="check each file alone: no facts from the other modules "
                        "(docs/project.md)")
    c.add_argument("--project-root", metavar="ROOT",
                   help="summarize every module under ROOT (as `reflint check ROOT` finds "
                        "them) and check the files given with what they say: for pre-commit "
                        "and editors, which pass a few files (docs/project.md)")
    c.add_argument("--cache-dir", help="cache folder (default: .reflint_cache at the project "
                   "root, or $REFLINT_CACHE_DIR)")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    c.add_argument("--watch", "-w", action="store_true", help="check again whenever a file "
                   "changes (Ctrl-C to stop)")
    c.add_argument("--quiet", "-q", action="store_true", help="no summary line")

    r = sub.add_parser("rule", help="explain a rule")
    r.add_argument("code", nargs="?", help="a code (REF001) or name (ref-returned)")
    r.add_argument("--all", action="store_true", help="explain every rule")
    rs = sub.add_parser("rules", help="list the rules")
    rs.add_argument("--format", choices=["text", "json"], default="text")

    run = sub.add_parser("run", help="run a program with runtime ref checks")
    run.add_argument("script")
    sub.add_parser("server", help="language server on stdio for editors (pip install "
                   "'jax-reflint[server]'); `reflint server --help` for its options")
    return p


def cmd_server(argv: list) -> int:
    import importlib.util

    # reflint.server_front starts the server before pygls is imported (answering the editor
    # at once): only ask here whether it is installed.
    missing = [m for m in ("pygls", "lsprotocol") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"the language server needs pygls: pip install 'jax-reflint[server]' "
                         f"(no module named {missing[0]!r})")
    from .server_front import main as server_main

    return server_main(argv)


def _safe_streams() -> None:
    """Text that the terminal's encoding cannot show (PYTHONIOENCODING=ascii, a C locale) is
    written escaped (``\\u2014``) instead of ending the run with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8":
                stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


# The exit code a broken standard output returns (set once the results are known).
_PENDING_EXIT = EXIT_OK


def main(argv: Optional[list] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _safe_streams()
    parser = build_parser()
    rest: list = []
    if argv and argv[0] == "run":
        # Everything after the script belongs to the script.
        idx = next((i for i, a in enumerate(argv[1:], 1) if not a.startswith("-")), None)
        if idx is not None:
            argv, rest = argv[:idx + 1], argv[idx + 1:]
    if argv and argv[0] == "server":  # its options are its own (reflint.server.main)
        try:
            return cmd_server(argv[1:])
        except UsageError as e:
            print(f"reflint: error: {e}", file=sys.stderr)
            return EXIT_ERROR
        except SystemExit as e:
            return EXIT_ERROR if e.code not in (0, None) else EXIT_OK
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code not in (0, None) else EXIT_OK
    try:
        if args.command == "check":
            return cmd_check(args)
        if args.command == "rule":
            return cmd_rule(args)
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "run":
            return cmd_run(args, rest)
        parser.print_help()
        return EXIT_ERROR
    except UsageError as e:
        print(f"reflint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader went away (`reflint check | head`): the exit code is still the run's
        # (findings stay 1); later writes and the final flush go nowhere.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return _PENDING_EXIT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
