def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref * 2  # expect: REF007


def copy_ok(x_ref, o_ref):
    o_ref[...] = x_ref[...]
