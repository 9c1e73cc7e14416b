"""Streaming statistics with lax.scan, accumulating into refs (the "foreach" pattern).

`running_mean` is the correct recipe: the scan body closes over the ref and writes it.
`histogram` and `trace_sums` contain ref bugs; see README.md.
"""
import jax
import jax.numpy as jnp
from jax import lax


def running_mean(xs):
    total = jax.new_ref(0.0)

    def body(i, x):
        total[...] += x
        return i + 1, total[...] / (i + 1)

    _, means = lax.scan(body, 0, xs)
    return means


def histogram(xs, n_bins=4):
    counts = jax.new_ref(jnp.zeros(n_bins, jnp.int32))

    def body(counts_ref, x):
        b = jnp.clip(jnp.floor(x * n_bins).astype(jnp.int32), 0, n_bins - 1)
        counts[b] += 1
        return counts_ref, None

    lax.scan(body, counts, xs)
    return counts[...]


def trace_sums(xs):
    acc = jax.new_ref(0.0)

    def body(carry, x):
        acc[...] += x
        return carry, acc

    _, history = lax.scan(body, None, xs)
    return history


if __name__ == "__main__":
    xs = jax.random.uniform(jax.random.key(0), (32,))
    print("running mean:", jax.jit(running_mean)(xs)[-1])
    print("histogram:", jax.jit(histogram)(xs))
    print("sums:", jax.jit(trace_sums)(xs))
