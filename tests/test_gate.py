"""The ast stage of the pre-filter (reflint.gate): what it rules out, and that it is sound.

Soundness is checked three ways: the rules' findings with the pre-filter on and off on every
fixture and example (tests/test_performance.py), the gate's verdict against the analysis' own
facts on fixtures and on installed JAX sources (below), and on generated programs (below)."""

import os
import textwrap

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reflint import engine, gate
from reflint.analysis import ModuleAnalysis
from reflint.engine import gate_allows, lint_source
from reflint.rules import array_item_assignment as aia
from reflint.rules import discarded_functional_update as dfu
from reflint.rules import traced_state_leak as tsl
from reflint.settings import Settings
from reflint.values import ArrayVal, RefVal

from conftest import fixture_files, installed_sources

ALL = Settings()
VERSION = ALL.target_jax_version


def verdict(src):
    return gate.verdict(textwrap.dedent(src), ALL.select, VERSION, complete=True)


# --------------------------------------------------------------------------------------------
# What each question answers
# --------------------------------------------------------------------------------------------

REFS = [
    "import jax\nx_ref = jax.new_ref(0.)\n",
    "import jax as J\nx_ref = J.new_ref(0.)\n",
    "from jax import new_ref as mk\nx = mk(0.)\n",
    "from jax._src import core\nx = core.mutable_array(0.)\n",
    "import jax\ndef f(x: jax.Ref): ...\n",
    "import jax\ndef f(x: 'jax.Ref'): ...\n",
    "import jax\nR = jax.Ref\ndef f(x: R): ...\n",  # an alias that becomes an annotation
    "from jax.experimental import pallas as pl\nout = pl.pallas_call(kernel, out_shape=s)(x)\n",
    "import jax\nnp_ = jax\n",  # a module object as a value may reach any API under it
    "import jax.experimental as je\nm = je\nx = m.mutable_array(1.0)\n",
    "from jax import *\n",
    # Read before the local binding (flow order): the analysis sees the module's import.
    "import jax\ndef f(x):\n    r = jax.new_ref(x)\n    jax = None\n    return r\n",
]
NO_REFS = [
    "import jax\nimport jax.numpy as jnp\ny = jnp.sin(jnp.ones(3))\n",
    "def new_ref(x):\n    return [x]\nr = new_ref(1)\n",  # the user's own new_ref
    "import jax\ndef f(x):\n    return isinstance(x, jax.Ref)\n",  # a type test
    "from jax._src.state.types import AbstractRef\nr = AbstractRef(aval)\n",  # not a ref
    "import jax\n# jax.new_ref(0.) in a comment\ns = 'jax.new_ref'\n",
    "import jax\nok = hasattr(jax, 'new_ref')\n",
    "import jax\ndef f(core):\n    core = 1\n    return core\n",
    "import jax.numpy as jnp\nxp = jnp\ny = xp.sin(1.0)\n",  # no ref under jax.numpy
    # A module object given to a call or used as an index: no binding holds it.
    "from jax._src import core\ndef f(hist, g):\n    g(core)\n    return hist[core]\n",
]


