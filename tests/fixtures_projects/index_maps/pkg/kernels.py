"""Two kernels; ops.py chooses one in the branches of an `if` and launches it."""


def paged(lengths_ref, x_ref, o_ref, *, scale):
    o_ref[...] = x_ref * scale  # expect: REF007


def paged_inline(lengths_ref, x_ref, o_ref, *, scale):
    o_ref[...] = x_ref[...] * scale + lengths_ref  # expect: REF007


def unused(lengths_ref, x_ref, o_ref):
    # Assigned in sequence before another kernel in ops.py, then overwritten: not launched.
    o_ref[...] = x_ref * 2
