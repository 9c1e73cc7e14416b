"""Linear regression trained with jit + grad, plumbing metrics out through refs.

Refs let the jitted step write a running loss average and a step counter without
threading them through the return value. This file contains ref bugs; see README.md.
"""
import jax
import jax.numpy as jnp


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def train_step(params, x, y, loss_ema_ref, step_ref):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    loss_ema_ref[...] = 0.9 * loss_ema_ref + 0.1 * loss
    step_ref[...] += 1
    return params, step_ref


def main():
    key = jax.random.key(0)
    x = jax.random.normal(key, (128, 3))
    y = x @ jnp.array([1.0, -2.0, 0.5]) + 0.3
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    loss_ema = jax.new_ref(jnp.float32(0.0))
    step = jax.new_ref(jnp.int32(0))
    for _ in range(100):
        params, step = train_step(params, x, y, loss_ema, step)
    print("steps:", step[...], "loss ema:", loss_ema[...])
    print("w:", params["w"], "b:", params["b"])


if __name__ == "__main__":
    main()
