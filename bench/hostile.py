"""Time to check pathological but valid files as they grow: the cost must stay linear.

    python bench/hostile.py [--sizes 5000,10000,20000,50000]

Cases: ``y = x_ref + x_ref + ...`` (a left-recursive chain of N terms, each a REF007 finding),
``y = "a" "a" ...`` (N adjacent string literals and one finding), and a module of N lines of
small functions with one finding at the end. Each is checked in a fresh process
(``reflint check --no-cache``); prints seconds and seconds per 1,000 units, which stays about
flat when the cost is linear.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HEAD = "import jax\nimport jax.numpy as jnp\nx_ref = jax.new_ref(jnp.zeros(3))\n"


def chain(n: int) -> str:
    return HEAD + "y = " + " + ".join(["x_ref"] * n) + "\n"


def strings(n: int) -> str:
    return HEAD + "y = " + " ".join(['"a"'] * n) + "\nz = x_ref + 1\n"


def lines(n: int) -> str:
    body = "".join(f"def f{i}(a):\n    return a + {i}\n\n" for i in range(n // 3))
    return HEAD + body + "y = jnp.sin(x_ref)\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5000,10000,20000,50000")
    ap.add_argument("--line-sizes", default="12500,25000,50000,100000")
    args = ap.parse_args(argv)
    cases = [("x_ref + ... (terms)", chain, args.sizes),
             ('"a" "a" ... (literals)', strings, args.sizes),
             ("functions (lines)", lines, args.line_sizes)]
    with tempfile.TemporaryDirectory() as d:
        for name, make, sizes in cases:
            print(f"{name:<26} {'size':>8} {'seconds':>8} {'s / 1000':>9}")
            for n in map(int, sizes.split(",")):
                path = os.path.join(d, "case.py")
                with open(path, "w") as fh:
                    fh.write(make(n))
                start = time.perf_counter()
                r = subprocess.run([sys.executable, "-m", "reflint", "check", "--no-cache",
                                    "--max-file-size", "100MB", "--format", "concise",
                                    "-j", "1", path], capture_output=True, text=True)
                took = time.perf_counter() - start
                found = r.stdout.count(": REF")
                print(f"{'':<26} {n:>8} {took:>8.2f} {took / n * 1000:>9.3f}   "
                      f"({found} findings, exit {r.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
