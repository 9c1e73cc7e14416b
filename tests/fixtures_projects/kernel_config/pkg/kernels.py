"""Kernels ops.py configures with `functools.partial(kernel, **config)`."""


def configured(x_ref, o_ref, *, factor, offset):
    # The refs are the positional parameters spelled as refs; the mapping binds the rest.
    o_ref[...] = x_ref * factor + offset  # expect: REF007


def configured_positional(x, o_ref, factor):
    # `x` is not spelled as a ref: the mapping is taken to bind it (and `factor`), only
    # `o_ref` is a ref.
    o_ref[...] = x * factor


def unspelled(x, o, factor):
    # No parameter spelled as a ref: which ones the mapping binds is not known, so the
    # function is not taken for a kernel.
    o[...] = x * factor