LEAKS = [
    # A write before the local binding reaches the module's container.
    "import jax\nd = {}\n@jax.jit\ndef f(x):\n    d[0] = x\n    d = {}\n    return x\n",
    """\
    import jax
    cache = {}
    @jax.jit
    def f(x):
        cache["k"] = x
        return x
    """,
    """\
    import jax
    history = []
    def step(x):
        history.append(x)
        return x
    y = jax.lax.scan(lambda c, x: (step(c), x), 0., xs)
    """,
    """\
    from functools import partial
    import jax
    class Counter:
        @partial(jax.jit, static_argnums=0)
        def count(self):
            self.n += 1
    """,
    """\
    import jax
    class State:
        pass
    state = State()
    def f(x):
        state.last = x
        return x
    g = jax.vmap(f)
    """,
    # A function handed to a local helper that jits it (call-site binding of `fn`).
    """\
    import jax
    cache = {}
    def f(x):
        cache[0] = x
        return x
    def compile_it(fn):
        return jax.jit(fn)
    g = compile_it(f)
    """,
    # A decorator that is a local alias of jit.
    "import jax\njit = jax.jit\nlog = []\n@jit\ndef f(x):\n    log.append(x)\n    return x\n",
]
NO_LEAKS = [
    # The only transform is called on an imported function (configuration as literals): no
    # function of this module is traced.
    """\
    import jax
    from jax._src import core
    log = []
    def f(x):
        log.append(x)
        return x
    g = jax.jit(core.evaluate_shape, static_argnames=("shape", "dim_vars"))
    f(1)
    """,
    # No transform that traces once per call: the first leak under grad.
    LEAKS[0].replace("@jax.jit", "@jax.grad"),
    # A local container: not state outside the trace.
    """\
    import jax
    @jax.jit
    def f(x):
        out = {}
        out["k"] = x
        return out
    """,
    # A method never traced itself.
    """\
    import jax
    class Model:
        def __init__(self):
            self.n = 0
    f = jax.jit(lambda x: x + 1)
    """,
    # An attribute of an object an imported API made.
    """\
    import threading
    import jax
    class C:
        pass
    _env = threading.local()
    @jax.jit
    def f(x):
        _env.last = 1
        return x
    """,
    # Functions only handed to an imported function the analysis does not know (a lowering
    # registry, a tree reduction), or decorated by one: nothing traces them. (`jax.tree.map`
    # is in the registry: the analysis calls its function, so the gate follows it.)
    """\
    import functools
    import jax
    from jax._src.interpreters import mlir
    env = {}
    def rule(ctx, x):
        env[0] = x
        return x
    mlir.register_lowering(prim, rule)
    def flat(tree):
        out = []
        jax.tree.reduce(lambda a, x: out.extend([x]), tree)
        return sorted(out, key=lambda v: env.setdefault(v, v))
    @functools.wraps(rule)
    def wrapped(x):
        env[1] = x
    f = jax.jit(g)
    """,
    # The container is a parameter of the enclosing function (a set elsewhere).
    """\
    import jax
    def other():
        seen = set()
        return seen
    def outer(seen):
        @jax.jit
        def f(x):
            seen.add(x)
            return x
        return f
    """,
]


