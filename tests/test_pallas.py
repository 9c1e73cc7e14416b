"""Pallas kernels (issue 14): the planted-bug measure on the installed jax package's kernels,
and the kernel forms, refs in containers, ref views and kernel rules on small programs.

The planted-bug test reads the installed jax's Pallas sources at test time (nothing of them is
in this repository): see tests/pallas_planted.py. ``REFLINT_PLANTED_DIRS`` (colon-separated
directories or files) measures other code, e.g. JAX's tests/pallas and docs at HEAD:

    REFLINT_PLANTED_DIRS=/work/corpus/jax/tests/pallas python -m pytest tests/test_pallas.py
    python tests/pallas_planted.py /work/corpus/jax/tests/pallas   # prints the misses
"""

import os

import pytest

import pallas_planted
from reflint.engine import fix_source, lint_source
from reflint.settings import Settings

ALL = Settings()
THRESHOLD = 0.95


def codes(source, settings=ALL):
    return sorted((d.line, d.code) for d in lint_source(source, "k.py", settings).diagnostics)


# --------------------------------------------------------------------------------------------
# The planted-bug measure
# --------------------------------------------------------------------------------------------


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_planted_bugs_in_the_installed_pallas_kernels():
    files = pallas_planted.installed_kernel_files()
    assert len(files) >= 20, files
    found, plants, misses = pallas_planted.measure(files)
    # The sources have real kernels: a measure over a handful of plants would prove nothing.
    assert len(plants) >= 40, len(plants)
    detail = "\n".join(f"{m.path}:{m.line}: {m.snippet}" for m in misses)
    assert found / len(plants) >= THRESHOLD, f"{found}/{len(plants)}\n{detail}"


@pytest.mark.skipif(not os.environ.get("REFLINT_PLANTED_DIRS"),
                    reason="set REFLINT_PLANTED_DIRS to measure other Pallas code")
def test_planted_bugs_in_given_directories():
    files = pallas_planted.python_files(os.environ["REFLINT_PLANTED_DIRS"].split(os.pathsep))
    found, plants, misses = pallas_planted.measure(files)
    assert plants
    detail = "\n".join(f"{m.path}:{m.line}: {m.snippet}" for m in misses)
    assert found / len(plants) >= THRESHOLD, f"{found}/{len(plants)}\n{detail}"


@pytest.mark.slow
def test_planted_missing_initialisations_in_the_installed_pallas_kernels():
    """tests/refs_planted.py's ``init`` kind on the installed jax's kernels: the
    ``@pl.when`` initialisation of an accumulator dropped. The scratch accumulators of
    flash attention's backward kernels and of megablox's gmm (outputs not countable: a
    pytree ``out_shape``, aliases in a variable, ``scratch_shapes`` a name) are found."""
    import refs_planted

    got = refs_planted.measure(pallas_planted.installed_kernel_files())
    found, n, misses = got["init"]
    assert n >= 4, n
    missed = {(os.path.basename(m.path), m.snippet.split("[")[0]) for m in misses}
    for expected in [("flash_attention.py", "dk_scratch_ref"),
                     ("flash_attention.py", "dv_scratch_ref"), ("gmm.py", "acc_scratch")]:
        assert expected not in missed, missed
    assert found >= 3, (found, n, missed)


def test_planted_refs_outside_kernels():
    """refs_planted.py plants each kind once where the syntax says it applies."""
    import refs_planted

    src = ("import jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\n\n"
           "@jax.jit\n"
           "def f(x):\n"
           "    r = jax.new_ref(x)\n"
           "    r[...] = jnp.sin(r[...]) + 1\n"
           "    return r[...]\n\n"
           "def g(x):\n"
           "    a = jax.new_ref(x)\n"
           "    b = jax.new_ref(x)\n"
           "    h(a, b)\n"
           "    return a[...]\n\n"
           "@jax.jit\n"
           "def h(p, q):\n"
           "    p[...] += q[...]\n\n"
           "def kernel(x_ref, o_ref):\n"
           "    @pl.when(pl.program_id(0) == 0)\n"
           "    def _():\n"
           "        o_ref[...] = jnp.zeros_like(o_ref)\n"
           "    o_ref[...] += x_ref[...]\n")
    plants = refs_planted.find_plants("m.py", src)
    assert sorted((p.kind, p.line, p.snippet) for p in plants) == [
        ("init", 25, "o_ref[...] = jnp.zeros_like(o_ref)"),
        ("read", 8, "r[...]"),
        ("return", 9, "r[...]"),
        ("twice", 14, "b"),
    ]
    for p in plants:
        compile(p.source, "m.py", "exec")
        assert p.source.count("\n") == src.count("\n")


