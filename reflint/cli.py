"""Command line: ``reflint check``, ``reflint rule``, ``reflint rules``, ``reflint run``.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Optional

from . import __version__
from .codes import CODES
from .engine import FileResult, fix_source, lint_bytes
from .engine import decode, is_candidate, lint_source, parse_error
from .output import format_concise, format_json, format_text, summary_line, use_color
from .rule import all_rules, rule_by_code
from .settings import DEFAULT_TARGET_JAX_VERSION, Settings, expand_codes, parse_version

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    "node_modules", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".reflint_cache", ".eggs", "__pypackages__",
})


class UsageError(Exception):
    pass


def discover(paths: list) -> list:
    """Python files under ``paths`` (files named explicitly are always included)."""
    out = []
    for p in paths:
        if os.path.isfile(p):
            out.append(p)
            continue
        if not os.path.isdir(p):
            raise UsageError(f"{p}: no such file or directory")
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                             and not os.path.exists(os.path.join(root, d, "pyvenv.cfg")))
            for f in sorted(files):
                if f.endswith((".py", ".pyi")):
                    out.append(os.path.join(root, f))
    seen = set()
    unique = []
    for f in out:
        key = os.path.normpath(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _check_file(args) -> FileResult:
    path, settings = args
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        from .engine import parse_error
        return FileResult(path, [parse_error(path, f"cannot read file: {e.strerror}")])
    try:
        return lint_bytes(data, path, settings)
    except Exception as e:  # noqa: BLE001 - one bad file must not stop the run
        from .engine import parse_error
        d = parse_error(path, f"internal error while checking this file: "
                              f"{type(e).__name__}: {e}")
        return FileResult(path, [d])


def _internal_error(path: str, e: BaseException):
    return parse_error(path, f"internal error while checking this file: "
                             f"{type(e).__name__}: {e}")


# Parallel checking: below this much source text to analyse, one process is faster than
# starting workers.
PARALLEL_MIN_CHARS = 64_000

_WORKER_SETTINGS: Optional[Settings] = None


def _init_worker(settings: Settings) -> None:
    global _WORKER_SETTINGS
    _WORKER_SETTINGS = settings


def _lint_task(task) -> tuple:
    """(index, path, source) -> (index, diagnostics, cacheable). The pre-filter already ran."""
    index, path, source = task
    settings = _WORKER_SETTINGS if _WORKER_SETTINGS is not None else Settings()
    # A syntax tree is millions of young objects without cycles: the cyclic garbage collector
    # would scan the growing tree again and again while it is built. It is paused for the
    # file; one collection afterwards frees whatever the analysis left in cycles.
    gc_enabled = gc.isenabled()
    gc.disable()
    try:
        return index, lint_source(source, path, settings, use_prefilter=False).diagnostics, True
    except Exception as e:  # noqa: BLE001 - one bad file must not stop the run
        return index, [_internal_error(path, e)], False
    finally:
        if gc_enabled:
            gc.enable()
            gc.collect(0)


def _pool_context():
    import multiprocessing

    if sys.platform.startswith("linux"):
        try:
            return multiprocessing.get_context("fork")  # workers inherit the imports
        except ValueError:  # pragma: no cover
            pass
    return multiprocessing.get_context()


def _run_tasks(tasks: list, settings: Settings, jobs: int):
    """Yield (index, diagnostics, cacheable) for every task, in any order."""
    total = sum(len(t[2]) for t in tasks)
    if jobs > 1 and len(tasks) > 1 and total >= PARALLEL_MIN_CHARS:
        from concurrent.futures.process import BrokenProcessPool

        # Biggest files first: the slowest task starts at once (longest-processing-time order).
        ordered = sorted(tasks, key=lambda t: -len(t[2]))
        done: set = set()
        try:
            with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)),
                                     mp_context=_pool_context(), initializer=_init_worker,
                                     initargs=(settings,)) as pool:
                futures = [pool.submit(_lint_task, t) for t in ordered]
                for fut in as_completed(futures):
                    res = fut.result()
                    done.add(res[0])
                    yield res
            return
        except (BrokenProcessPool, OSError):
            # No worker processes here (sandbox) or a worker died: finish in this process.
            tasks = [t for t in tasks if t[0] not in done]
    _init_worker(settings)
    for t in tasks:
        yield _lint_task(t)


def check_paths(files: list, settings: Settings, jobs: int, cache=None,
                stats: Optional[dict] = None) -> list:
    """Lint ``files``; one FileResult per file, in the order of ``files``.

    The parent reads each file and runs the pre-filter; a candidate's result comes from
    ``cache`` (a reflint.cache.Cache) when it has one, and only the rest are parsed and
    analysed, across ``jobs`` processes."""
    results: list = [None] * len(files)
    todo = []  # (index, path, source)
    keys: dict = {}
    skipped = cached = 0
    for i, path in enumerate(files):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as e:
            diag = parse_error(path, f"cannot read file: {e.strerror}")
            results[i] = FileResult(path, [diag])
            continue
        try:
            source = decode(data)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            results[i] = lint_bytes(data, path, settings)  # reports the decoding problem
            continue
        if not is_candidate(source, settings):
            results[i] = FileResult(path, [], source, skipped=True)
            skipped += 1
            continue
        if cache is not None:
            key = cache.key(path, data, settings)
            diags = cache.get(key, path)
            if diags is not None:
                results[i] = FileResult(path, diags, source)
                cached += 1
                continue
            keys[i] = key
        todo.append((i, path, source))
    sources = {t[0]: t[2] for t in todo}
    for index, diags, cacheable in _run_tasks(todo, settings, jobs):
        results[index] = FileResult(files[index], diags, sources[index])
        if cache is not None and cacheable and index in keys:
            cache.put(keys[index], files[index], diags)
    info = {"files": len(files), "skipped": skipped, "cached": cached, "analysed": len(todo)}
    if stats is not None:
        stats.update(info)
    if os.environ.get("REFLINT_STATS"):
        print(f"reflint: {info['files']} files: {skipped} skipped by the pre-filter, "
              f"{cached} from the cache, {len(todo)} analysed", file=sys.stderr)
    return results


def _cache_from(args):
    if getattr(args, "no_cache", False):
        return None
    from .cache import Cache

    return Cache(getattr(args, "cache_dir", None))


def _settings_from(args) -> Settings:
    try:
        select = expand_codes(args.select.split(",")) if args.select else set(CODES)
        if args.extend_select:
            select |= expand_codes(args.extend_select.split(","))
        if args.ignore:
            select -= expand_codes(args.ignore.split(","))
        version = parse_version(args.target_jax_version or DEFAULT_TARGET_JAX_VERSION)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return Settings(select=frozenset(select), target_jax_version=version,
                    unsafe_fixes=args.unsafe_fixes)


def cmd_check(args) -> int:
    settings = _settings_from(args)
    files = discover(args.paths or ["."])
    jobs = args.jobs if args.jobs else (os.cpu_count() or 1)
    results = check_paths(files, settings, jobs, cache=_cache_from(args))
    out = sys.stdout
    all_diags = []
    sources = {}
    fix_notes = []
    diff_text = []
    for res in results:
        if args.fix or args.diff:
            if res.source is not None and any(d.fix for d in res.diagnostics):
                outcome = fix_source(res.source, res.path, settings)
                if outcome.error:
                    fix_notes.append(f"{res.path}: {outcome.error}")
                elif outcome.fixed:
                    if args.diff:
                        diff_text.append("".join(difflib.unified_diff(
                            res.source.splitlines(True), outcome.source.splitlines(True),
                            fromfile=f"a/{res.path}", tofile=f"b/{res.path}")))
                    else:
                        _write_fixed(res.path, outcome.source)
                        fix_notes.append(f"{res.path}: fixed {outcome.fixed} "
                                         f"finding{'s' if outcome.fixed != 1 else ''}")
                        res = FileResult(res.path, outcome.remaining, outcome.source)
        all_diags.extend(res.diagnostics)
        if res.source is not None and res.diagnostics:
            sources[res.path] = res.source
    if args.diff:
        out.write("".join(diff_text))
        for n in fix_notes:
            print(n, file=sys.stderr)
        return EXIT_FINDINGS if diff_text else EXIT_OK
    fmt = args.format
    if fmt == "json":
        out.write(format_json(all_diags))
    elif fmt == "concise":
        out.write(format_concise(all_diags))
    else:
        text = format_text(all_diags, sources, color=use_color(out))
        if text:
            out.write(text + "\n")
        if not args.quiet:
            fixable = sum(1 for d in all_diags if d.fix and d.fix.applicability == "safe")
            out.write(summary_line(len(all_diags), len(files), 0 if args.fix else fixable)
                      + "\n")
    for n in fix_notes:
        print(n, file=sys.stderr)
    if args.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if all_diags else EXIT_OK


def _write_fixed(path: str, text: str) -> None:
    """Write fixed source back in the file's own encoding (BOM kept), atomically."""
    import io
    import tokenize

    with open(path, "rb") as fh:
        raw = fh.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    data = text.encode(encoding)  # 'utf-8-sig' writes the BOM back
    tmp = f"{path}.reflint-tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def cmd_rule(args) -> int:
    rule = rule_by_code(args.code)
    if rule is None:
        raise UsageError(f"unknown rule: {args.code}")
    from .docs import render_rule
    sys.stdout.write(render_rule(rule))
    return EXIT_OK