ARRAY_ITEMS = [
    # Before the local binding, `d` is the module's Array (found by the generated programs).
    "import jax.numpy as jnp\nd = jnp.zeros(3)\ndef h(x):\n    d[0] = x\n    d = {}\n",
    "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.\n",
    "from jax import numpy as np\nx = np.zeros(3) + 1\nx[0] += 1.\n",
    "import jax.numpy as jnp\nxs = [jnp.zeros(3)]\nxs[0][1] = 2.\n",
    # A module object holding array functions, as a value.
    "import jax.numpy as jnp\nxp = jnp\ny = xp.zeros(3)\ny[0] = 1.\n",
    """\
    import jax.numpy as jnp
    class C:
        def __init__(self):
            self.xp = jnp
        def f(self):
            y = self.xp.zeros(3)
            y[0] = 1.
    """,
    # An array function held in a variable.
    "import jax.numpy as jnp\nop = jnp.add\ny = op(a, b)\ny[0] = 1\n",
    # A traced function's parameter.
    """\
    import jax
    import jax.numpy as jnp
    def f(x):
        x[0] = 1.
        return x
    jax.jit(f)(jnp.ones(3))
    """,
    # An attribute holding an Array.
    """\
    import jax.numpy as jnp
    class S:
        def __init__(self):
            self.buf = jnp.zeros(3)
        def put(self):
            self.buf[0] = 1.
    """,
    # A traced function handed to a local helper that calls it with an Array.
    """\
    import jax
    import jax.numpy as jnp
    def put(a):
        a[0] = 1.
    def apply(fn):
        fn(jnp.zeros(3))
    apply(jax.jit(put))
    """,
    # A local decorator calls the function it decorates.
    """\
    import jax.numpy as jnp
    def deco(fn):
        fn(jnp.zeros(3))
        return fn
    @deco
    def put(a):
        a[0] = 1.
    """,
    # A name declared global and bound here: the analysis reads the binding in flow order.
    """\
    import jax.numpy as jnp
    def h():
        global d
        d = jnp.zeros(3)
        d[0] = 1.
    """,
    # A parameter annotated with the Array type, and a value computed from it.
    """\
    import jax
    def h(x: jax.Array, y: "jax.Array"):
        d = x + 1
        d[0] = 1.
    """,
]
NO_ARRAY_ITEMS = [
    # A module object given to a function: the analysis carries it into no parameter.
    "import jax.numpy as jnp\ndef f(x, xp):\n    y = xp.zeros(3)\n    y[0] = 1.\nf(1, jnp)\n",
    # A module object as a value reaches only what is under it: jax._src.util makes no Array.
    "from jax._src import util\nhelpers = util\nd = {}\nd['k'] = 1\n",
    # The analysis carries no Array into a parameter of a function it calls or out of a
    # function's `return` (values.is_interesting); only a traced function's parameter that
    # every call binds to an Array is one (REF013's _traced_array_param). Neither is here.
    """\
    import jax.numpy as jnp
    def make():
        return jnp.ones(3)
    def put(a):
        a[0] = 1.
    put(make())
    y = make()
    y[0] = 1.
    """,
    """\
    import jax.numpy as jnp
    def put(a):
        a[0] = 1.
    def apply(fn, x):
        fn(x)
    apply(put, jnp.zeros(3))
    """,
    "import jax.numpy as jnp\nd = {}\nd['k'] = jnp.zeros(3)\n",
    "import jax.numpy as jnp\nshape = list(x.shape)\nshape[0] = 1\ny = jnp.zeros(shape)\n",
    # The index is an Array, the base is not.
    "import jax.numpy as jnp\nout = [0] * 3\nout[jnp.argmax(v)] = 1\n",
    # A dict of rules looked up and called: not an Array.
    """\
    import jax.numpy as jnp
    rules = {}
    def apply(p, x):
        res = rules[p](x)
        res[0] = 1
    """,
    # A builtin's result.
    "import jax.numpy as jnp\nsizes = sorted(jnp.arange(3).tolist())\nsizes[0] = 1\n",
    # Functions the analysis cannot reach: given only to an imported function it does not
    # know and to a builtin, or bound to nothing by their decorator (not a transform).
    """\
    import functools
    import jax.numpy as jnp
    from somewhere import register
    def put(a):
        a[0] = 1.
    register(put)
    list(map(put, [jnp.zeros(3)]))
    @functools.lru_cache
    def put2(a):
        a[0] = 1.
    put2(jnp.zeros(3))
    """,
]


DISCARDED = [
    "import jax.numpy as jnp\nx = jnp.zeros(3)\nx.at[0].set(1.)\n",
    "import jax.numpy as jnp\ndef f(x):\n    x.at[0].add(1.)\n",
]
NO_DISCARDED = [
    "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.)\n",
    "import jax.numpy as jnp\nx = jnp.zeros(3)\nprint(x.at[0].get())\n",
]
LEAKS = LEAKS + [
    # A transform imported under another name, and one made by a factory call.
    "from jax import jit as J\nlog = []\ndef f(x):\n    log.append(x)\n    return x\nJ(f)(1.0)\n",
    "import jax\nlog = []\n@jax.jit(static_argnums=0)\ndef f(n, x):\n    log.append(x)\n",
    "import jax\nclass M:\n    @jax.jit\n    def f(self, x):\n        self.log.append(x)\n",
]

CASES = [(q, src, expected)
         for q, yes, no in (("refs", REFS, NO_REFS), ("leak", LEAKS, NO_LEAKS),
                            ("array_item", ARRAY_ITEMS, NO_ARRAY_ITEMS),
                            ("discarded", DISCARDED, NO_DISCARDED))
         for expected, sources in ((True, yes), (False, no))
         for src in sources]


@pytest.mark.parametrize("question,src,expected", CASES)
def test_gate_answers(question, src, expected):
    assert getattr(verdict(src), question) is expected, src


def test_unavailable_names_follow_the_target_version():
    src = "import jax\nr = jax.array_ref(0.)\n"
    assert gate.verdict(src, ALL.select, (0, 10, 2)).unavailable
    assert not gate.verdict(src, ALL.select, (0, 7, 1)).unavailable
    assert not gate.verdict(src, frozenset({"REF013"}), (0, 10, 2)).unavailable


def test_unparsable_and_newer_syntax_go_to_libcst():
    assert gate.verdict("def f(:\n", ALL.select, VERSION) is None
    assert gate_allows("import jax\nx = jax.new_ref(\n", ALL)


