"""Overhead of reflint's runtime checks: ``python -m reflint.runtime._bench``.

Prints the median time of (1) a steady-state call of a jit-compiled function on
an Array, (2) the same with a Ref argument (sin_inplace), and (3) tracing a
function with 300 ref reads/writes (jax.make_jaxpr), with checks off and on.
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp

import reflint.runtime as rt


def _median_us(fn, n: int, reps: int = 7) -> float:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(out)


def measure() -> dict[str, float]:
    x = jnp.arange(8.)
    f = jax.jit(lambda x: jnp.sin(x) * 2)
    f(x).block_until_ready()
    res = {"jit call, Array arg (us)": _median_us(lambda: f(x), 2000)}

    g = jax.jit(lambda r: r.__setitem__(..., jnp.sin(r[...])))
    r = jax.new_ref(x)
    g(r)
    res["jit call, Ref arg (us)"] = _median_us(lambda: g(r), 2000)

    def many(x):
        q = jax.new_ref(x)
        for _ in range(100):
            q[...] += 1.
        return jax.freeze(q)
    res["trace 300 ref ops (us)"] = _median_us(
        lambda: jax.make_jaxpr(lambda x: many(x))(x), 5, reps=5)
    return res


def main() -> None:
    print(f"jax {jax.__version__}, device {jax.devices()[0]}")
    off = measure()
    with rt.checks():
        on = measure()
    for k in off:
        print(f"{k:28s} off {off[k]:9.2f}  on {on[k]:9.2f}  delta {on[k] - off[k]:+8.2f}"
              f"  ({(on[k] / off[k] - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
