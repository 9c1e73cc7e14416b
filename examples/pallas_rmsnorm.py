"""An RMSNorm kernel written with Pallas (run in interpret mode on CPU).

Pallas kernel parameters are refs: inputs must be read with x_ref[...] before any math.
This file contains ref bugs; see README.md.
"""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def rmsnorm_kernel(x_ref, g_ref, o_ref):
    x = x_ref[...]
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    o_ref[...] = x * jax.lax.rsqrt(ms + 1e-6) * g_ref


def scale_kernel(x_ref, o_ref):
    o_ref[...] = jnp.tanh(x_ref) * x_ref.shape[-1]


def rmsnorm(x, g):
    return pl.pallas_call(rmsnorm_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x, g)


def scale(x):
    return pl.pallas_call(scale_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)


if __name__ == "__main__":
    x = jax.random.normal(jax.random.key(0), (4, 8))
    g = jnp.ones((8,))
    print(rmsnorm(x, g))
    print(scale(x))
