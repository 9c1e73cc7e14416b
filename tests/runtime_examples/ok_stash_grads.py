"""Doc stash_grads: custom_vjp fwd returns its own ref argument (runs clean)."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def stash_grads(grads_ref, x):
    return x


def stash_grads_fwd(grads_ref, x):
    return x, grads_ref


def stash_grads_bwd(grads_ref, g):
    grads_ref[...] = g
    return None, g


stash_grads.defvjp(stash_grads_fwd, stash_grads_bwd)


def f(x, grads_ref):
    x = jnp.sin(x)
    x = stash_grads(grads_ref, x)
    return x


grads_ref = jax.new_ref(0.)
f(1., grads_ref)
print(grads_ref)
g = jax.grad(f)(1., grads_ref)
print(g, grads_ref)
assert float(grads_ref[...]) == 1.0
