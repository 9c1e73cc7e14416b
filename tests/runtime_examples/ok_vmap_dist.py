"""Doc dist: nested vmap over a ref argument (runs clean)."""
import jax
import jax.numpy as jnp


def dist(x, y, out_ref):
    assert x.ndim == y.ndim == 1
    assert out_ref.ndim == 0
    out_ref[...] = jnp.sum((x - y) ** 2)


vecs = jnp.arange(12.).reshape(3, 4)
out_ref = jax.new_ref(jnp.zeros((3, 3)))
jax.vmap(jax.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, out_ref)
print(out_ref)
assert out_ref[...].tolist() == [[0., 64., 256.], [64., 0., 64.], [256., 64., 0.]]