def test_planted_store_kinds_in_launched_kernels():
    """refs_planted.py's ``rebind`` (REF019) and ``wrong_ref`` (REF029) kinds: only in a
    kernel ``pallas_call`` launches by name without scratch buffers, a grid spec or aliases,
    on the one store of a parameter used nowhere else; reflint reports each plant."""
    import refs_planted

    src = ("import jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\n\n"
           "def double(x_ref, o_ref):\n"
           "    o_ref[...] = x_ref[...] * 2\n\n"
           "def halve(x_ref, o_ref):\n"                # read after its store: no plant
           "    o_ref[...] = x_ref[...] / 2\n"
           "    o_ref[...] += o_ref[...]\n\n"
           "def scratchy(x_ref, o_ref, acc_ref):\n"     # scratch buffers: no plant
           "    o_ref[...] = x_ref[...]\n\n"
           "def alone(x_ref, o_ref):\n"                # never launched: no plant
           "    o_ref[...] = x_ref[...]\n\n"
           "S = jax.ShapeDtypeStruct((8,), jnp.float32)\n"
           "x = jnp.ones(8)\n"
           "pl.pallas_call(double, out_shape=S)(x)\n"
           "pl.pallas_call(halve, out_shape=S)(x)\n"
           "pl.pallas_call(scratchy, out_shape=S, scratch_shapes=[S])(x)\n")
    plants = refs_planted.find_plants("m.py", src)
    assert sorted((p.kind, p.line, p.snippet) for p in plants) == [
        ("rebind", 6, "o_ref[...]"), ("wrong_ref", 6, "o_ref")]
    got = {p.kind: p.source.splitlines()[5] for p in plants}
    assert got == {"rebind": "    o_ref = x_ref[...] * 2",
                   "wrong_ref": "    x_ref[...] = x_ref[...] * 2"}
    for p in plants:
        code = refs_planted.EXPECTED[p.kind]
        assert (6, code) in codes(p.source), p.kind


def test_planted_discard_kind():
    """refs_planted.py's ``discard`` kind (REF023): ``x = x.at[i].set(v)`` loses its
    assignment, only where the target is the update's receiver."""
    import refs_planted

    src = ("import jax.numpy as jnp\n\n"
           "def f(n):\n"
           "    x = jnp.zeros(n)\n"
           "    x = x.at[0].set(1.0)\n"
           "    y = x.at[1].add(2.0)\n"     # another target: no plant
           "    return x + y\n")
    plants = refs_planted.find_plants("m.py", src)
    assert [(p.kind, p.line, p.snippet) for p in plants] == [
        ("discard", 5, "x = x.at[0].set(1.0)")]
    assert plants[0].source.splitlines()[4] == "    x.at[0].set(1.0)"
    assert (5, "REF023") in codes(plants[0].source)


def test_planting_drops_exactly_one_read():
    src = ("import jax.numpy as jnp\n\n"
           "def kernel(x_ref, y_ref, o_ref):\n"
           "    mask = jnp.ones(3)\n"
           "    o_ref[...] = jnp.sin(x_ref[...]) + y_ref[0, :] * mask[...]\n"
           "    o_ref[...] += jnp.zeros_like(x_ref[...])\n")
    plants = pallas_planted.find_plants("k.py", src)
    # x_ref[...] (an argument of jnp.sin), y_ref[0, :] (an operand of *); not mask[...] (a
    # computed Array), not the zeros_like argument (shape/dtype only), not the write target.
    assert sorted(p.snippet for p in plants) == ["x_ref[...]", "y_ref[0, :]"]
    for p in plants:
        assert p.source.count("[") == src.count("[") - 1
        compile(p.source, "k.py", "exec")


# --------------------------------------------------------------------------------------------
# Kernel forms, refs in containers, views
# --------------------------------------------------------------------------------------------

HEAD = ("import functools\nimport jax\nimport jax.numpy as jnp\n"
        "from jax.experimental import pallas as pl\n"
        "from jax.experimental.pallas import tpu as pltpu\n"
        "S = jax.ShapeDtypeStruct((8,), jnp.float32)\n")


