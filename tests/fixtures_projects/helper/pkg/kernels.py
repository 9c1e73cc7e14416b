def add_n(x_ref, o_ref, *, n):
    o_ref[...] = x_ref + n  # expect: REF007


def mul_n(x_ref, o_ref, *, n):
    o_ref[...] = x_ref[...] * n * 2
