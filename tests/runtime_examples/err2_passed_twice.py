"""Doc err2: the same ref passed twice to a jit function (REF002)."""
import jax

x_ref = jax.new_ref(0.)


@jax.jit
def err2(x_ref, y_ref):
    ...


err2(x_ref, x_ref)
