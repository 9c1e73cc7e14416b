"""Doc introduction: jit closes over a ref; grad of a pure function with an internal ref."""
import jax
import jax.numpy as jnp

x_ref = jax.new_ref(jnp.zeros(3))


@jax.jit
def f():
    x_ref[1] += 1.


f()
f()
assert x_ref[...].tolist() == [0., 2., 0.]


def g(x):
    r = jax.new_ref(0.)
    r[...] = jnp.sin(x)
    return r[...]


assert abs(float(jax.grad(g)(1.0)) - 0.5403023) < 1e-5


@jax.jit
def pure1(x):
    ref = jax.new_ref(x)
    ref[...] = ref[...] + ref[...]
    return jax.freeze(ref)


assert float(jax.grad(pure1)(3.0)) == 2.0
print("ok")
