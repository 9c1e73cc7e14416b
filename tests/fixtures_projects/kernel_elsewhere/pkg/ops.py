import functools

import jax
from jax.experimental import pallas as pl

from pkg import kernels


def double(x):
    return pl.pallas_call(kernels.scale, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def triple(x):
    return pl.pallas_call(functools.partial(kernels.scaled, factor=3),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
