import jax
import jax.numpy as jnp

from app import state
from app.state import cache, counts, scratch

xs = jnp.arange(3)


@jax.jit
def leak(i):
    return state.counts  # expect: REF001


@jax.vmap
def tally(i):
    counts[i] += 1  # expect: REF005
    return i


@jax.jit
def observe(i):
    counts[i] += 1  # closed over by a jitted step that returns nothing: fine


@jax.jit
def read(i):
    return counts[...] + i


doubled = state.counts * 2  # expect: REF007
fine = counts[...] * 2
not_refs = scratch * 2, cache * 2
tally(xs)
