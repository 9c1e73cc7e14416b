import jax
import jax.numpy as jnp

counts = jax.new_ref(jnp.zeros(4, jnp.int32))
scratch = jax.new_ref(jnp.zeros(3))
scratch = None  # bound again: not a ref of this module
cache = jax.new_ref(jnp.zeros(3))


def reset():
    global cache
    cache = None  # bound again by a function: not followed