def test_disabled_rules_are_not_asked():
    src = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.\n"
    assert gate_allows(src, ALL)
    assert not gate_allows(src, Settings(select=frozenset({"REF001", "REF012"})))


# --------------------------------------------------------------------------------------------
# Soundness against the analysis' own facts
# --------------------------------------------------------------------------------------------


def analysis_facts(source, path):
    """What the analysis found that rules turn into findings: any ref; REF012's raw material
    (a mutation in a function traced once per call, of a container, instance or ``self`` the
    rule considers); REF013's (an item assignment whose base it takes for an Array)."""
    module = engine.parse_module(source)
    a = ModuleAnalysis(module, path, ALL, source)
    refs = bool(a.creations) or bool(a._pallas_kernels) or \
        any(isinstance(v, RefVal) for v in a._values.values())
    leak = False
    for w in a.item_writes:
        f, t = w.func, w.target
        if tsl._leak_kind(a, f) is not None and isinstance(t.value, cst.Name) and \
                tsl._outer_container_scope(a, t.value.value, f) is not None:
            leak = True
    for aw in a.attribute_writes:
        stmt, attr, f = aw.stmt, aw.attr, aw.func
        if tsl._leak_kind(a, f) is None:
            continue
        for node in tsl._attribute_targets(stmt, attr):
            if not isinstance(node.value, cst.Name):
                continue
            scope = a.free_name_scope(node.value.value, f)
            if tsl._is_self_of_traced_method(a, f, node.value) or (
                    scope is not None and
                    tsl._plain_local_instance(a, scope.summary.get(node.value.value), attr)):
                leak = True
    for mc in a.mutating_calls:
        call, method, f = mc.call, mc.method, mc.func
        if tsl._leak_kind(a, f) is not None and method in tsl.STORE_METHODS and \
                isinstance(call.func.value, cst.Name) and \
                tsl._outer_container_scope(a, call.func.value.value, f) is not None:
            leak = True
        recv = call.func.value
        if tsl._leak_kind(a, f) is not None and method in tsl.STORE_METHODS and \
                isinstance(recv, cst.Attribute) and isinstance(recv.value, cst.Name) and \
                tsl._is_self_of_traced_method(a, f, recv.value):
            leak = True  # `self.history.append(x)` in a traced method
    array_item = any(aia._array_reason(a, w.base, w.target.value, w.func) is not None
                     for w in a.item_writes)
    discarded = any(isinstance(a.value_of(call.func.value.value.value), ArrayVal)
                    for _, _, call, _ in dfu._discarded_updates(a))
    return refs, leak, array_item, discarded


def _check_covers(source, path):
    v = gate.verdict(source, ALL.select, VERSION, complete=True)
    if v is None or v.refs:
        return  # everything runs
    refs, leak, array_item, discarded = analysis_facts(source, path)
    assert not refs, (path, "refs")
    assert v.leak or not leak, (path, "REF012")
    assert v.array_item or not array_item, (path, "REF013")
    assert v.discarded or not discarded, (path, "REF023")


@pytest.mark.parametrize("path", fixture_files(), ids=os.path.basename)
def test_gate_covers_the_analysis_on_fixtures(path):
    with open(path, encoding="utf-8") as fh:
        _check_covers(fh.read(), path)


QUICK_YES = [
    "import jax\nx_ref = jax.new_ref(0.)\n",
    "import jax as J\nx_ref = J.new_ref (0.)\n",
    "from jax import new_ref\nx_ref = new_ref(0.)\n",
    "from jax.experimental import pallas as pl\nf = pl.pallas_call(k, out_shape=s)\n",
    "try:\n    from jax.experimental import pallas as pl\nexcept ImportError:\n    pl = None\n"
    "def f(x):\n    return pl.pallas_call(k)(x)\n",
    "import jax.experimental.pallas as pl\n@pl.core_map(mesh)\ndef body():\n    pass\n",
    "from flax import nnx\nnnx.use_refs(True)\n",
]
QUICK_NO = [
    "import jax\n",  # no source spelled
    "from jax import new_ref as new_ref\n",  # a re-export: the import spells it, not a call
    "import jax\nf = jax.new_ref\n",  # not called: the walk decides
    "def f(jax):\n    return jax.new_ref(0.)\n",  # no import of jax
    "import jax\ndef f(r: jax.Ref):\n    pass\n",  # the Ref type: only where it annotates
    "import jax\nx = my.jax.new_ref(0.)\n",  # not the import's name
    "import jax\nx = jax.not_new_ref(0.)\n",
    "from . import jax\nx = jax.new_ref(0.)\n",  # a relative import: the walk resolves it
]


