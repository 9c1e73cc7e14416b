"""Helpers the kernels of kernels.py call with their refs (no Pallas name here)."""
import jax.numpy as jnp


def load_scaled(r, s):
    return jnp.exp(r) * s  # expect: REF007


def load_ok(r):
    return r[...] * 2


def store(o, v):
    o[...] = v


def scale_of(n, factor=2.0):
    # kernels.py gives `n` a Python number bound by functools.partial, and `factor` keeps
    # its default: neither is a ref.
    return n * factor


def double(x_ref, o_ref, factor):
    # A kernel: kernels.py launches it through a local name bound to a partial.
    o_ref[...] = x_ref * factor  # expect: REF007
