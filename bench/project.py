"""Cost of the whole-project check (issue 25, docs/project.md).

    python bench/project.py cold [--repeat 1] [--jobs 1]     # installed jax/flax/optax/chex
    python bench/project.py warm                              # warm run after a leaf edit
    python bench/project.py generated --lines 100000 [--depth 50] [--keep DIR]
    python bench/project.py flake8 --root DIR --file DIR/pkg/mod.py [--repeat 2]

``cold``: ``reflint check --no-cache -j N`` of the installed jax, flax, optax and chex packages
(this interpreter's site-packages) with the project (summary phase first) and with
``--no-project`` (every file alone), alternating, each in a fresh process; prints the user+sys
CPU seconds of each (``os.wait4``: steady on a shared machine, unlike wall time), the ratio,
the summary phase's own CPU (``REFLINT_STATS``) and whether the findings are the same.

``warm``: copies the installed ``jax`` package to a temporary folder, checks it cold with a
cache, again warm, then after appending a line to a leaf module (one no module imports) and
after inserting a line at the top of a module many others import; prints, for each run, how
many files were summarized and analysed (the rest come from the cache).

``generated``: writes a project of about ``--lines`` lines: packages of modules, each
importing the previous module of a chain ``--depth`` long (``from .m3 import f3``), with Pallas
kernels launched from another module, jitted functions called from another, refs exported and
written by helpers of another module, and two planted findings per module that need the
other module (REF007 in a kernel another module launches, REF002 at a call of another
module's jitted function); checks it with ``/usr/bin/time -v`` (when present) and
prints wall and CPU time, the peak RSS and the findings count. ``--summary-only``: the summary
phase and the solved project alone (what grows with the whole project: each file's analysis
is per file), with the process's peak RSS.

``flake8``: what reading the project costs a per-file tool: ``flake8 --select REF FILE`` run
from ``--root`` (a copy of it, so that no cache of yours is touched) with
``--reflint-no-project``, with the project and no summary cache (the run writes it), and with
that cache; and ``reflint check --project-root . FILE`` (pre-commit's hook) without and with
the cache; the CPU seconds of each and the findings they print.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def _site() -> str:
    import jax

    return os.path.dirname(os.path.dirname(jax.__file__))


def _reflint() -> list:
    return [sys.executable, "-m", "reflint"]


def _timed(args: list, env=None) -> tuple:
    """(CPU seconds, wall seconds, stdout, stderr) of a child process (and its children)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run(args, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, p.stdout.decode(), p.stderr.decode()


def cold(ns) -> None:
    site = _site()
    targets = [os.path.join(site, p) for p in ("jax", "flax", "optax", "chex")
               if os.path.isdir(os.path.join(site, p))]
    env = dict(os.environ, REFLINT_STATS="1")
    base = _reflint() + ["check", "--no-cache", "--exit-zero", "--format", "json", "-j",
                         str(ns.jobs)]
    rows = []
    for i in range(ns.repeat):
        for mode in (("project",), ("no-project",)) if i % 2 == 0 else \
                (("no-project",), ("project",)):
            extra = ["--no-project"] if mode[0] == "no-project" else []
            cpu, wall, out, err = _timed(base + extra + targets, env)
            summary = next((ln for ln in err.splitlines() if "summary phase" in ln), "")
            found = sorted((d["path"], d["line"], d["code"]) for d in json.loads(out))
            rows.append((mode[0], cpu, wall, summary, found))
            print(f"{mode[0]:>10}: {cpu:6.1f} s CPU, {wall:6.1f} s wall, "
                  f"{len(found)} findings  {summary}", flush=True)
    proj = [r for r in rows if r[0] == "project"]
    alone = [r for r in rows if r[0] == "no-project"]
    cpu_p = sum(r[1] for r in proj) / len(proj)
    cpu_a = sum(r[1] for r in alone) / len(alone)
    wall_p = sum(r[2] for r in proj) / len(proj)
    wall_a = sum(r[2] for r in alone) / len(alone)
    same = all(r[4] == alone[0][4] for r in rows)
    print(f"ratio (CPU): {cpu_p / cpu_a:.2f}x  (wall {wall_p / wall_a:.2f}x); "
          f"same findings: {same}")


def _stats(err: str) -> str:
    return " | ".join(ln.replace("reflint: ", "") for ln in err.splitlines()
                      if ln.startswith("reflint:") and ("files" in ln or "summary" in ln))


def warm(ns) -> None:
    tmp = tempfile.mkdtemp(prefix="reflint-warm-")
    try:
        root = os.path.join(tmp, "jax")
        shutil.copytree(os.path.join(_site(), "jax"), root,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        cache = os.path.join(tmp, "cache")
        env = dict(os.environ, REFLINT_STATS="1")
        cmd = _reflint() + ["check", "--exit-zero", "-q", "-j", str(ns.jobs), "--cache-dir",
                            cache, root]
        for label in ("cold", "warm"):
            cpu, wall, _, err = _timed(cmd, env)
            print(f"{label:>12}: {cpu:5.1f} s CPU  {_stats(err)}", flush=True)
        leaf = os.path.join(root, "_src", "pallas", "mosaic", "lowering.py")
        with open(leaf, "a", encoding="utf-8") as fh:
            fh.write("\n# edited\n")
        cpu, wall, _, err = _timed(cmd, env)
        print(f"{'leaf edit':>12}: {cpu:5.1f} s CPU  {_stats(err)}", flush=True)
        hub = os.path.join(root, "_src", "pallas", "mosaic", "pipeline.py")
        with open(hub, encoding="utf-8") as fh:
            text = fh.read()
        with open(hub, "w", encoding="utf-8") as fh:
            fh.write("# edited\n" + text)
        cpu, wall, _, err = _timed(cmd, env)
        print(f"{'wrapper edit':>12}: {cpu:5.1f} s CPU  {_stats(err)}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


MODULE = '''"""Generated module {pkg}.m{i} (bench/project.py)."""
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from {prev_pkg} import m{prev} as prev

state_{i} = jax.new_ref(jnp.zeros(8))


def kernel_{i}(x_ref, o_ref):
    o_ref[...] = x_ref * {i}  # REF007: a kernel ref only because another module launches it


def helper_{i}(r, v):
    r[...] += v


def make_{i}(n):
    return jax.new_ref(jnp.zeros(n))


@jax.jit
def step_{i}(a_ref, b_ref):
    a_ref[...] += b_ref[...]


def launch_{i}(x):
    return pl.pallas_call(prev.kernel_{prev}, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def run_{i}(x):
    buf = prev.make_{prev}(8)
    prev.helper_{prev}(buf, x)
    prev.step_{prev}(buf, prev.state_{prev})
    prev.step_{prev}(buf, buf)  # REF002: another module's jitted function
    return buf[...] + prev.state_{prev}[...] + x
'''

FILLER = '''

def plain_{i}_{k}(x, y):
    z = x + y
    for j in range(3):
        z = z * 2 + j
    return jnp.sum(z)
'''


def generate(root: str, lines: int, depth: int) -> int:
    """A project of about ``lines`` lines; returns the number of modules."""
    per_module = 400
    n = max(2, lines // per_module)
    head_lines = MODULE.count("\n")
    fill = max(0, (per_module - head_lines) // FILLER.count("\n"))
    for i in range(n):
        pkg = f"pkg{i // depth}"
        d = os.path.join(root, "src", "proj", pkg)
        if not os.path.isdir(d):
            os.makedirs(d)
            with open(os.path.join(d, "__init__.py"), "w") as fh:
                fh.write("")
        # A chain of `depth` modules, each importing the one before; the head of a chain
        # imports the next module (a two-module import cycle per chain).
        prev = i - 1 if i % depth else (i + 1 if i + 1 < n else max(0, i - 1))
        prev_pkg = f"proj.pkg{prev // depth}"
        text = MODULE.format(pkg=pkg, i=i, prev=prev, prev_pkg=prev_pkg)
        text += "".join(FILLER.format(i=i, k=k) for k in range(fill))
        with open(os.path.join(d, f"m{i}.py"), "w") as fh:
            fh.write(text)
    with open(os.path.join(root, "src", "proj", "__init__.py"), "w") as fh:
        fh.write("")
    return n


def _summary_only(root: str, n: int, total: int, ns) -> None:
    """The summary phase and the solved project alone, in a fresh process: what grows with
    the whole project (each file's analysis is per file)."""
    code = (
        "import os, resource, sys, time\n"
        "from reflint import project as rp\n"
        "files = sorted(os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs"
        " if f.endswith('.py'))\n"
        "t = time.process_time()\n"
        "p = rp.Project.build(files, jobs=int(sys.argv[2]))\n"
        "digests = sum(1 for f in files if (p.view(f) is not None and p.view(f).digest()))\n"
        "print(f'{time.process_time() - t:.1f} s CPU in the main process, '\n"
        "      f'{len(p.launches)} functions launched elsewhere, {digests} modules reading '\n"
        "      f'facts, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB')\n")
    cpu, wall, out, err = _timed([sys.executable, "-c", code, os.path.join(root, "src"),
                                  str(ns.jobs)])
    print(f"{total} lines, {n} modules, summary phase only: {wall:.1f} s wall, {cpu:.1f} s "
          f"CPU; {out.strip()} {err.strip()[-300:]}")


def generated(ns) -> None:
    root = ns.keep or tempfile.mkdtemp(prefix="reflint-gen-")
    try:
        if not os.path.isdir(os.path.join(root, "src")):
            n = generate(root, ns.lines, ns.depth)
        else:
            n = sum(1 for _, _, fs in os.walk(root) for f in fs if f.endswith(".py"))
        total = sum(sum(1 for _ in open(os.path.join(d, f)))
                    for d, _, fs in os.walk(root) for f in fs if f.endswith(".py"))
        if ns.summary_only:
            _summary_only(root, n, total, ns)
            return
        cmd = _reflint() + ["check", "--no-cache", "--exit-zero", "-q", "--format", "json",
                            "-j", str(ns.jobs), os.path.join(root, "src")]
        if os.path.exists("/usr/bin/time"):
            cmd = ["/usr/bin/time", "-v"] + cmd
        env = dict(os.environ, REFLINT_STATS="1")
        cpu, wall, out, err = _timed(cmd, env)
        rss = next((ln.split(":")[1].strip() for ln in err.splitlines()
                    if "Maximum resident set size" in ln), "?")
        found = json.loads(out)
        codes: dict = {}
        for d in found:
            codes[d["code"]] = codes.get(d["code"], 0) + 1
        print(f"{total} lines, {n} modules, chains {ns.depth} deep: {wall:.1f} s wall, "
              f"{cpu:.1f} s CPU, peak RSS {rss} KiB (largest process), {len(found)} findings "
              f"{dict(sorted(codes.items()))}")
        print("  " + _stats(err))
    finally:
        if not ns.keep:
            shutil.rmtree(root, ignore_errors=True)


def flake8_cost(ns) -> None:
    if not ns.root or not ns.file:
        raise SystemExit("flake8: --root and --file are needed")
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        shutil.copytree(ns.root, root, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", ".reflint_cache", "__pycache__"))
        rel = os.path.relpath(os.path.abspath(ns.file), os.path.abspath(ns.root))
        env = dict(os.environ)
        env.pop("REFLINT_CACHE_DIR", None)
        f8 = [sys.executable, "-m", "flake8", "--isolated", "--select", "REF", rel]
        cache = os.path.join(root, ".reflint_cache")

        def run(label, args, fresh=False):
            for _ in range(ns.repeat):
                if fresh:
                    shutil.rmtree(cache, ignore_errors=True)
                cwd = os.getcwd()
                os.chdir(root)
                try:
                    cpu, wall, out, err = _timed(args, env)
                finally:
                    os.chdir(cwd)
                lines = [ln for ln in out.splitlines() if "REF" in ln]
                print(f"{label:>40}: {cpu:6.2f} s CPU, {wall:6.2f} s wall, "
                      f"{len(lines)} findings", flush=True)

        run("flake8 --reflint-no-project", f8 + ["--reflint-no-project"])
        run("flake8, project, no cache (writes it)", f8, fresh=True)
        assert os.path.isdir(cache)
        run("flake8, project, the summary cache", f8)
        run("reflint check --project-root, no cache",
            _reflint() + ["check", "--exit-zero", "--no-cache", "--project-root", ".", rel])
        run("reflint check --project-root, cache", _reflint() + [
            "check", "--exit-zero", "--project-root", ".", rel])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("cold", "warm", "generated", "flake8"))
    ap.add_argument("--root", default="")
    ap.add_argument("--file", default="")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--keep", default="")
    ap.add_argument("--summary-only", action="store_true",
                    help="generated: the summary phase and the project alone (peak RSS)")
    ns = ap.parse_args()
    {"cold": cold, "warm": warm, "generated": generated, "flake8": flake8_cost}[ns.what](ns)


if __name__ == "__main__":
    main()
