"""Kernels: no Pallas import here; ops.py launches them."""


def scale(x_ref, o_ref):
    o_ref[...] = x_ref * 2  # expect: REF007


def scaled(x_ref, o_ref, factor):
    # `factor` is bound by functools.partial in ops.py: a number, not a ref.
    o_ref[...] = x_ref[...] * factor * 2


def never_launched(x_ref, o_ref):
    # Not given to any Pallas entry point: its parameters are not known to be refs.
    o_ref[...] = x_ref * 2
