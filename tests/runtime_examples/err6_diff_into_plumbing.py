"""Doc err6: a differentiated value written into a plumbing ref (REF008)."""
import jax


def err6(x, some_plumbing_ref):
    y = x + x
    some_plumbing_ref[...] += y
    return y


r = jax.new_ref(0.)
jax.grad(err6)(1., r)