@pytest.mark.parametrize("body,expected", [
    # *refs: unpacked, starred, indexed, sliced, iterated
    ("def k(*refs):\n    x_ref, o_ref = refs\n    o_ref[...] = x_ref + 1\n", [9]),
    ("def k(*refs):\n    *ins, o_ref = refs\n    o_ref[...] = ins[0] + 1\n", [9]),
    ("def k(*refs):\n    refs[1][...] = refs[0] * 2\n", [8]),
    ("def k(*refs):\n    for r in refs[:1]:\n        refs[1][...] = jnp.exp(r)\n", [9]),
    ("def k(n, *refs):\n    refs[1][...] = refs[0] - n[...]\n", [8]),
    # a pytree kernel parameter: ambiguous when indexed, refs when unpacked
    ("def k(in_refs, o_ref):\n    o_ref[...] = in_refs[0] + 1\n", []),
    ("def k(in_refs, o_ref):\n    a, b = in_refs\n    o_ref[...] = a[...] + b\n", [9]),
    ("def k(in_refs, o_ref):\n    a, b = in_refs[0]\n    o_ref[...] = a[...] + b\n", [9]),
    ("def k(in_refs, o_ref):\n    in_refs[1][0][...] = in_refs[0][0][...]\n", []),
    # views: refs inside kernels; math on them is a use
    ("def k(x_ref, o_ref):\n    o_ref[...] = x_ref.at[0:4][...] + x_ref.T[...]\n", []),
    ("def k(x_ref, o_ref):\n    o_ref[...] = x_ref.reshape(2, 4) + 1\n", [8]),
    ("def k(x_ref, o_ref):\n    o_ref[...] = x_ref.bitcast(jnp.int32).astype(jnp.float32)\n",
     [8]),
])
def test_kernel_parameters(body, expected):
    src = HEAD + body + "pl.pallas_call(k, out_shape=S)(x, y)\n"
    assert [line for line, code in codes(src) if code == "REF007"] == expected, codes(src)


@pytest.mark.parametrize("kernel,launch,expected", [
    # The refs come positionally: the mapping binds the configuration after them (or
    # keyword-only parameters); the positional parameters spelled as refs are the refs.
    ("def k(x_ref, o_ref, block):\n    o_ref[...] = x_ref * (block * 2)\n",
     "functools.partial(k, **cfg)", [8]),
    ("def k(x_ref, o_ref, *, block):\n    o_ref[...] = x_ref[...] * (block * 2)\n",
     "functools.partial(k, **cfg)", []),
    ("def k(x_ref, o_ref, *, n, scale):\n    def body(i, c):\n        o_ref[i] = x_ref + c\n"
     "        return c\n    jax.lax.fori_loop(0, n, body, 0)\n",
     "functools.partial(k, scale=2, **cfg)", [9]),
    # a configuration parameter is not taken for a ref, whatever it is used for
    ("def k(x_ref, o_ref, block):\n    o_ref[...] = x_ref[...] + block * 2\n",
     "functools.partial(k, **cfg)", []),
    # no parameter spelled as a ref: which ones the mapping binds is not known (no kernel)
    ("def k(x, o, block):\n    o[...] = x + block\n", "functools.partial(k, **cfg)", []),
    # `*args`: which parameters the positional values reach is not known
    ("def k(x_ref, o_ref, block):\n    o_ref[...] = x_ref + block\n",
     "functools.partial(k, *args)", []),
])
def test_kernel_given_with_a_mapping_of_keywords(kernel, launch, expected):
    """`functools.partial(kernel, **config)` (tpu-inference's fused MoE kernels)."""
    src = HEAD + kernel + f"def run(x, cfg, args):\n    return pl.pallas_call({launch}, " \
        "out_shape=S)(x)\n"
    assert [line for line, code in codes(src) if code == "REF007"] == expected, codes(src)


def test_views_in_jit_are_refs_and_top_level_views_are_not():
    src = ("import jax\nimport jax.numpy as jnp\n\n"
           "def use(v_ref):\n    return v_ref[...]\n\n"
           "@jax.jit\ndef f(x):\n    r = jax.new_ref(x)\n    use(r.reshape((-1, 2)))\n"
           "    return r.T + 1\n\n"
           "top = jax.new_ref(jnp.zeros((2, 2)))\nt = top.T\n")
    assert codes(src) == [(11, "REF007"), (14, "REF007")]


def test_each_def_of_a_kernel_name_is_used_where_it_reaches():
    src = HEAD + (
        "def kernel(x_ref, o_ref):\n    o_ref[...] = x_ref[...]\n"
        "pl.pallas_call(kernel, out_shape=S)(x)\n"
        "@functools.partial(pl.pallas_call, out_shape=S)\n"
        "def kernel(x_ref, o_ref):\n    o_ref[...] = x_ref * 2\n"
        "def kernel(x_ref, o_ref):\n    o_ref[...] = jnp.cos(x_ref)\n"
        "def run(x):\n    return pl.pallas_call(kernel, out_shape=S)(x)\n")
    assert codes(src) == [(12, "REF007"), (14, "REF007")]


def test_a_local_function_bound_on_two_paths_is_either():
    src = HEAD + (
        "def a(x_ref, o_ref):\n    o_ref[...] = x_ref + 1\n"
        "def b(x_ref, o_ref):\n    o_ref[...] = x_ref - 1\n"
        "def run(x, c):\n    if c:\n        k = a\n    else:\n        k = b\n"
        "    f = functools.partial(k)\n"
        "    return pl.pallas_call(f, out_shape=S)(x)\n")
    assert codes(src) == [(8, "REF007"), (10, "REF007")]


