import jax
import jax.numpy as jnp

from proj import utils
from proj.utils import buffers
from proj.utils.buffers import make_counter, maybe_buffer, rebinds, snapshot


@jax.jit
def step(x):
    buf = utils.new_buffer(3)
    buf[...] += x
    return buf  # expect: REF001


@jax.jit
def count(i):
    return make_counter(4)  # expect: REF001


@jax.jit
def prefix_sum(x):
    # A ref made by another module's helper inside jit, read before returning: fine.
    buf = buffers.make_buffer(x.shape[0])
    buf[...] = jnp.cumsum(x)
    return buf[...]


def scaled(x):
    r = buffers.make_buffer(3)
    return r * x  # expect: REF007


def fine(x):
    r = buffers.make_buffer(3)
    return r[...] * x


@jax.jit
def not_refs(x):
    a = maybe_buffer(3, True)
    b = snapshot(3)
    c = rebinds(3)
    return a, b + 1, c * 2


counts = make_counter(4)


@jax.jit
def observe(i):
    # An untraced factory's ref closed over by a jitted step that returns nothing: fine.
    counts[i] += 1
