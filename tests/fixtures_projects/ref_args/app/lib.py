import jax
import jax.numpy as jnp


@jax.jit
def get(r):
    return r  # expect: REF001


@jax.jit
def get_value(r):
    return r[...]


def total(r, scale=1.0):
    return jnp.sum(r) * scale  # expect: REF007


def norm(x):
    return jnp.linalg.norm(x)  # main.py gives it an array (buf[...]): no finding


def add_all(*refs):
    return sum(r[...] for r in refs)


@jax.jit
def keyword_only(*, out):
    return out  # expect: REF001


def local_use():
    # A call in this module, with an Array: its own analysis decides (nothing to report).
    return total(jnp.ones(3))
