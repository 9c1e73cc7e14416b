"""Helpers writing (or only reading) the refs given to them."""
import jax


def bump(r, v):
    r[...] += v


def record(log_ref, v):
    jax.ref.addupdate(log_ref, (), v)


def total(r):
    return r[...].sum()  # reads only


def rebound(r, v):
    r = r.at[0]
    r[...] = v  # `r` is bound again: not followed


def nested(r, v):
    def inner():
        r[...] = v  # in a nested function: not followed

    return inner


events = jax.new_ref(0.0)  # this module's own ref


def log_event(v):
    events[...] += v  # writes this module's ref: a call from another module writes it there


def shadowed(v):
    events = {}
    events[0] = v  # a local dict named like the ref
