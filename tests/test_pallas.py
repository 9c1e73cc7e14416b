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
