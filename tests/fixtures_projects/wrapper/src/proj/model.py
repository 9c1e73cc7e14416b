import jax

from .utils.pallas import buffered_pallas_call, custom_pallas_call, not_a_wrapper


def add_one(x_ref, o_ref):
    o_ref[...] = x_ref + 1  # expect: REF007


def blocked(x_ref, o_ref, block):
    o_ref[...] = x_ref[...] + block  # block is bound by the wrapper's partial


def plain(x_ref, o_ref):
    return x_ref * 2  # not a kernel: not_a_wrapper only calls it


def run(x):
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    y = buffered_pallas_call(add_one, out)(x)
    z = custom_pallas_call(blocked, out, block=8)(x)
    return not_a_wrapper(plain, y + z)
