import jax

from .helpers import call_kernel
from .kernels import add_n, mul_n


def f(x):
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return call_kernel(x, kernel=add_n, n=3, out_shape=out) + \
        call_kernel(x, kernel=mul_n, n=2, out_shape=out)
