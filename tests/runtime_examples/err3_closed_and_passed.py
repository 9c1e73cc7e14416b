"""Doc err3: a ref both closed over and passed (REF003)."""
import jax

x_ref = jax.new_ref(0.)


@jax.jit
def err3(y_ref):
    y_ref[...] = x_ref[...]


err3(x_ref)
