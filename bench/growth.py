"""Growth of the checking time with the size of module-level code: it must stay linear.

    python bench/growth.py [--sizes 1000,2000,4000,8000] [--cases notebook,items,...]

Shapes (issue 29): an exported notebook (module-level code, a ref rebound per "cell" and a
function per cell called there), module-level array item assignment (``arr = jnp.zeros(4)`` /
``arr[0] = i`` repeated), generated JAX programs concatenated (tests/fuzz_programs.py) and a
deep ``a ** a ** ...`` chain (right-recursive; beyond nesting 400 it is analysed on the tree
built from CPython's parse). Each size is checked in this process (``lint_source``, no cache,
one job); prints CPU seconds (``time.process_time``: steady on a shared machine), seconds per 1,000
units and the ratio to the previous size, which stays near the size ratio (2 for doubling
sizes) when the cost is linear and near its square when it is quadratic.

``tests/test_growth.py`` runs the same shapes at small sizes and fails on super-linear growth.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

HEAD = "import jax\nimport jax.numpy as jnp\n"


def notebook(n_lines: int) -> str:
    """An exported notebook: per cell, a ref (re)bound at module level, a function using it,
    and a call of that function at module level (7 lines per cell)."""
    cells = []
    for i in range(max(1, n_lines // 7)):
        cells.append(f"# %% cell {i}\nx_ref = jax.new_ref(jnp.zeros({i % 7 + 1}))\n"
                     f"@jax.jit\ndef step{i}(r):\n    x_ref[...] += r[...]\n"
                     f"    return jnp.sin(r)\ny{i} = step{i}(x_ref)\n")
    return HEAD + "".join(cells)


def items(n_lines: int) -> str:
    """Module-level array item assignment (REF013 on each ``arr[0] = i``)."""
    body = "".join(f"arr = jnp.zeros(4)\narr[0] = {i}\n" for i in range(max(1, n_lines // 2)))
    return HEAD + body


def programs(n_lines: int, seed: int = 0) -> str:
    """Generated JAX programs (tests/fuzz_programs.py) concatenated up to ``n_lines``."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "tests"))
    try:
        import fuzz_programs as fp
    finally:
        sys.path.pop(0)
    rng = random.Random(seed)
    parts: list = []
    lines = 0
    while lines < n_lines:
        src = fp.program(rng)
        if not fp.valid(src):
            continue
        parts.append(src)
        lines += src.count("\n")
    return "".join(parts)


def power(n_terms: int) -> str:
    """``y = a ** a ** ...`` (right-recursive, nested ``n_terms`` deep), then one finding."""
    return (HEAD + "a = 2\nx_ref = jax.new_ref(jnp.zeros(3))\n"
            "y = " + " ** ".join(["a"] * n_terms) + "\nz = x_ref + 1\n")


CASES = {"notebook": notebook, "items": items, "programs": programs, "power": power}


def time_case(make, n: int, repeat: int = 1) -> float:
    """Best-of-``repeat`` seconds to lint ``make(n)`` in this process (no cache, one job)."""
    from reflint.engine import lint_source
    from reflint.settings import Settings

    src = make(n)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        lint_source(src, "case.py", Settings())
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,4000,8000")
    ap.add_argument("--power-sizes", default="500,1000,2000,4000")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args(argv)
    from reflint.engine import lint_source
    from reflint.settings import Settings

    lint_source(items(10), "warm.py", Settings())  # imports and first-use costs
    print(f"{'case':<10} {'size':>7} {'lines':>7} {'cpu s':>8} {'s / 1000':>9} {'ratio':>6}"
          f" {'findings':>9}")
    for name in args.cases.split(","):
        make = CASES[name]
        sizes = args.power_sizes if name == "power" else args.sizes
        prev = None
        for n in map(int, sizes.split(",")):
            src = make(n)
            start = time.process_time()  # CPU time: steady on a loaded machine
            res = lint_source(src, "case.py", Settings())
            took = time.process_time() - start
            ratio = f"{took / prev:6.2f}" if prev else f"{'':>6}"
            prev = took
            print(f"{name:<10} {n:>7} {src.count(chr(10)):>7} {took:>8.2f} "
                  f"{took / n * 1000:>9.3f} {ratio} {len(res.diagnostics):>9}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