def cmd_rules(args) -> int:
    rules = all_rules()
    if args.format == "json":
        data = [{"code": r.code, "name": r.name, "fix": r.fixable or None,
                 "summary": r.doc_sections().get("Summary", "")} for r in rules]
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        for r in rules:
            fix = f" [fix: {r.fixable}]" if r.fixable else ""
            print(f"{r.code}  {r.name}{fix}  — {r.doc_sections().get('Summary', '')}")
    return EXIT_OK


def cmd_run(args, rest) -> int:
    try:
        from .runtime import main as runtime_main
    except ImportError as e:
        raise UsageError(f"the runtime companion needs JAX: pip install 'reflint[runtime]' "
                         f"({e})") from None
    return runtime_main([args.script] + rest)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="reflint", description="Find misuse of JAX mutable array "
                                "references (jax.new_ref, jax.Ref, jax.freeze).")
    p.add_argument("--version", action="version", version=f"reflint {__version__}")
    sub = p.add_subparsers(dest="command")

    c = sub.add_parser("check", help="lint Python files")
    c.add_argument("paths", nargs="*", help="files or directories (default: .)")
    c.add_argument("--select", help="comma-separated codes or prefixes to enable")
    c.add_argument("--extend-select", help="codes to enable on top of the selection")
    c.add_argument("--ignore", help="comma-separated codes or prefixes to disable")
    c.add_argument("--format", choices=["text", "concise", "json"], default="text")
    c.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    c.add_argument("--diff", action="store_true", help="print fixes as a diff; write nothing")
    c.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    c.add_argument("--target-jax-version", help=f"JAX version the code runs on "
                   f"(default {DEFAULT_TARGET_JAX_VERSION})")
    c.add_argument("--jobs", "-j", type=int, default=0, help="processes (default: all cores)")
    c.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    c.add_argument("--cache-dir", help="cache folder (default: .reflint_cache at the project "
                   "root, or $REFLINT_CACHE_DIR)")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    c.add_argument("--quiet", "-q", action="store_true", help="no summary line")

    r = sub.add_parser("rule", help="explain a rule")
    r.add_argument("code")
    rs = sub.add_parser("rules", help="list the rules")
    rs.add_argument("--format", choices=["text", "json"], default="text")

    run = sub.add_parser("run", help="run a program with runtime ref checks")
    run.add_argument("script")
    return p


def main(argv: Optional[list] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    rest: list = []
    if argv and argv[0] == "run":
        # Everything after the script belongs to the script.
        idx = next((i for i, a in enumerate(argv[1:], 1) if not a.startswith("-")), None)
        if idx is not None:
            argv, rest = argv[:idx + 1], argv[idx + 1:]
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
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
