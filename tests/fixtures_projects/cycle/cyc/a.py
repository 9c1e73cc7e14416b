from jax.experimental import pallas as pl

from cyc import b


def launch(kernel, shape):
    return b.forward(kernel, shape)


def really_launch(kernel, shape):
    return pl.pallas_call(kernel, out_shape=shape)


def k_a(x_ref, o_ref):
    o_ref[...] = x_ref - 1  # expect: REF007


def use(x):
    return b.forward(k_a, x)(x)
