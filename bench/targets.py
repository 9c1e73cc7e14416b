"""Benchmark: issue 23's performance targets, in CPU time, next to ruff on the same inputs.

* ``pallas_test.py`` (JAX's tests/pallas/pallas_test.py, 2,910 lines with findings):
  ``reflint check --no-cache FILE``, CPU seconds (target <= 0.35);
* the installed sources of jax, flax, optax and chex, cold (``--no-cache``), ``-j 1``: CPU
  seconds against the floor of any Python linter, ``ast.parse`` of every file in one process
  (target <= 2x);
* the same with ``-j 2`` against ``-j 1``: wall time (target <= 0.6x; needs 2 idle cores);
* start-up: ``reflint check --no-cache`` of a three-line file, CPU seconds (target <= 0.1).

CPU time is the process's and its workers' (``os.wait4``: user + system of the process and
the children it waited for), the best of ``--runs``; wall time likewise. The load average
is printed with the numbers: on a shared machine CPU time is the figure to read (wall time
is not), and even CPU time grows under load (shared caches), so compare numbers taken in the
same run. Not a test: nothing fails on timings.

``--baseline DIR`` (a directory holding another build's ``reflint`` package, its rules at
``reflint/rules``, e.g. ``git archive`` of a commit's ``reflint`` and ``rules``) times that
build too, its runs interleaved with this one's: on a machine whose speed drifts (a shared
VM), only numbers taken side by side compare.

    python bench/targets.py
    python bench/targets.py --baseline /tmp/site_main --runs 5
    python bench/targets.py --python /path/venv/bin/python --ruff /path/ruff --runs 5
    python bench/targets.py --site /path/site-packages --pallas /path/pallas_test.py
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

FLOOR = """
import ast, sys
for path in sys.argv[1:]:
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        pass
"""

TINY = "import jax\n\nx = jax.numpy.zeros(3)\n"


# As an installed package runs: Python's bytecode cache written and read (without it every
# run compiles reflint's modules again, ~0.15 CPU-s).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(cmd: list, cwd, env) -> tuple:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=cwd, env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start


def measure(cmd: list, runs: int, cwd=None, baseline_env=None) -> tuple:
    """(best CPU seconds, best wall seconds) of ``cmd`` over ``runs`` runs; with
    ``baseline_env``, also the baseline's (its runs interleaved with these)."""
    mine, theirs = [], []
    for _ in range(runs):
        mine.append(_run(cmd, cwd, ENV))
        if baseline_env is not None:
            theirs.append(_run(cmd, cwd, baseline_env))
    best = (min(c for c, _ in mine), min(w for _, w in mine))
    if baseline_env is None:
        return best
    return best + (min(c for c, _ in theirs), min(w for _, w in theirs))


def sources(site: str, packages: list) -> list:
    out = []
    for p in packages:
        out += sorted(glob.glob(os.path.join(site, p, "**", "*.py"), recursive=True))
    return out


def line(name: str, value: float, unit: str, target: str = "", ruff=None,
         base=None) -> str:
    text = f"  {name:<44} {value:8.3f} {unit}"
    if base is not None:
        text += f"   (baseline {base:.3f} {unit})"
    if ruff is not None:
        text += f"   (ruff {ruff:.3f} {unit})"
    if target:
        text += f"   target {target}"
    return text


def _b(got: tuple, i: int):
    """The baseline's figure ``i`` of a ``measure`` result, when it has one."""
    return got[i] if len(got) > i else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter with reflint")
    ap.add_argument("--ruff", default=shutil.which("ruff") or
                    os.path.join(os.path.dirname(sys.executable), "ruff"))
    ap.add_argument("--site", default=sysconfig.get_paths()["purelib"],
                    help="site-packages holding the packages")
    ap.add_argument("--packages", nargs="+", default=["jax", "flax", "optax", "chex"])
    ap.add_argument("--pallas", default="/work/corpus/jax/tests/pallas/pallas_test.py")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", metavar="DIR",
                    help="a directory holding another build's reflint package, timed too")
    args = ap.parse_args(argv)
    benv = None
    if args.baseline:
        benv = dict(ENV, PYTHONPATH=os.pathsep.join(
            [os.path.abspath(args.baseline)] + [p for p in [ENV.get("PYTHONPATH")] if p]))
        print(f"baseline: the reflint package in {args.baseline}")
    ruff = args.ruff if os.path.exists(args.ruff) else None
    reflint = [args.python, "-m", "reflint", "check", "--no-cache", "--exit-zero", "-q"]
    ruff_cmd = [ruff, "check", "--no-cache", "--exit-zero", "-q"] if ruff else None
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Start-up: a tiny file.
        tiny = os.path.join(tmp, "tiny.py")
        with open(tiny, "w") as fh:
            fh.write(TINY)
        # One untimed run first: Python's bytecode cache written, the OS's caches warm.
        subprocess.run(reflint + [tiny], cwd=tmp, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=ENV)
        if benv is not None:
            subprocess.run(reflint + [tiny], cwd=tmp, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=benv)
        got = measure(reflint + [tiny], args.runs, tmp, benv)
        cpu = got[0]
        rc = measure(ruff_cmd + [tiny], args.runs, cwd=tmp)[0] if ruff else None
        results["tiny"] = cpu
        print("start-up (a three-line file):")
        print(line("reflint check tiny.py, CPU", cpu, "s", "<= 0.1", rc, _b(got, 2)))
        # pallas_test.py
        if os.path.exists(args.pallas):
            got = measure(reflint + [args.pallas], args.runs, tmp, benv)
            cpu = got[0]
            rc = measure(ruff_cmd + [args.pallas], args.runs, cwd=tmp)[0] if ruff else None
            results["pallas"] = cpu
            print(f"{args.pallas}:")
            print(line("reflint check, CPU", cpu, "s", "<= 0.35", rc, _b(got, 2)))
        # The installed sources.
        files = sources(args.site, args.packages)
        dirs = [os.path.join(args.site, p) for p in args.packages
                if os.path.isdir(os.path.join(args.site, p))]
        if files:
            floor_py = os.path.join(tmp, "floor.py")
            with open(floor_py, "w") as fh:
                fh.write(FLOOR)
            floor, _ = measure([args.python, floor_py, *files], args.runs, cwd=tmp)
            one = measure(reflint + ["-j", "1", *dirs], args.runs, tmp, benv)
            two = measure(reflint + ["-j", "2", *dirs], args.runs, tmp, benv)
            cpu1, wall1, cpu2, wall2 = one[0], one[1], two[0], two[1]
            rc = measure(ruff_cmd + dirs, args.runs, cwd=tmp)[0] if ruff else None
            results.update(floor=floor, cold=cpu1, j1=wall1, j2=wall2)
            print(f"{' '.join(args.packages)} ({len(files)} files), cold:")
            print(line("ast.parse of every file (the floor), CPU", floor, "s"))
            print(line("reflint -j 1, CPU", cpu1, "s", "", rc, _b(one, 2)))
            print(line("reflint -j 1 CPU / floor", cpu1 / floor, "x", "<= 2",
                       base=_b(one, 2) and _b(one, 2) / floor))
            print(line("reflint -j 1, wall", wall1, "s", base=_b(one, 3)))
            print(line("reflint -j 2, wall", wall2, "s", base=_b(two, 3)))
            print(line("reflint -j 2 CPU", cpu2, "s", base=_b(two, 2)))
            print(line("-j 2 wall / -j 1 wall", wall2 / wall1, "x", "<= 0.6",
                       base=_b(two, 3) and _b(two, 3) / _b(one, 3)))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
