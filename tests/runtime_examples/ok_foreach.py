"""Doc foreach recipe: a scan body closes over a ref and accumulates (runs clean)."""
import jax
import jax.numpy as jnp
from jax.lax import scan


def foreach(*args):
    def decorator(body):
        return scan(lambda _, elts: (None, body(*elts)), None, args)[1]
    return decorator


r = jax.new_ref(0)
xs = jnp.arange(10)


@foreach(xs)
def ys(x):
    r[...] += x
    return x * 2


print(r)
print(ys)
assert int(r[...]) == 45
assert ys.tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
