import functools
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

x_ref = jax.new_ref(jnp.zeros(3))
y_ref = jax.new_ref(jnp.ones(3))
a = jnp.arange(4.0)
b = jnp.zeros(3)
c = 2.0
acc = []


global_state = {}


def deco(fn):
    return fn


@jax.jit
def f(p, q):
    return p


def g(r):
    r[...] = 1.0


def body(s, x):
    return s, x


def branch(r):
    return r


def loss(w):
    return jnp.sum(w ** 2)


def ctx():
    return open(__file__)


def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


class Model:
    def __init__(self):
        self.buf = jax.new_ref(jnp.zeros(3))

    def step(self, *args):
        def inner(q):
            o_ref[...] = o_ref[...] + 1
            global_state['k'] = jax.jit(h)(o_ref, c)
            a += 1
            return q
        a = -self.buf; y_ref = -self.buf
        return inner(b)

@deco
def h(*args):
    jax.freeze(x_ref)
    arr = jnp.ones(3)
    arr[0] -= y_ref[...]
    b += 1
    return a

x_ref[...] = x_ref[...] + 1

lax.fori_loop(0, 3, lambda i, s: h(s, x_ref), a)
