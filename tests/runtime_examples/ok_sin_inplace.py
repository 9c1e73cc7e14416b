"""Doc sin_inplace: a jit function updates its ref argument in place (runs clean)."""
import jax
import jax.numpy as jnp


@jax.jit
def sin_inplace(x_ref):
    x_ref[...] = jnp.sin(x_ref[...])


x_ref = jax.new_ref(jnp.arange(3.))
before = x_ref.unsafe_buffer_pointer()
sin_inplace(x_ref)
print(x_ref)
assert x_ref.unsafe_buffer_pointer() == before
assert jnp.allclose(x_ref[...], jnp.sin(jnp.arange(3.)))
