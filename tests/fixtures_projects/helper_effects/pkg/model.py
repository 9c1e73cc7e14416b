import jax
import jax.numpy as jnp

from pkg import helpers
from pkg.helpers import record

xs = jnp.arange(3.0)
log_ref = jax.new_ref(0.0)
acc_ref = jax.new_ref(jnp.zeros(()))


@jax.vmap
def step(x):
    record(log_ref, x)  # expect: REF005
    return x + 1


def mapped(x):
    helpers.bump(acc_ref, x)  # expect: REF005
    return x


jax.vmap(mapped)(xs)


@jax.vmap
def reads_only(x):
    return x + helpers.total(acc_ref)


def own_scratch(x):
    s_ref = jax.new_ref(x)  # created inside the mapped function: its own
    helpers.bump(s_ref, 1.0)
    return s_ref[...]


jax.vmap(own_scratch)(xs)


@jax.vmap
def not_followed(x):
    helpers.rebound(acc_ref, x)
    helpers.nested(acc_ref, x)
    return x


@jax.vmap
def logs(x):
    helpers.log_event(x)  # expect: REF005
    helpers.shadowed(x)
    return x


@jax.jit
def jitted(x):
    helpers.bump(acc_ref, x)  # jit is not a map: fine
    return x


step(xs)
logs(xs)
