"""Doc err4: freeze of a jit argument, outside its creation scope (REF004).

JAX 0.10.2 accepts this silently; <= 0.9 raises IndexError.
"""
import jax

x_ref = jax.new_ref(0.)


@jax.jit
def err4(x_ref):
    jax.freeze(x_ref)


err4(x_ref)
