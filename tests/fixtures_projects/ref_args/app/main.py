import jax
import jax.numpy as jnp

from . import lib
from .lib import keyword_only as ko

buf = jax.new_ref(jnp.zeros(3))
lib.get(buf)
lib.get_value(buf)
lib.norm(buf[...])
lib.add_all(buf, buf)


def step(x):
    acc = jax.new_ref(jnp.zeros(3))
    lib.total(acc, scale=x)
    ko(out=acc)
    return acc[...]


def rebound(x):
    # Not a ref when it reaches the call: bound again to its value first.
    tmp = jax.new_ref(x)
    tmp = tmp[...]
    return lib.norm(tmp)


def shadowed(lib, x):
    # `lib` is a parameter here, not the module.
    r = jax.new_ref(x)
    return lib.norm(r)
