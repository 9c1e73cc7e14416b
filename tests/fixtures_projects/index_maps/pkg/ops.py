import functools

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from pkg import kernels
from pkg.specs import PatchBlockSpec


def attention(lengths, x, inline):
    def x_map(i, lengths_ref):
        return (lax.select(i < lengths_ref, i, 0),)  # expect: REF007

    def o_map(i, lengths_ref):
        return (lax.select(i < lengths_ref[0], i, 0),)

    if inline:
        kernel = kernels.paged_inline
    else:
        kernel = kernels.paged
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(2,), in_specs=[PatchBlockSpec(x_map, (8,))],
        out_specs=PatchBlockSpec(o_map, (8,)))
    return pl.pallas_call(functools.partial(kernel, scale=2.0), grid_spec=spec,
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(lengths, x)


def other(lengths, x):
    kernel = kernels.unused
    kernel = kernels.paged
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(lengths, x)