@pytest.mark.parametrize("src", QUICK_YES)
def test_a_ref_source_called_through_an_import_is_a_yes_from_the_text(src):
    import ast

    assert gate._spells_ref_source(src, ast.parse(src))
    v = gate.verdict(src, ALL.select, VERSION)
    assert v.refs is True and v.leak is None and v.array_item is None
    assert verdict(src).refs  # the walk agrees


@pytest.mark.parametrize("src", QUICK_NO)
def test_other_spellings_are_left_to_the_walk(src, monkeypatch):
    import ast

    assert not gate._spells_ref_source(src, ast.parse(src))
    walked = []
    original = gate._Walker.body
    monkeypatch.setattr(gate._Walker, "body", lambda self, b: walked.append(1) or
                        original(self, b))
    gate.verdict(src, ALL.select, VERSION)
    assert walked


def test_a_call_spelled_in_a_comment_is_a_yes_that_costs_an_analysis_not_a_finding():
    import ast

    src = "import jax\nx = jnp.zeros(3)  # not jax.new_ref(0.)\nx[0] = 1.\n"
    assert gate._spells_ref_source(src, ast.parse(src))  # the text search reads comments
    assert not verdict(src).refs  # the walk does not
    on = [d.code for d in lint_source(src, "f.py", ALL).diagnostics]
    off = [d.code for d in lint_source(src, "f.py", ALL, use_prefilter=False).diagnostics]
    assert on == off == []


