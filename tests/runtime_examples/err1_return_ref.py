"""Doc err1: a jit function returns its ref argument (REF001)."""
import jax

x_ref = jax.new_ref(0.)


@jax.jit
def err1(x_ref):
    x_ref[...] = 5.
    return x_ref


err1(x_ref)
