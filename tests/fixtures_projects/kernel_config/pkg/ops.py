import functools

import jax
from jax.experimental import pallas as pl

from pkg import kernels


def configured(x, **config):
    return pl.pallas_call(functools.partial(kernels.configured, **config),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def configured_positional(x, config):
    return pl.pallas_call(functools.partial(kernels.configured_positional, **config),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def unspelled(x, config):
    return pl.pallas_call(functools.partial(kernels.unspelled, **config),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