def _check_quick_covers(source, path):
    """Where the text says yes, the answers the rules still read (REF015's, REF023's) are
    maybes wherever the walk's are."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    if not gate._spells_ref_source(source, tree):
        return
    quick = gate.verdict(source, ALL.select, VERSION, tree=tree)
    walked = gate.verdict(source, ALL.select, VERSION, complete=True, tree=tree)
    assert quick.refs
    assert quick.unavailable or not walked.unavailable, (path, "REF015")
    assert quick.discarded or not walked.discarded, (path, "REF023")


@pytest.mark.parametrize("path", fixture_files(), ids=os.path.basename)
def test_the_text_answers_cover_the_walk_on_fixtures(path):
    with open(path, encoding="utf-8") as fh:
        _check_quick_covers(fh.read(), path)


@pytest.mark.slow
def test_the_text_answers_cover_the_walk_on_installed_sources():
    checked = 0
    for path, source in installed_sources():
        _check_quick_covers(source, path)
        checked += 1
    assert checked > 500


def _installed_sample():
    """Every fifth candidate file of the installed jax and flax (sorted; ~100 files)."""
    return [(p, source) for p, source in installed_sources()
            if engine.is_candidate(source, ALL)][::5]


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_gate_covers_the_analysis_on_installed_jax():
    sample = _installed_sample()
    assert len(sample) >= 50
    ruled_out = 0
    for path, source in sample:
        _check_covers(source, path)
        ruled_out += not gate_allows(source, ALL)
    assert ruled_out >= len(sample) // 2  # the gate is worth its cost on real code


# --------------------------------------------------------------------------------------------
# Generated programs: findings with the gate on and off
# --------------------------------------------------------------------------------------------

BASES = ["x", "d", "cache", "state", "out", "buf"]
VALUES = ["jnp.zeros(3)", "{}", "[]", "dict()", "Box()", "f(x)", "x + 1", "x", "lambda v: v",
          "jnp.add", "list(x)", "x[0]", "g", "op(x, x)", "g(x)", "types.SimpleNamespace(a=1)",
          "SimpleNamespace()", "{'k': jnp.zeros(3)}[x]", "[jnp.zeros(3) for _ in x]"]
BODY = ["{b}[0] = {v}", "{b}[0] += 1", "{b}.append({v})", "{b}.attr = {v}", "self.n = {v}",
        "self.n += 1", "{b} = {v}", "return {b}", "global {b}", "y = {b}({v})",
        "for k in {v}:\n    {b}[k] = 1"]
WRAPS = ["@jax.jit\n", "@jax.vmap\n", "@jax.grad\n", "", "@partial(jax.jit, static_argnums=0)\n",
         "@functools.wraps(g)\n", "@jax.custom_vjp\n", "@staticmethod\n", "@functools.cache\n",
         "@classmethod\n", "@{'j': jax.jit, 'v': jax.vmap}[KEY]\n"]
CALLS = ["jax.jit(h)({v})", "h({v})", "jax.lax.scan(h, {v}, xs)", "jax.vmap(h)", "m = h", "",
         "Box().h({v})", "jax.jit(Box().h)({v})", "jax.tree.map(h, {v})", "sorted({v}, key=h)",
         "jax.lax.scan(lambda c, v: h(v), {v}, xs)", "jax.tree.map(lambda v: h(v), {v})",
         "compile_it(h)", "list(map(h, [{v}]))", "register(h)", "table[0] = h", "Box.h({v})",
         "jax.jit(Box.h)({v})", "{{'a': h, 'b': print}}[KEY]({v})",
         "[jax.jit(q) for q in (h, g)][0]({v})", "fs = {{k: jax.vmap(h) for k in 'ab'}}"]


@st.composite
def programs(draw):
    """A module with a few globals, a (maybe traced, maybe method) function that mutates
    things, and a call: a third of them have REF012 or REF013 findings."""
    def pick(options):
        return draw(st.sampled_from(options))

    top = [f"{pick(BASES)} = {pick(VALUES)}" for _ in range(draw(st.integers(0, 3)))]
    top += [f"{pick(BASES)}[0] = 1" for _ in range(draw(st.integers(0, 1)))]
    body = [pick(BODY).format(b=pick(BASES), v=pick(VALUES))
            for _ in range(draw(st.integers(1, 4)))]
    method = draw(st.booleans())
    x = pick(["x", "x: jax.Array", "x: 'jnp.ndarray'"])
    func = pick(WRAPS) + f"def h({'self, ' if method else ''}{x}):\n" + \
        textwrap.indent("\n".join(body), "    ")
    if method:
        func = "class Box:\n" + textwrap.indent(func, "    ")
    else:
        func = "class Box:\n    pass\n\n" + func
    call = pick(CALLS).format(v=pick(VALUES))
    return ("import functools\nimport types\nfrom functools import partial\n"
            "from types import SimpleNamespace\nimport jax\nimport jax.numpy as jnp\n"
            "KEY = __name__\n"
            "from jax._src.interpreters.mlir import register_lowering as register\n"
            "op = jnp.add\ng = lambda v: jnp.sin(v)\ncompile_it = lambda fn: jax.jit(fn)\n"
            "table = {}\n" +
            "\n".join(top) + "\n\n" + func +
            "\n\n" + call + "\n")


@settings(max_examples=int(os.environ.get("REFLINT_EXAMPLES", "1000")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_generated_programs_same_findings_with_gate_on_and_off(source):
    try:
        compile(source, "gen.py", "exec")
    except SyntaxError:
        return
    for s in (ALL, Settings(select=frozenset({"REF012"})), Settings(select=frozenset({"REF013"}))):
        on = lint_source(source, "gen.py", s).diagnostics
        off = lint_source(source, "gen.py", s, use_prefilter=False).diagnostics
        assert on == off, (on, off)


def test_child_nodes_are_libcst_children():
    """reflint.analysis.child_nodes (fast field reads) gives exactly libcst's ``children``
    less the layout nodes (whitespace, comments, parentheses, punctuation), on the tree
    converted from libcst's (``cstbridge``: each node knows libcst's)."""
    import libcst

    from reflint.analysis import child_nodes
    from reflint.analysis.syntax import LAYOUT

    libcst_layout = tuple(getattr(libcst, t.__name__) for t in LAYOUT)
    checked = layout = 0
    for path in fixture_files()[::3]:
        with open(path, encoding="utf-8") as fh:
            module = engine.parse_module(fh.read())
        of = module._cst_of
        stack = [module]
        while stack:
            node = stack.pop()
            theirs = of[id(node)].children
            expected = [c for c in theirs if not isinstance(c, libcst_layout)]
            layout += len(theirs) - len(expected)
            got = child_nodes(node)
            assert sorted(id(of[id(c)]) for c in got) == sorted(map(id, expected)), type(node)
            stack.extend(got)
            checked += 1
    assert layout > 10_000  # the layout is there, and skipped
    assert checked > 10_000


def test_a_failing_gate_means_analyse(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("bug")

    # The engine reads the gate through a lazy module (reflint._lazy), which copies the
    # gate's names when first read: patch that copy (loaded first), not only the module, or
    # the copy would keep `boom` for every later test in this process if it were made now.
    engine.gate.verdict  # noqa: B018 - loads the lazy module's names
    monkeypatch.setattr(gate, "verdict", boom)
    monkeypatch.setattr(engine.gate, "verdict", boom)
    src = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.\n"
    assert gate_allows(src, ALL)
    assert [d.code for d in lint_source(src, "f.py", ALL).diagnostics] == ["REF013"]


# --------------------------------------------------------------------------------------------
# What the verdict spares the rules
# --------------------------------------------------------------------------------------------


def test_an_answer_not_asked_leaves_its_rule_running():
    """The gate stops at the first yes: the answers after it are unknown (None), and their
    rules still run on the analysed file."""
    src = textwrap.dedent("""\
        import jax
        import jax.numpy as jnp
        log = []
        @jax.jit
        def f(x):
            log.append(x)
            return x
        y = jnp.zeros(3)
        y[0] = 1.
        """)
    v = gate.verdict(src, ALL.select, VERSION)
    assert v.leak is True and v.array_item is None
    codes = sorted(d.code for d in lint_source(src, "f.py", ALL).diagnostics)
    assert codes == ["REF012", "REF013"]


def test_a_file_without_refs_runs_only_the_rules_the_gate_allows(monkeypatch):
    from reflint.rule import all_rules
    from reflint.rules import unavailable_jax_api

    ran = []
    for rule in all_rules():
        original = type(rule).check

        def check(self, analysis, original=original):
            ran.append(self.code)
            return original(self, analysis)

        monkeypatch.setattr(type(rule), "check", check)
    walked = []
    names = unavailable_jax_api._names
    monkeypatch.setattr(unavailable_jax_api, "_names",
                        lambda *a: walked.append(1) or names(*a))
    # `array_ref` is in the text (a comment), so only the gate can tell REF015 has nothing.
    src = "import jax.numpy as jnp  # not jax.array_ref\nx = jnp.zeros(3)\nx[0] = 1.\n"
    assert [d.code for d in lint_source(src, "f.py", ALL).diagnostics] == ["REF013"]
    assert set(ran) == {"REF013"}, ran  # on the fast tree, then on libcst's (a finding)
    ran.clear()
    # With a ref, every rule runs but REF023, whose answer is syntax (no expression
    # statement drops an `.at[...]` update); REF015's walk still waits for a name the gate
    # saw (a ref the walk finds: a parameter annotated `jax.Ref`).
    src = "import jax\ndef f(r: jax.Ref):  # array_ref\n    r[0] = 1.\n"
    lint_source(src, "f.py", ALL)
    assert set(ran) == {r.code for r in all_rules()} - {"REF023"} and not walked
    ran.clear()
    # A ref source called through an import: the gate answers from the text, without its
    # walk (_spells_ref_source); REF015 walks if the text spells one of its names, if only in
    # a comment, and not otherwise.
    src = "import jax\nr = jax.new_ref(0.)  # array_ref\nr[0] = 1.\n"
    lint_source(src, "f.py", ALL)
    assert set(ran) == {r.code for r in all_rules()} - {"REF023"} and walked
    ran.clear()
    walked.clear()
    lint_source(src.replace("array_ref", "a ref"), "f.py", ALL)
    assert set(ran) == {r.code for r in all_rules()} - {"REF023"} and not walked
    ran.clear()
    lint_source(src + "x = r[...]\nx.at[0].set(2.)\n", "f.py", ALL)
    assert set(ran) == {r.code for r in all_rules()}
    src = "import jax\nr = jax.array_ref(0.)\n"
    assert [d.code for d in lint_source(src, "f.py", ALL).diagnostics] == ["REF015"]
    assert walked
