"""Functions of another module returning refs (and some that do not)."""
import jax
import jax.numpy as jnp


def make_buffer(n):
    return jax.new_ref(jnp.zeros(n))


def make_counter(n):
    ref = jax.new_ref(jnp.zeros(n, jnp.int32))
    return ref


def maybe_buffer(n, want):
    if want:
        return jax.new_ref(jnp.zeros(n))
    return None  # not always a ref: not a factory


def snapshot(n):
    ref = jax.new_ref(jnp.zeros(n))
    return ref[...]  # an Array


def rebinds(n):
    ref = jax.new_ref(jnp.zeros(n))
    ref = ref[...]
    return ref  # an Array


def loops(xs):
    for ref in xs:
        pass
    ref = jax.new_ref(xs)
    return ref  # `ref` is also a loop target: not followed
