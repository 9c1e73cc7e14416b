"""A fixed-size replay buffer stored in refs and updated in place by jitted functions.

This file contains ref bugs; see README.md.
"""
import jax
import jax.numpy as jnp


@jax.jit
def insert(obs_ref, rew_ref, count_ref, obs, rew):
    i = count_ref[...] % obs_ref.shape[0]
    obs_ref[i] = obs
    rew_ref[i] = rew
    count_ref[...] += 1


@jax.jit
def roll_into(dst_ref, src_ref):
    dst_ref[...] = jnp.roll(src_ref[...], -1, axis=0)


class ReplayBuffer:
    def __init__(self, capacity, obs_dim):
        self.obs = jax.new_ref(jnp.zeros((capacity, obs_dim)))
        self.rewards = jax.new_ref(jnp.zeros(capacity))
        self.count = jax.new_ref(jnp.int32(0))

    def add(self, obs, reward):
        insert(self.obs, self.rewards, self.count, obs, reward)

    def drop_oldest(self):
        roll_into(self.obs, self.obs)

    def mean_reward(self):
        if self.count == 0:
            return 0.0
        n = min(int(self.count[...]), self.rewards.shape[0])
        return float(jnp.mean(self.rewards[:n]))


if __name__ == "__main__":
    buf = ReplayBuffer(capacity=8, obs_dim=2)
    print("empty buffer mean reward:", buf.mean_reward())
    for t in range(5):
        buf.add(jnp.full(2, float(t)), float(t))
    buf.drop_oldest()
    print("mean reward:", buf.mean_reward())