WRAPPERS = (
    "import functools\nimport jax\nimport jax.numpy as jnp\n"
    "from jax.experimental import pallas as pl\n"
    "from jax._src.pallas import pallas_test_util as ptu\n\n"
    "class Inherited(ptu.PallasTPUTest):\n"
    "    def test_a(self):\n"
    "        def kernel(x_ref, o_ref):\n"
    "            o_ref[...] = x_ref + 1.0\n"  # 10
    "        @jax.jit\n"
    "        def f(x):\n"
    "            return self.pallas_call(kernel, out_shape=x)(x)\n"
    "        return f\n\n"
    "class Forwarding:\n"
    "    INTERPRET = True\n"
    "    @classmethod\n"
    "    def pallas_call(cls, *args, **kwargs):\n"
    "        if cls.INTERPRET:\n"
    "            kwargs['compiler_params'] = None\n"
    "        return pl.pallas_call(*args, interpret=cls.INTERPRET, **kwargs)\n"
    "    def test_b(self, x):\n"
    "        def kernel(x_ref, o_ref):\n"
    "            o_ref[...] = jnp.sin(x_ref)\n"  # 25
    "        return self.pallas_call(kernel, out_shape=x)(x)\n\n"
    "class Reordering:\n"
    "    def pallas_call(self, *args):\n"
    "        args = args[1:]\n"
    "        return pl.pallas_call(*args)\n"
    "    def test_c(self, x):\n"
    "        def f(x_ref, o_ref):\n"
    "            o_ref[...] = x_ref + 1\n"  # 34: not a kernel (args are shifted)
    "        return self.pallas_call(f, 3)\n\n"
    "def kernel(y_ref):\n"
    "    @pl.with_scoped(None, w_ref=None)\n"
    "    def body(y_ref, x_ref, w_ref, scale=1.0):\n"
    "        x_ref[...] = jnp.ones_like(x_ref) * scale\n"  # 40: scale is not a ref
    "        y_ref[...] = jnp.exp(w_ref) * scale\n"  # 41
    "    body(y_ref)\n")


def test_inherited_and_forwarding_pallas_call_wrappers_and_with_scoped():
    """JAX's Pallas tests launch kernels with `self.pallas_call` (inherited from
    pallas_test_util, or a classmethod that adjusts keyword arguments); `pl.with_scoped` bodies
    take refs, but not their keyword defaults."""
    assert codes(WRAPPERS) == [(10, "REF007"), (25, "REF007"), (41, "REF007")]
    off = lint_source(WRAPPERS, "k.py", ALL, use_prefilter=False).diagnostics
    assert sorted((d.line, d.code) for d in off) == codes(WRAPPERS)


# --------------------------------------------------------------------------------------------
# REF018 / REF019
# --------------------------------------------------------------------------------------------


def test_kernel_returns_value_only_for_entry_points_that_forbid_it():
    src = HEAD + (
        "def k(x_ref, o_ref):\n"
        "    def body(t_ref):\n        return t_ref[...]\n"
        "    o_ref[...] = pl.run_scoped(body, pltpu.VMEM((8,), jnp.float32))\n"
        "    return o_ref\n"
        "pl.pallas_call(k, out_shape=S)(x)\n"
        "def helper(x_ref):\n    return x_ref[...] + 1\n")
    assert codes(src) == [(11, "REF018")]


def test_output_ref_rebound_positions_and_fix():
    src = HEAD + (
        "def k(s_ref, x_ref, o1_ref, o2_ref, acc_ref):\n"
        "    x_ref = x_ref[...]\n"      # an input: fine
        "    acc_ref = x_ref * 2\n"     # scratch: fine
        "    o1_ref = acc_ref + 1\n"    # output 0: reported, fixed
        "    o2_ref = jnp.sin(x_ref)\n"  # output 1: reported, read below: no fix
        "    print(o2_ref)\n"
        "pl.pallas_call(k, out_shape=(S, S), grid_spec=pltpu.PrefetchScalarGridSpec(\n"
        "    num_scalar_prefetch=1, grid=(1,), scratch_shapes=[pltpu.VMEM((8,), jnp.float32)]))"
        "(s, x)\n")
    diags = lint_source(src, "k.py", ALL).diagnostics
    assert [(d.line, d.code, d.fix is not None) for d in diags] == [
        (10, "REF019", True), (11, "REF019", False)]
    out = fix_source(src, "k.py", ALL)
    assert "    o1_ref[...] = acc_ref + 1\n" in out.source
    assert "    o2_ref = jnp.sin(x_ref)\n" in out.source


