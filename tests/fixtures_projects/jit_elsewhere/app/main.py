import jax
import jax.numpy as jnp

from . import lib
from .lib import step as jitted_step

buf = jax.new_ref(jnp.zeros(3))
other = jax.new_ref(jnp.ones(3))
lib.step(buf, buf)  # expect: REF002
jitted_step(buf, b_ref=buf)  # expect: REF002
lib.step(buf, other)
lib.scaled_step(buf, 2)
lib.plain(buf, buf)  # not traced: Python aliasing is fine
