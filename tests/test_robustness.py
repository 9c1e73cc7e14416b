"""Generated programs: the analysis never crashes, positions are valid, fixes are sound."""

import textwrap

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reflint.engine import fix_source, lint_source
from reflint.settings import Settings

NAMES = ["x_ref", "y_ref", "a", "b", "self.buf"]
EXPRS = [
    "jax.new_ref(jnp.zeros(3))", "jnp.ones(3)", "{n}[...]", "{n} + 1", "jnp.sin({n})",
    "({n}, {m})", "[{n}]", "{{'k': {n}}}", "{n}['k']", "{n}[0]", "-{n}", "{n} == 0",
    "{n}.sum()", "{n}.shape", "jax.freeze({n})", "f({n}, {m})", "g({n})",
    "lax.scan(body, {n}, {m})", "lax.cond(True, branch, branch, {n})", "jax.vmap(body)({n}, {m})",
    "jax.new_ref({n})", "jax.lax.stop_gradient({n})", "float({n})", "lambda: {n}",
]
STMTS = [
    "{n} = {e}", "{n}[...] = {e}", "{n}[0] += {e}", "{n} += 1", "return {e}", "print({e})",
    "if {n}:\n    {n} = {e}\nelse:\n    {m} = {e}", "for {n} in {e}:\n    pass",
    "with ctx() as {n}:\n    {m} = {e}", "try:\n    {n} = {e}\nexcept Exception:\n    pass",
]
PRELUDE = textwrap.dedent("""\
    import functools
    import jax
    import jax.numpy as jnp
    from jax import lax

    @jax.jit
    def f(p, q):
        return p

    def g(r):
        r[...] = 1.0

    def body(c, x):
        return c, x

    def branch(r):
        return r
    """)


def _stmt(draw):
    s = draw(st.sampled_from(STMTS))
    n = draw(st.sampled_from(NAMES[:4]))
    m = draw(st.sampled_from(NAMES[:4]))
    e = draw(st.sampled_from(EXPRS)).format(n=draw(st.sampled_from(NAMES[:4])),
                                           m=draw(st.sampled_from(NAMES[:4])))
    return s.format(n=n, m=m, e=e)


@st.composite
def programs(draw):
    top = [_stmt(draw) for _ in range(draw(st.integers(1, 6)))]
    top = [s for s in top if not s.startswith("return")]
    inner = [_stmt(draw) for _ in range(draw(st.integers(1, 6)))]
    deco = draw(st.sampled_from(["@jax.jit\n", "", "@functools.partial(jax.jit, static_argnums=1)\n",
                                 "@jax.checkpoint\n", "@jax.vmap\n"]))
    func = deco + "def h(x_ref, a):\n" + textwrap.indent("\n".join(inner) or "pass", "    ")
    call = draw(st.sampled_from(["h(x_ref, a)", "h(x_ref, x_ref)", "jax.jit(h)(a, x_ref)", ""]))
    return PRELUDE + "\n".join(top) + "\n\n" + func + "\n\n" + call + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs(source):
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return
    result = lint_source(source, "gen.py", Settings())
    n_lines = source.count("\n") + 1
    for d in result.diagnostics:
        assert 1 <= d.line <= d.end_line <= n_lines
        assert d.code != "REF900", d.message
    # Fix one pass at a time: each pass may only change lines of its own fixable findings.
    settings = Settings(unsafe_fixes=True)
    current = source
    for _ in range(8):
        fixable = {d.line for d in lint_source(current, "gen.py", settings).diagnostics
                   if d.fix is not None}
        outcome = fix_source(current, "gen.py", settings, max_passes=1)
        assert outcome.error is None, outcome.error
        cst.parse_module(outcome.source)  # a fix never writes code that does not parse
        before, after = current.split("\n"), outcome.source.split("\n")
        assert len(before) == len(after)
        for i, (a, b) in enumerate(zip(before, after), start=1):
            if a != b:
                assert i in fixable, (i, a, b)
        if outcome.fixed == 0:
            break
        current = outcome.source
