"""Integration sample without findings."""

import jax
import jax.numpy as jnp

counter_ref = jax.new_ref(jnp.zeros(3))
total = jnp.sum(counter_ref[...])