def test_output_ref_rebound_needs_known_outputs():
    # *args at the launch, or a scratch list the analysis cannot count: outputs unknown.
    for launch in ("pl.pallas_call(k, out_shape=S)(*xs)\n",
                   "pl.pallas_call(k, out_shape=S, scratch_shapes=shapes)(x)\n"):
        src = HEAD + "def k(x_ref, o_ref):\n    o_ref = x_ref[...] * 2\n" + launch
        assert codes(src) == [], launch


def test_output_ref_rebound_to_pallas_reads_and_array_functions():
    # A NumPy operand: the kernel's parameters may be pytrees of refs, so `x_ref[i]` is
    # unknown; an index built by `pl.ds` indexes a ref, and pltpu's array functions give
    # Arrays.
    launch = "pl.pallas_call(k, out_shape=S)(np.ones(8))\n"
    head = HEAD + "import numpy as np\n"
    for value, expected in [("x_ref[pl.ds(0, 8)]", [(10, "REF019")]),
                            ("x_ref[pl.dslice(0, 8)]", [(10, "REF019")]),
                            ("pltpu.roll(x_ref[...], 1, 0)", [(10, "REF019")]),
                            ("pltpu.bitcast(x_ref[...], jnp.int32)", [(10, "REF019")]),
                            ("x_ref[i]", []),            # a row, or one of a tuple of refs
                            ("helper(x_ref[...])", []),  # unknown: might return a ref view
                            ("x_ref.at[pl.ds(0, 8)]", [])]:  # a view: rebinding is fine
        src = head + f"def k(x_ref, o_ref):\n    i = pl.program_id(0)\n    o_ref = {value}\n" + \
            launch
        assert codes(src) == expected, value


@pytest.mark.parametrize("out_shape, n_params", [
    ("jax.ShapeDtypeStruct.like(S)", 2),
    ("jax.typeof(x)", 2),
    ("pltpu.VMEM((8,), jnp.float32)", 2),
    ("[S] * 2", 3),
    ("(S,) * 2", 3),
    ("[S, pltpu.SemaphoreType.DMA(())]", 3),
    ("like", 2),  # the launching function's parameter: counted from the kernel's arity
])
def test_kernel_outputs_counted_from_out_shape_spellings(out_shape, n_params):
    outs = ", ".join(f"o{k}_ref" for k in range(n_params - 1))
    src = HEAD + (f"def k(x_ref, {outs}):\n"
                  "    x_ref[...] = x_ref[...] * 2\n"
                  "def run(x, like):\n"
                  f"    return jax.vmap(pl.pallas_call(k, out_shape={out_shape}))(x)\n")
    assert codes(src, Settings(select=frozenset({"REF029"}))) == [(8, "REF029")], out_shape


@pytest.mark.parametrize("kernel, expected", [
    # A parameter with a default receives no ref: not every parameter is one, so the
    # outputs are not counted from the arity (one output, or two?).
    ("def k(x_ref, o_ref, m_ref=None):\n    x_ref[...] = x_ref[...] * 2\n", []),
    # A keyword-only parameter is configuration: two refs, one input and one output.
    ("def k(x_ref, o_ref, *, n=2):\n    x_ref[...] = x_ref[...] * n\n", [(8, "REF029")]),
])
def test_kernel_outputs_by_arity_needs_every_parameter_a_ref(kernel, expected):
    src = HEAD + kernel + "def run(x, like):\n    return pl.pallas_call(k, out_shape=like)(x)\n"
    assert codes(src, Settings(select=frozenset({"REF029"}))) == expected


