"""Integration sample: the same findings through reflint check, flake8 and pre-commit."""

import jax
import jax.numpy as jnp


@jax.jit
def step(x_ref):
    x_ref[...] += 1.0
    return x_ref  # expect: REF001


step(jax.new_ref(jnp.zeros(3)))


@jax.jit
def copy(dst_ref, src_ref):
    dst_ref[...] = src_ref[...]


counter_ref = jax.new_ref(jnp.zeros(3))
copy(counter_ref, counter_ref)  # expect: REF002
total = jnp.sum(
    counter_ref)  # expect: REF007
scaled = jnp.sin(counter_ref) * 2  # expect: REF007
ignored = jnp.cos(counter_ref)  # noqa: REF007
also_ignored = jnp.cos(counter_ref)  # noqa
