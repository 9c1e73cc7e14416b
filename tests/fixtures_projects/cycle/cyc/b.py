from cyc import a


def forward(kernel, shape):
    return a.really_launch(kernel, shape)


def k_b(x_ref, o_ref):
    o_ref[...] = -x_ref  # expect: REF007


def k_unused(x_ref, o_ref):
    o_ref[...] = -x_ref  # never launched


def use(x):
    return a.launch(k_b, x)(x)