def test_runtime_reports_an_unwritten_output_and_spares_aliased_ones():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from reflint.runtime import OutputRefRebound, checks

    s = jax.ShapeDtypeStruct((8,), jnp.float32)

    def rebound(x_ref, o_ref):
        o_ref = x_ref[...] * 2.0  # noqa: F841, REF019

    def in_place(x_ref, o_ref):
        x_ref[...] += 1.0

    def dma(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    with checks():
        with pytest.raises(OutputRefRebound, match="REF019 output-ref-rebound: output 0"):
            pl.pallas_call(rebound, out_shape=s, interpret=True)(jnp.ones(8))
        # An output aliased to an input holds the input: not reported.
        pl.pallas_call(in_place, out_shape=s, interpret=True,
                       input_output_aliases={0: 0})(jnp.ones(8))
        assert float(pl.pallas_call(dma, out_shape=s, interpret=True)(jnp.ones(8)).sum()) == 8


# --------------------------------------------------------------------------------------------
# Issue 26: every backend's kernel forms, views of views, refs stored into refs, REF028/REF029
# --------------------------------------------------------------------------------------------


def _both(src):
    """Findings with the pre-filter on, after checking they are those with it off."""
    on = codes(src)
    off = sorted((d.line, d.code)
                 for d in lint_source(src, "k.py", ALL, use_prefilter=False).diagnostics)
    assert on == off, (on, off)
    return on


@pytest.mark.parametrize("body,expected", [
    # pltpu.emit_pipeline(body=...) by keyword, with no positional argument
    ("def outer(x_hbm, o_hbm):\n    def inner(x_ref, o_ref):\n        o_ref[...] = x_ref + 1\n"
     "    pltpu.emit_pipeline(body=inner, grid=(1,), in_specs=[], out_specs=[])(x_hbm, o_hbm)\n",
     [(9, "REF007")]),
    # a local helper launching the kernel it is given by keyword
    ("def call_kernel(x, kernel):\n    return pl.pallas_call(functools.partial(kernel, s=2),"
     " out_shape=S)(x)\n"
     "def k(x_ref, o_ref, *, s):\n    o_ref[...] = x_ref * s\n"
     "def run(x):\n    return call_kernel(x, kernel=k)\n", [(10, "REF007")]),
    # refs taken one by one from an iterator over *refs
    ("def k(*refs):\n    it = iter(refs)\n    x_ref = next(it)\n    o_ref = next(it)\n"
     "    o_ref[...] = x_ref + 1\n"
     "pl.pallas_call(k, out_shape=S)(x)\n", [(11, "REF007")]),
    # views of views are refs; math on one is a use
    ("def k(x_ref, o_ref):\n    o_ref.at[:4][:2] = x_ref.at[:2] + 1\n"
     "    o_ref.at[1].at[0][...] = x_ref.at[0][...]\n"
     "pl.pallas_call(k, out_shape=S)(x)\n", [(8, "REF007")]),
    # a ref stored into a ref (JAX: "Cannot store a Ref into another Ref"), also with +=
    ("def k(x_ref, o_ref):\n    o_ref[...] = x_ref\n    o_ref[...] += x_ref\n"
     "    o_ref[...] = x_ref.at[0:4]\n"
     "pl.pallas_call(k, out_shape=S)(x)\n", [(8, "REF007"), (9, "REF007"), (10, "REF007")]),
    # TPU SparseCore's parallel_loop body runs in the kernel
    ("from jax.experimental.pallas import tpu_sc as plsc\n"
     "def k(a_ref, o_ref):\n    @plsc.parallel_loop(0, 8)\n    def body(i):\n"
     "        o_ref[...] = a_ref >> i\n"
     "pl.pallas_call(k, out_shape=S)(x)\n", [(11, "REF007")]),
])
def test_kernel_forms_of_issue_26(body, expected):
    assert _both(HEAD + body) == expected


TEST_HELPERS = (
    "import functools\nimport types\nfrom typing import TYPE_CHECKING\nimport jax\n"
    "import jax.numpy as jnp\nfrom jax._src import util\n"
    "from jax.experimental import pallas as pl\n"
    "from jax.experimental.pallas import mosaic_gpu as _plgpu\n"
    "from jax.experimental.pallas import tpu as pltpu\n"
    "if TYPE_CHECKING:\n  plgpu = _plgpu\nelse:\n"
    "  plgpu = types.ModuleType('_plgpu_local')\n  plgpu.__dict__.update(_plgpu.__dict__)\n"
    "  _kernel = _plgpu.kernel\n  del _plgpu\n\n"
    "class Base:\n"
    "  def kernel(self, *args, **kwargs):\n"
    "    result = _kernel(*args, compiler_params=None, **kwargs)\n"
    "    self.used = True\n"
    "    return result\n"
    "  def sc_kernel(self, **kwargs):\n"
    "    return functools.partial(pl.kernel, compiler_params=None, **kwargs)\n"
    "  def pallas_call(self, kernel_fn=None, *, out_shape, scratch_shapes=()):\n"
    "    def decorator(fn):\n"
    "      @jax.jit\n"
    "      @self.kernel(out_type=out_shape, scratch_types=scratch_shapes)\n"
    "      def wrapper(*args_gmem):\n"
    "        gmem_refs, scratch_refs = util.split_list(args_gmem, [len(args_gmem) - 1])\n"
    "        @functools.partial(plgpu.emit_pipeline, grid=(1,))\n"
    "        def pipeline(indices, *args):\n"
    "          fn(*args, *scratch_refs)\n"
    "        pipeline(*gmem_refs)\n"
    "      return wrapper\n"
    "    if kernel_fn is not None:\n"
    "      return decorator(kernel_fn)\n"
    "    return decorator\n\n"
    "class T(Base):\n")


def test_kernels_through_test_class_helpers():
    """JAX's mosaic_gpu_test.py and tpu_sparsecore_pallas_test.py launch their kernels
    through helpers: `self.pallas_call` building a pl.kernel around a Mosaic GPU pipeline whose
    body calls the user's kernel with `fn(*args, *scratch_refs)` (many tests: the kernel is one
    of many functions), `plgpu` a copy of the module under `if TYPE_CHECKING`, a forwarder that
    stores its result before returning it, and a helper returning `partial(pl.kernel, ...)`."""
    tests = ""
    expected = []
    line = TEST_HELPERS.count("\n") + 1
    for n in range(40):
        deco = ["@functools.partial(self.pallas_call, out_shape=1)",
                "@self.sc_kernel(out_type=1, mesh=None)", "@self.kernel(out_type=1)"][n % 3]
        tests += (f"  def test_{n}(self):\n    {deco}\n    def k(x_ref, o_ref):\n"
                  f"      o_ref[...] = x_ref + {n}\n")
        expected.append((line + 4 * n + 3, "REF007"))
    assert _both(TEST_HELPERS + tests) == expected


def test_output_rebound_in_a_nested_body_and_array_method_results():
    src = HEAD + (
        "def k(x_ref, o_ref):\n"
        "    @pl.when(pl.program_id(0) == 0)\n"
        "    def _():\n"
        "        o_ref = (x_ref[...] ** 2).mean(axis=1)\n"  # 10: REF019
        "    def helper(o_ref):\n"
        "        o_ref = x_ref[...].T\n"  # 12: its own parameter: not the output
        "pl.pallas_call(k, out_shape=S)(x)\n"
        "def k2(x_ref, o_ref):\n"
        "    o_ref = x_ref[...].sum()\n"  # 15: REF019
        "pl.pallas_call(k2, out_shape=S)(x)\n")
    assert [c for c in _both(src) if c[1] == "REF019"] == [(10, "REF019"), (15, "REF019")]


def test_a_module_reading_an_import_made_later_in_the_page():
    """The GPU reference page uses functools.partial long before its `import functools`."""
    src = ("import jax\nimport jax.numpy as jnp\nimport jax.experimental.pallas as pl\n"
           "@functools.partial(pl.pallas_call, out_shape=jax.ShapeDtypeStruct((8,), "
           "jnp.float32))\n"
           "def run_kernel(x_ref, y_ref):\n    y_ref[...] = x_ref + 1\n"
           "import functools\n")
    assert _both(src) == [(6, "REF007")]
    # A name bound twice is not guessed.
    assert _both(src + "functools = None\n") == []


@pytest.mark.parametrize("kernel,launch,expected", [
    # REF028: accumulated, never initialised (output or scratch)
    ("def k(x_ref, o_ref):\n    o_ref[...] += x_ref[...]\n",
     "pl.pallas_call(k, out_shape=S, grid=(4,))(x)\n", [(8, "REF028")]),
    ("def k(x_ref, o_ref, acc_ref):\n    acc_ref[...] += x_ref[...]\n"
     "    o_ref[...] = acc_ref[...]\n",
     "pl.pallas_call(k, out_shape=S, grid=(4,), scratch_shapes=[pltpu.VMEM((8,), "
     "jnp.float32)])(x)\n", [(8, "REF028")]),
    # initialised under pl.when, by a helper, aliased: silent
    ("def k(x_ref, o_ref):\n    @pl.when(pl.program_id(0) == 0)\n    def _():\n"
     "        o_ref[...] = jnp.zeros_like(o_ref)\n    o_ref[...] += x_ref[...]\n",
     "pl.pallas_call(k, out_shape=S, grid=(4,))(x)\n", []),
    ("def k(x_ref, o_ref):\n    pltpu.sync_copy(x_ref, o_ref)\n    o_ref[...] += x_ref[...]\n",
     "pl.pallas_call(k, out_shape=S)(x)\n", []),
    ("def k(x_ref, o_ref):\n    o_ref[...] += x_ref[...]\n",
     "pl.pallas_call(k, out_shape=S, input_output_aliases={0: 0})(x)\n", []),
    # a pytree operand: the counts do not add up, nothing is said
    ("def k(a_ref, b_ref, o_ref):\n    o_ref[...] += a_ref[...]\n",
     "pl.pallas_call(k, out_shape=S)(x)\n", []),
    # REF029: an input written, no output written
    ("def k(x_ref, o_ref):\n    x_ref[...] = x_ref[...] * 2\n",
     "pl.pallas_call(k, out_shape=S)(x)\n", [(8, "REF029")]),
    ("def k(x_ref, o_ref):\n    x_ref[...] = x_ref[...] * 2\n",
     "pl.pallas_call(k, out_shape=S, input_output_aliases={0: 0})(x)\n", []),
    ("def k(x_ref, o_ref):\n    x_ref[...] += 1\n    o_ref[...] = x_ref[...]\n",
     "pl.pallas_call(k, out_shape=S)(x)\n", []),
    ("def k(x_ref, o_ref):\n    x_ref[...] = x_ref[...] * 2\n    helper(o_ref)\n",
     "pl.pallas_call(k, out_shape=S)(x)\n", []),
    # out_shape a tuple of two structs: both outputs counted
    ("def k(x_ref, o_ref, p_ref):\n    x_ref[...] = x_ref[...] * 2\n",
     "pl.pallas_call(k, out_shape=(S, S))(x)\n", [(8, "REF029")]),
])
def test_silent_kernel_bugs(kernel, launch, expected):
    assert _both(HEAD + kernel + launch) == expected


def test_runtime_reports_accumulation_without_init_and_a_written_input():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from reflint.runtime import AccumulatedWithoutInit, InputRefWritten, checks

    s = jax.ShapeDtypeStruct((8, 128), jnp.float32)
    x = jnp.ones((8, 128), jnp.float32)

    def acc(x_ref, o_ref):
        o_ref[...] += x_ref[...]

    def acc_init(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[...]

    def write_input(x_ref, o_ref):
        x_ref[...] = x_ref[...] * 2.0

    with checks():
        with pytest.raises(AccumulatedWithoutInit, match="REF028"):
            pl.pallas_call(acc, out_shape=s, grid=(2,), interpret=True)(x)
        with pytest.raises(InputRefWritten, match="REF029"):
            pl.pallas_call(write_input, out_shape=s, interpret=True)(x)
        out = pl.pallas_call(acc_init, out_shape=s, grid=(2,), interpret=True)(x)
        assert float(out[0, 0]) == 2.0
        pl.pallas_call(acc, out_shape=s, input_output_aliases={0: 0}, interpret=True)(x)
        pl.pallas_call(write_input, out_shape=s, input_output_aliases={0: 0},
                       interpret=True)(x)


def test_pytrees_of_refs_in_kernels_are_not_refs():
    """False positives found on vllm-project/tpu-inference: a with_scoped keyword giving a tuple
    of scratch buffers, a scratch tuple concatenated with another tuple, and a kernel parameter
    named as a sequence of refs indexed by a loop variable in a helper it is handed to."""
    src = HEAD + (
        "def kernel(x_ref, o_ref, scratches, page_refs):\n"
        "    @pl.with_scoped(s_ref=pltpu.VMEM((8,), jnp.float32),\n"
        "                    bufs=(pltpu.VMEM((8,), jnp.float32), pltpu.VMEM((8,), jnp.float32)))\n"
        "    def _run(s_ref, bufs):\n"
        "        every = (s_ref,) + bufs + scratches\n"
        "        m_ref, l_ref = bufs\n"
        "        o_ref[...] = m_ref + 1\n"  # 13: a ref of the tuple
        "    _run()\n"
        "    helper((page_refs, x_ref))\n"
        "def helper(shared):\n"
        "    page_refs, x_ref = shared\n"
        "    for group in range(2):\n"
        "        page_refs[group][0] = x_ref[0]\n"
        "pl.pallas_call(kernel, out_shape=S, scratch_shapes=[(pltpu.VMEM((8,), jnp.float32),),"
        " pltpu.VMEM((8,), jnp.float32)])(x)\n")
    assert _both(src) == [(13, "REF007")]


INDEX_MAPS = """\
import functools
import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def imap(i, j, lengths_ref, offsets_ref):
    return (i + lengths_ref, j)


def kernel(lengths_ref, offsets_ref, x_ref, o_ref):
    o_ref[...] = x_ref[...]


specs = [
    pl.BlockSpec((8, 8), imap),
    pl.BlockSpec(index_map=lambda i, j, *refs: (i * refs[0], j), block_shape=(8, 8)),
    pl.BlockSpec((8, 8), functools.partial(lambda n, i, j, l_ref, o_ref: (i + n, o_ref), 2)),
    pl.BlockSpec((8, 8), lambda i, j, *_: (i * j, j)),
    pl.BlockSpec((8, 8), lambda i, j, l_ref, o_ref: (l_ref[i], j)),
]
spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=2, grid=(2, 2), in_specs=specs)
pl.pallas_call(kernel, grid_spec=spec, out_shape=None)
"""


def test_index_map_refs():
    """A BlockSpec's index map: the parameters spelled as refs are the scalar-prefetch refs
    (`*refs` a tuple of them); grid indices, `*_` and a partial's bound argument are not;
    `o_ref` returned as an index is not math. The finding has no fix (which element is the
    index is not known) and says what the ref is."""
    diags = lint_source(INDEX_MAPS, "k.py", ALL).diagnostics
    assert sorted((d.line, d.code) for d in diags) == [(9, "REF007"), (18, "REF007")]
    first = next(d for d in diags if d.line == 9)
    assert first.fix is None
    assert "lengths_ref is a scalar-prefetch ref of imap, a BlockSpec index map" in first.message
    assert first.message.endswith("read an element of it, e.g. lengths_ref[0]")
