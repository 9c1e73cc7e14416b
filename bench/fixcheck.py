"""Fix verification over real programs: `--fix` (safe, then safe + unsafe) over every fixture
and over the planted-bug mutants of the Pallas measure, each result re-linted independently.

For every program: its findings before, the fixes applied and refused (reflint.fixcheck's
reasons), and its findings after, re-linted from the fixed text. A *violation* is a fixed text
with a finding that was not there before (a fix added one), or fewer findings gone than fixes
applied (a fix left its finding, or hid another), or a finding gone that had no fix (hidden).
The issue's bar: no violation.

Usage:
    python bench/fixcheck.py --fixtures
    python bench/fixcheck.py --pallas DIR_OR_FILE... [--single]
The Pallas mutants are those of tests/pallas_planted.py (one ``[...]`` read dropped); by
default the plants of one file in distinct functions and lines are dropped together (one
mutant per batch, as /work/tools/pallas_measure_batch.py measures), ``--single`` makes one
mutant per plant. Prints a summary per mode and every violation; exits 1 on a violation.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from reflint.engine import fix_source, lint_source  # noqa: E402
from reflint.settings import Settings  # noqa: E402


class Tally:
    def __init__(self, mode):
        self.mode = mode
        self.programs = self.before = self.fixable = self.applied = self.refused = 0
        self.after = 0
        self.applied_by_code: Counter = Counter()
        self.refused_reasons: Counter = Counter()
        self.violations: list = []

    def add(self, name, source, path, settings, before):
        out = fix_source(source, path, settings)
        after = lint_source(out.source, path, settings).diagnostics
        self.programs += 1
        self.before += len(before)
        self.after += len(after)
        fixable = [d for d in before if d.fix is not None and
                   (d.fix.applicability == "safe" or settings.unsafe_fixes)]
        self.fixable += len(fixable)
        self.applied += out.fixed
        self.refused += len(out.rejected)
        for r in out.rejected:
            code, _, why = r.partition(" fix on line ")
            self.refused_reasons[(code, why.split(": ", 1)[-1].split(" (")[0])] += 1
        b = Counter((d.code, d.line) for d in before)
        a = Counter((d.code, d.line) for d in after)
        gone = b - a
        added = a - b
        self.applied_by_code.update(code for code, _ in gone.elements())
        with_fix = Counter((d.code, d.line) for d in fixable)
        problems = []
        if added:
            problems.append(f"added {sorted(added)}")
        if sum(gone.values()) != out.fixed:
            problems.append(f"{out.fixed} fixes applied, {sum(gone.values())} findings gone")
        hidden = gone - with_fix
        if hidden:
            problems.append(f"gone without a fix {sorted(hidden)}")
        if problems:
            self.violations.append(f"{name}: " + "; ".join(problems))

    def report(self):
        print(f"== {self.mode}: {self.programs} programs, {self.before} findings, "
              f"{self.fixable} with an applicable fix; {self.applied} fixes applied, "
              f"{self.refused} refused; {self.after} findings after; "
              f"{len(self.violations)} violations")
        if self.applied_by_code:
            print("   findings fixed, by code: " + ", ".join(
                f"{c} {n}" for c, n in sorted(self.applied_by_code.items())))
        for (code, why), n in sorted(self.refused_reasons.items()):
            print(f"   refused {code} x{n}: {why}")
        for v in self.violations:
            print(f"   VIOLATION {v}")


def fixture_programs():
    from conftest import fixture_files, fixture_settings

    for path in fixture_files():
        if path.endswith("fixed.py"):
            continue
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        yield path, source, path, lambda unsafe, s=source: fixture_settings(
            s, unsafe_fixes=unsafe)


def _func_of(tree, line):
    best = None
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                n.lineno <= line <= n.end_lineno:
            if best is None or n.lineno > best.lineno:
                best = n
    return id(best)


def pallas_programs(targets, single):
    import pallas_planted as pp

    for path in pp.python_files(targets):
        src = pp.read_source(path)
        plants = pp.find_plants(path, src)
        if not plants:
            continue
        settings = lambda unsafe: Settings(unsafe_fixes=unsafe)  # noqa: E731
        if single:
            for p in plants:
                yield f"{path}:{p.line}", p.source, path, settings
            continue
        tree = ast.parse(src)
        edits = []
        for p in plants:
            i = next(k for k in range(len(src)) if src[k] != p.source[k])
            edits.append((i, len(src) - len(p.source), p, _func_of(tree, p.line)))
        batches: list = []
        for e in edits:
            for b in batches:
                if all(x[2].line != e[2].line and x[3] != e[3] for x in b):
                    b.append(e)
                    break
            else:
                batches.append([e])
        for b in batches:
            s = src
            for i, n, _, _ in sorted(b, key=lambda x: -x[0]):
                s = s[:i] + s[i + n:]
            lines = ",".join(str(x[2].line) for x in b)
            yield f"{path}:[{lines}]", s, path, settings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", action="store_true")
    ap.add_argument("--pallas", nargs="*", default=[])
    ap.add_argument("--single", action="store_true", help="one mutant per plant")
    ap.add_argument("--modes", default="safe,unsafe",
                    help="safe: safe fixes; unsafe: safe + unsafe fixes (default: both)")
    args = ap.parse_args(argv)
    bad = 0
    jobs = []
    if args.fixtures:
        jobs.append(("fixtures", list(fixture_programs())))
    if args.pallas:
        progs = list(pallas_programs(args.pallas, args.single))
        jobs.append((f"pallas mutants ({'one per plant' if args.single else 'batched'})",
                     progs))
    modes = [m == "unsafe" for m in args.modes.split(",")]
    for label, progs in jobs:
        tallies = [Tally(f"{label}, {'safe + unsafe' if u else 'safe'} fixes") for u in modes]
        start = time.process_time()
        for name, source, path, settings in progs:
            before = lint_source(source, path, settings(False)).diagnostics
            for tally in tallies:
                tally.add(name, source, path, settings(tally.mode.endswith("unsafe fixes")),
                          before)
        print(f"-- {label}: {len(progs)} programs, {time.process_time() - start:.0f} s CPU")
        for tally in tallies:
            tally.report()
            bad += len(tally.violations)
        sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
