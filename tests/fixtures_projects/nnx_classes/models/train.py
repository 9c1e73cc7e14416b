import jax
import jax.numpy as jnp
from flax import nnx

from . import mid
from .base import Counter, NotNnx, Stack, Twice


class Net(mid.Mid):
    def __init__(self, rngs):
        self.w = nnx.Param(jnp.ones(3))
        self.calls = Counter(jnp.zeros(()))


with nnx.var_defaults(ref=True):
    net = Net(nnx.Rngs(0))
    layers = Stack([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])
    lin = mid.MyLinear(2, 2, rngs=nnx.Rngs(0))
    calls = Counter(jnp.zeros(()))
    plain = NotNnx()
    unsure = Twice()

jax.jit(lambda m: nnx.state(m))(net)  # expect: REF001
jax.jit(lambda a, b: None)(layers, layers)  # expect: REF002
jax.grad(lambda m: m.kernel[...].sum())(lin)  # expect: REF016
jax.jit(lambda c: c)(calls)  # expect: REF001
# Not NNX classes (a plain class; a name of two classes): nothing is known of them (JAX
# rejects them as arguments for another reason: not pytrees).
jax.jit(lambda a, b: None)(plain, plain)
jax.jit(lambda a, b: None)(unsure, unsure)
