"""Doc err5: vmap writes into a closed-over ref (REF005)."""
import jax
import jax.numpy as jnp

x_ref = jax.new_ref(0.)


def err5(x):
    x_ref[...] = x


jax.vmap(err5)(jnp.arange(3.))
