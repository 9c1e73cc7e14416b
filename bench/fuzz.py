"""The long fuzzing campaign: N generated JAX-flavoured programs through reflint.

    python bench/fuzz.py --programs 10000 [--seed 0] [--out failures/]

Each program (tests/fuzz_programs.py) must keep every property of
``fuzz_programs.check_properties`` (no crash, no internal error, no REF900 on valid Python,
positions inside the file, deterministic output, the same findings with the pre-filter off,
``--fix`` output that parses and re-checks with nothing fixable left of the codes it fixed).
``--notebooks`` (default 0.3) of the programs are notebook-style module-level code
(``fuzz_programs.notebook_program``). One batch in ``--agree-every`` (default 5) is also
written to a directory and checked with the CLI with ``--jobs 1`` (a forked child, see
reflint/isolate.py), ``--jobs 2`` and the cache cold and warm, whose outputs must be equal.
Prints progress every ``--progress`` programs; at the end (or when stopped with SIGTERM) the
count, the duration, the findings reported, and each failure (its program is saved under
``--out``).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import fuzz_programs  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="fuzz-failures")
    ap.add_argument("--batch", type=int, default=40, help="programs per CLI agreement check")
    ap.add_argument("--progress", type=int, default=100, help="print progress every N")
    ap.add_argument("--agree-every", type=int, default=5,
                    help="check one batch in this many with the CLI (jobs, cache, isolation)")
    ap.add_argument("--notebooks", type=float, default=0.3,
                    help="share of notebook-style programs (module-level cells)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    start = time.time()
    done = invalid = 0
    failures = []
    codes: collections.Counter = collections.Counter()
    lines = 0
    batch: list = []
    import signal

    def stop(signum, frame):  # a campaign cut short still prints what it did
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while done < args.programs:
            done, invalid, lines = _one(args, rng, done, invalid, lines, failures, codes,
                                        batch, start)
    except KeyboardInterrupt:
        print("(stopped before the end)")
    took = time.time() - start
    print(f"programs: {done} ({lines} lines; {invalid} generated programs were invalid "
          f"Python and skipped), seed {args.seed}")
    print(f"duration: {took:.1f} s ({took / max(done, 1) * 1000:.1f} ms a program)")
    print("findings: " + ", ".join(f"{c} x{n}" for c, n in sorted(codes.items())))
    print(f"failures: {len(failures)}")
    return 1 if failures else 0


def _one(args, rng, done, invalid, lines, failures, codes, batch, start):
    """Generate and check one program (or skip an invalid one); the updated counters."""
    from reflint.engine import lint_source
    from reflint.settings import Settings

    if rng.random() < args.notebooks:
        src = fuzz_programs.notebook_program(rng)
    else:
        src = fuzz_programs.program(rng)
    if not fuzz_programs.valid(src):
        return done, invalid + 1, lines
    done += 1
    lines += src.count("\n")
    problems = fuzz_programs.check_properties(src)
    for d in lint_source(src, "gen.py", Settings()).diagnostics:
        codes[d.code] += 1
    if problems:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"fail_{done:06}.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(src)
        failures.append((path, problems))
        print(f"FAIL {path}: {problems}", flush=True)
    batch.append(src)
    if len(batch) == args.batch:
        if done % (args.batch * args.agree_every) == 0:
            for p in fuzz_programs.cli_agreement(batch):
                failures.append(("<batch>", [p]))
                print(f"FAIL batch ending at {done}: {p}", flush=True)
        batch.clear()
    if done % args.progress == 0:
        print(f"{done} programs, {lines} lines, {time.time() - start:.0f} s, "
              f"{len(failures)} failures", flush=True)
    return done, invalid, lines


if __name__ == "__main__":
    sys.exit(main())
