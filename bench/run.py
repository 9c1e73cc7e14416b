"""Benchmark: `reflint check` against flake8 and ruff on real JAX-ecosystem code.

Builds a corpus from the installed sources of some packages (default jax, flax, optax, chex),
copying their ``.py`` files into a scratch folder (so no cache folder lands in site-packages),
then times, in the same run and in alternating order:

* ``reflint check --no-cache`` (cold, all cores), ``--jobs 1`` (cold, one process),
  warm (the cache filled by an untimed run, nothing changed), and warm with one file edited
  before each run (only that file is analysed again);
* ``flake8`` (its defaults: pyflakes + pycodestyle, all cores) and ``ruff check --no-cache``
  (its default rules) on the same files.

It reports files, lines, the median, min and max wall time of N runs, CPU time, the peak
memory of the largest single process (``wait4`` max RSS, which covers worker processes), the
number of output lines, and ratios taken pair by pair (same iteration) against ruff and flake8.
It is a benchmark, not a test: nothing fails on timings. Take numbers on a quiet machine; the
load average is printed with them.

    python bench/run.py                          # /work/venv's packages, flake8 and ruff
    python bench/run.py --venv /path/to/venv --packages jax flax --runs 5
    python bench/run.py --flake8 /usr/bin/flake8 --ruff ~/.local/bin/ruff --json out.json

See docs/performance.md for results and what they mean.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT_VENV = "/work/venv"
DEFAULT_PACKAGES = ("jax", "flax", "optax", "chex")
DEFAULT_EDIT = "jax/experimental/pallas/ops/tpu/flash_attention.py"  # analysed, not gated out


def site_packages(venv: str) -> str:
    found = sorted(glob.glob(os.path.join(venv, "lib", "python*", "site-packages")))
    if not found:
        found = sorted(glob.glob(os.path.join(venv, "Lib", "site-packages")))  # Windows
    if not found:
        raise SystemExit(f"no site-packages under {venv}")
    return found[-1]


def build_corpus(sp: str, packages, dest: str) -> tuple[int, int, int]:
    """Copy every .py file of ``packages`` (folders under site-packages ``sp``) into dest."""
    files = lines = size = 0
    for pkg in packages:
        top = os.path.join(sp, pkg)
        if not os.path.isdir(top):
            raise SystemExit(f"package {pkg!r} is not installed in {sp}")
        for root, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for n in sorted(names):
                if not n.endswith(".py"):
                    continue
                src = os.path.join(root, n)
                dst = os.path.join(dest, os.path.relpath(src, sp))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
                with open(dst, "rb") as fh:
                    data = fh.read()
                files += 1
                size += len(data)
                lines += data.count(b"\n")
    return files, lines, size


def run_once(cmd: list, cwd: str, env: dict) -> dict:
    """Run ``cmd``; wall time, CPU time and peak RSS of the process tree's largest process."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    stdout = out.read()
    stderr = err.read().decode("utf-8", "replace")
    rss_kb = ru.ru_maxrss if sys.platform != "darwin" else ru.ru_maxrss // 1024
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": rss_kb / 1024,
            "rc": p.returncode, "lines": stdout.count(b"\n"), "stderr": stderr}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", default=DEFAULT_VENV,
                    help=f"venv whose site-packages hold the corpus packages, and whose "
                         f"bin/ has flake8 and ruff (default {DEFAULT_VENV})")
    ap.add_argument("--site-packages", help="take the packages from here instead")
    ap.add_argument("--packages", nargs="+", default=list(DEFAULT_PACKAGES))
    ap.add_argument("--reflint", default=f"{shlex.quote(sys.executable)} -m reflint",
                    help="command that runs reflint (default: this Python's -m reflint)")
    ap.add_argument("--flake8", help="flake8 executable (default: <venv>/bin/flake8)")
    ap.add_argument("--ruff", help="ruff executable (default: <venv>/bin/ruff)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each command (>= 3)")
    ap.add_argument("--jobs", type=int, default=0, help="reflint --jobs for the parallel rows "
                    "(default: reflint's default, all cores)")
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["flake8", "ruff", "jobs1", "warm", "edited"],
                    help="leave these rows out")
    ap.add_argument("--edit", default=DEFAULT_EDIT,
                    help="corpus file touched before each 'one file edited' run")
    ap.add_argument("--workdir", help="scratch folder (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be positive")

    venv_bin = os.path.join(args.venv, "bin")
    flake8 = args.flake8 or os.path.join(venv_bin, "flake8")
    ruff = args.ruff or os.path.join(venv_bin, "ruff")
    sp = args.site_packages or site_packages(args.venv)
    work = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="reflint-bench-"))
    corpus = os.path.join(work, "corpus")
    cache = os.path.join(work, "cache")
    shutil.rmtree(corpus, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(corpus)
    n_files, n_lines, n_bytes = build_corpus(sp, args.packages, corpus)
    env = dict(os.environ)
    env.pop("REFLINT_CACHE_DIR", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    reflint = shlex.split(args.reflint)
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    common = ["check", "--format", "concise", "--exit-zero"]
    edit_path = os.path.join(corpus, args.edit)
    commands = {
        "ruff check --no-cache": [ruff, "check", "--no-cache", "--exit-zero",
                                  "--output-format", "concise", "corpus"],
        "reflint check --no-cache (cold)": reflint + common + jobs + ["--no-cache", "corpus"],
        "reflint check (warm)": reflint + common + jobs + ["--cache-dir", cache, "corpus"],
        "reflint check (warm, 1 file edited)": reflint + common + jobs +
        ["--cache-dir", cache, "corpus"],
        "reflint check --no-cache --jobs 1": reflint + common + ["--no-cache", "--jobs", "1",
                                                                 "corpus"],
        "flake8": [flake8, "--exit-zero", "corpus"],
    }
    skip = set(args.skip)
    if "ruff" in skip:
        del commands["ruff check --no-cache"]
    if "flake8" in skip:
        del commands["flake8"]
    if "jobs1" in skip:
        del commands["reflint check --no-cache --jobs 1"]
    if "warm" in skip:
        del commands["reflint check (warm)"]
    if "edited" in skip or not os.path.exists(edit_path):
        commands.pop("reflint check (warm, 1 file edited)", None)

    notes = []
    for name, cmd in commands.items():
        if not shutil.which(cmd[0]) and not os.path.exists(cmd[0]):
            raise SystemExit(f"{name}: {cmd[0]} not found (see --help for the tool options)")
    if "flake8" in commands:
        v = subprocess.run([flake8, "--version"], capture_output=True, text=True)
        if v.returncode != 0:
            notes.append(f"flake8 --version failed: {v.stderr.strip().splitlines()[-1:]}")
        elif "reflint" in v.stdout:
            notes.append("flake8 has the reflint plugin installed: its time includes reflint")

    # Untimed: warm the file system cache, fill reflint's cache.
    for f in ("ruff check --no-cache", "reflint check (warm)"):
        if f in commands:
            run_once(commands[f], work, env)
    if "reflint check (warm)" not in commands and \
            "reflint check (warm, 1 file edited)" in commands:
        run_once(commands["reflint check (warm, 1 file edited)"], work, env)

    load_before = os.getloadavg()
    results: dict = {name: [] for name in commands}
    for i in range(args.runs):
        for name, cmd in commands.items():
            if name == "reflint check (warm, 1 file edited)":
                with open(edit_path, "a") as fh:
                    fh.write(f"\n# bench edit {i} {time.time()}\n")
            r = run_once(cmd, work, env)
            if r["rc"] not in (0,):
                notes.append(f"{name}: exit {r['rc']}: {r['stderr'].strip()[-300:]}")
            results[name].append(r)
            print(f"  run {i + 1}/{args.runs} {name}: {r['wall']:.2f} s", file=sys.stderr)
    load_after = os.getloadavg()

    def paired(name, base):
        if base not in results or name not in results:
            return None
        return statistics.median(a["wall"] / b["wall"]
                                 for a, b in zip(results[name], results[base]))

    rows = []
    for name, runs in results.items():
        walls = [r["wall"] for r in runs]
        rows.append({
            "command": name, "n": len(runs), "wall_median": statistics.median(walls),
            "wall_min": min(walls), "wall_max": max(walls),
            "cpu_median": statistics.median(r["cpu"] for r in runs),
            "peak_mb": max(r["rss_mb"] for r in runs),
            "output_lines": runs[-1]["lines"],
            "x_ruff": paired(name, "ruff check --no-cache"),
            "flake8_over_this": (1 / paired(name, "flake8")) if paired(name, "flake8") else None,
        })

    print(f"\nCorpus: {', '.join(args.packages)} from {sp}: {n_files} files, {n_lines:,} lines, "
          f"{n_bytes / 1e6:.1f} MB")
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; load average before {load_before[0]:.2f}, "
          f"after {load_after[0]:.2f} (1 min)")
    print(f"Runs: {args.runs} of each, alternating; ratios are medians of per-iteration ratios.\n")
    print("| command | n | wall s (median) | min–max | cpu s | peak MiB | output lines "
          "| × ruff | flake8 ÷ this |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        xr = f"{r['x_ruff']:.2f}" if r["x_ruff"] is not None else ""
        fl = f"{r['flake8_over_this']:.1f}" if r["flake8_over_this"] is not None else ""
        print(f"| `{r['command']}` | {r['n']} | {r['wall_median']:.2f} | "
              f"{r['wall_min']:.2f}–{r['wall_max']:.2f} | {r['cpu_median']:.2f} | "
              f"{r['peak_mb']:.0f} | {r['output_lines']} | {xr} | {fl} |")
    for n in dict.fromkeys(notes):
        print(f"\nnote: {n}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"corpus": {"packages": args.packages, "files": n_files,
                                  "lines": n_lines, "bytes": n_bytes},
                       "load": [load_before, load_after], "rows": rows,
                       "runs": {k: [{x: y for x, y in r.items() if x != "stderr"} for r in v]
                                for k, v in results.items()}}, fh, indent=2)
    if not args.keep and not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
