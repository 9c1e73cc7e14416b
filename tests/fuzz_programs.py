"""A generator of JAX-flavoured Python programs for fuzzing reflint (tests/test_fuzz.py and the
long campaign, bench/fuzz.py), and the properties every program must keep.

``program(rng)`` builds a random module from refs (``jax.new_ref``, reads, writes, freeze),
transforms (jit, vmap, grad, checkpoint, scan, cond, pallas_call), closures, classes, lambdas,
decorators, comprehensions, walrus, match, async functions, item assignments on arrays (REF013
and its fix) and deliberately odd but valid layout (semicolons, backslashes, comments inside
expressions, parentheses). The programs are valid Python by construction (checked with
``compile`` by the callers), and nonsense as JAX programs: only the linter's behaviour counts.
"""

from __future__ import annotations

import os
import random
import tempfile
import textwrap

NAMES = ["x_ref", "y_ref", "a", "b", "c", "acc", "self.buf", "o_ref"]
REFS = ["x_ref", "y_ref", "o_ref"]
PRELUDE = textwrap.dedent("""\
    import functools
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl

    x_ref = jax.new_ref(jnp.zeros(3))
    y_ref = jax.new_ref(jnp.ones(3))
    a = jnp.arange(4.0)
    b = jnp.zeros(3)
    c = 2.0
    acc = []
    """)

EXPRS = [
    "jax.new_ref(jnp.zeros(3))", "jnp.ones(3)", "{n}[...]", "{n} + 1", "jnp.sin({n})",
    "({n}, {m})", "[{n}, {m}]", "{{'k': {n}}}", "{n}[0]", "-{n}", "{n} == 0", "{n}.sum()",
    "{n}.shape", "jax.freeze({n})", "f({n}, {m})", "g({n})", "lax.scan(body, {n}, {m})",
    "lax.cond(True, branch, branch, {n})", "jax.vmap(body)({n}, {m})", "jax.new_ref({n})",
    "jax.lax.stop_gradient({n})", "float({n})", "(lambda q: q + {n})({m})",
    "[q * 2 for q in {n}]", "{{q: {n} for q in range(3)}}", "(q for q in ({n}, {m}))",
    "({n} if c else {m})", "(w := {n})", "jax.grad(loss)({n})", "jax.jit(h)({n}, {m})",
    "jax.checkpoint(body)({n}, {m})", "{n}  # trailing\n", "(\n    {n}  # inside\n    + 1)",
    "{n} \\\n    * 2", "'s' 't'", "f'{{{n}}}'", "{n}[1:3]", "{n}.at[0].set(1.0)",
    "jnp.where({n} > 0, {n}, {m})", "await_it({n})",
]
STMTS = [
    "{n} = {e}", "{r}[...] = {e}", "{r}[0] += {e}", "{n} += 1", "print({e})",
    "if {n}:\n    {n} = {e}\nelse:\n    {m} = {e}", "for {v} in {e}:\n    {m} = {v}",
    "with ctx() as {v}:\n    {m} = {e}", "try:\n    {n} = {e}\nexcept Exception:\n    pass",
    "arr = jnp.zeros(4)\narr[1:3] = {e}, 7.0", "arr = jnp.zeros(4)\narr[0] = {e}",
    "arr = jnp.ones(3)\narr[0] -= {e}", "acc.append({e})", "{n} = {e}; {m} = {e}",
    "while {n} is None:\n    break", "assert {e}, 'msg'", "del {v}" ,
    "match {n}:\n    case [p, *rest]:\n        {m} = p\n    case {{'k': p}}:\n        pass\n"
    "    case _:\n        pass",
    "{v} = [{e} for {w} in range(2) if {w}]", "jax.freeze({r})", "{r}[...] = {r}[...] + 1",
    "global_state['k'] = {e}",
]
DECORATORS = ["", "@jax.jit\n", "@functools.partial(jax.jit, static_argnums=1)\n",
              "@jax.checkpoint\n", "@jax.vmap\n", "@deco\n", "@jax.custom_vjp\n"]
CALLS = ["h(x_ref, a)", "h(x_ref, x_ref)", "jax.jit(h)(a, x_ref)", "jax.vmap(h)(a, b)",
         "pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((3,), jnp.float32))(a)",
         "lax.fori_loop(0, 3, lambda i, s: h(s, x_ref), a)", ""]
HELPERS = textwrap.dedent("""\
    global_state = {}


    def deco(fn):
        return fn


    @jax.jit
    def f(p, q):
        return p


    def g(r):
        r[...] = 1.0


    def body(s, x):
        return s, x


    def branch(r):
        return r


    def loss(w):
        return jnp.sum(w ** 2)


    def ctx():
        return open(__file__)


    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2
    """)


def _expr(rng: random.Random, depth: int = 0) -> str:
    e = rng.choice(EXPRS)
    n, m = rng.choice(NAMES), rng.choice(NAMES)
    if depth < 2 and rng.random() < 0.25:
        n = f"({_expr(rng, depth + 1)})".replace("\n", " ") if "\n" not in e else n
    return e.format(n=n, m=m)


def _stmt(rng: random.Random) -> str:
    s = rng.choice(STMTS)
    var = rng.choice(["t", "u", "w"])
    return s.format(n=rng.choice(NAMES[:6]), m=rng.choice(NAMES[:6]), r=rng.choice(REFS),
                    v=var, w=rng.choice(["i", "j"]), e=_expr(rng))


def _block(rng: random.Random, n: int) -> str:
    return "\n".join(_stmt(rng) for _ in range(n)) or "pass"


def _function(rng: random.Random, name: str) -> str:
    deco = rng.choice(DECORATORS)
    kind = rng.random()
    params = rng.choice(["x_ref, a", "x_ref, a=None", "*args", "x_ref, /, a, *, k=1",
                         "o_ref, a", "x_ref, a, **kw"])
    body = _block(rng, rng.randint(1, 5))
    if kind < 0.15:  # async
        body = body + "\nawait_it = await something()" if rng.random() < 0.5 else body
        return f"{deco}async def {name}({params}):\n" + textwrap.indent(body, "    ")
    if kind < 0.3:  # closure
        inner = _block(rng, rng.randint(1, 3))
        body = (f"def inner(q):\n" + textwrap.indent(inner + "\nreturn q", "    ") +
                f"\n{body}\nreturn inner({rng.choice(NAMES[:6])})")
        return f"{deco}def {name}({params}):\n" + textwrap.indent(body, "    ")
    ret = rng.choice(["", "\nreturn x_ref", "\nreturn a", "\nreturn x_ref[...]",
                      "\nyield a", "\nreturn lambda: x_ref"])
    return f"{deco}def {name}({params}):\n" + textwrap.indent(body + ret, "    ")


def _class(rng: random.Random) -> str:
    method = _function(rng, "step").replace("(x_ref", "(self, x_ref", 1)
    if "(self" not in method:
        method = method.replace("step(", "step(self, ", 1)
    return ("class Model:\n    def __init__(self):\n        self.buf = jax.new_ref(jnp.zeros(3))"
            "\n\n" + textwrap.indent(method, "    "))


def program(rng: random.Random) -> str:
    """One random module (valid Python when the parts are: callers check with compile)."""
    parts = [PRELUDE, HELPERS]
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.45:
            parts.append(_function(rng, "h"))
        elif r < 0.6:
            parts.append(_class(rng))
        else:
            parts.append(_block(rng, rng.randint(1, 4)))
    parts.append(rng.choice(CALLS))
    return "\n\n".join(parts) + "\n"


CELLS = [
    "x_ref = jax.new_ref(jnp.zeros({k}))\n",
    "@jax.jit\ndef step{i}(r):\n    x_ref[...] += r[...]\n    return jnp.sin(r)\n",
    "def step{i}(r):\n    return r[...] + x_ref[...]\n",
    "y{i} = step{i}(x_ref)\n",
    "g{i} = jax.jit(step{i})\ny{i} = g{i}(x_ref)\n",
    "arr = jnp.zeros(4)\narr[0] = {k}\n",
    "arr = jnp.ones(3)\nb{i} = arr\narr[1] += {k}\n",
    "for i in range({k}):\n    arr = jnp.zeros(2)\n    arr[0] = i\n",
    "fns = [step{i}]\n",
    "def later{i}():\n    return step{i}\n",
    "z{i} = lax.cond(True, step{i}, step{i}, x_ref)\n",
    "x_ref = jax.new_ref(jnp.ones({k}))\nw{i} = x_ref + 1\n",
    "jax.freeze(x_ref)\n",
    "o_ref = jax.new_ref(jnp.zeros({k}))\no_ref[...] = y_ref[...] * {k}\n",
    "print(y{i} if 'y{i}' in dir() else x_ref[...])\n",
]


def notebook_program(rng: random.Random) -> str:
    """An exported notebook (issue 29): module-level code in "cells", a ref rebound per cell,
    functions defined per cell and called there, item assignment at module level, aliases and
    escapes of the cells' functions."""
    parts = [PRELUDE, "\n"]
    for i in range(rng.randint(2, 12)):
        parts.append(f"# %% cell {i}\n")
        parts.append("def step{i}(r):\n    return r\n".format(i=i))
        for _ in range(rng.randint(1, 4)):
            parts.append(rng.choice(CELLS).format(i=i, k=rng.randint(1, 5)))
        if rng.random() < 0.3:
            parts.append(_block(rng, rng.randint(1, 3)) + "\n")
    return "".join(parts)


def valid(source: str) -> bool:
    try:
        compile(source, "gen.py", "exec", dont_inherit=True, flags=0x400)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def check_properties(source: str, path: str = "gen.py") -> list:
    """Every property that must hold for ``source`` in one process: a list of failures (empty
    when all hold). Covers: no exception and no REF903; positions inside the file; the same
    output twice; ``--fix`` (unsafe fixes included) gives code that parses, and the fixes
    leave nothing fixable of the codes they fixed."""
    from reflint.engine import fix_source, lint_source
    from reflint.settings import Settings

    failures = []
    try:
        first = lint_source(source, path, Settings()).diagnostics
        second = lint_source(source, path, Settings()).diagnostics
    except KeyboardInterrupt:  # a campaign stopped (bench/fuzz.py: SIGTERM)
        raise
    except BaseException as e:  # noqa: BLE001 - the property under test
        return [f"exception: {type(e).__name__}: {e}"]
    n_lines = source.count("\n") + 1
    for d in first:
        if d.code in ("REF903", "REF904"):
            failures.append(f"{d.code}: {d.message}")
        if d.code == "REF900":
            failures.append(f"REF900 on valid Python: {d.message}")
        if not 1 <= d.line <= d.end_line <= n_lines:
            failures.append(f"bad position {d.line}-{d.end_line} for {d.code}")
    if [(d, d.message, d.fix) for d in first] != [(d, d.message, d.fix) for d in second]:
        failures.append("non-deterministic output")
    try:
        unfiltered = lint_source(source, path, Settings(), use_prefilter=False).diagnostics
    except KeyboardInterrupt:  # a campaign stopped (bench/fuzz.py: SIGTERM)
        raise
    except BaseException as e:  # noqa: BLE001
        return failures + [f"exception without the pre-filter: {type(e).__name__}: {e}"]
    if [(d, d.message) for d in first] != [(d, d.message) for d in unfiltered]:
        failures.append("the pre-filter changes the findings: "
                        f"{sorted(set(first) ^ set(unfiltered))[:4]}")
    if any(d.fix for d in first):
        settings = Settings(unsafe_fixes=True)
        try:
            outcome = fix_source(source, path, settings)
        except KeyboardInterrupt:  # a campaign stopped (bench/fuzz.py: SIGTERM)
            raise
        except BaseException as e:  # noqa: BLE001
            return failures + [f"fix exception: {type(e).__name__}: {e}"]
        if outcome.error:
            failures.append(f"fix abandoned: {outcome.error}")
        elif not valid(outcome.source):
            failures.append("fixed code does not parse")
        else:
            fixed_codes = {d.code for d in first if d.fix}
            after = lint_source(outcome.source, path, settings).diagnostics
            # A fix whose re-lint added or hid a finding is not applied (reflint.fixcheck):
            # its finding stays, with the reason in outcome.rejected.
            refused = {(r.split()[0], int(r.split(" on line ")[1].split()[0]))
                       for r in outcome.rejected}
            left = [d for d in after if d.code in fixed_codes and d.fix is not None
                    and (d.code, d.line) not in refused]
            if left:
                failures.append(f"fixable findings left after --fix: "
                                f"{[(d.code, d.line) for d in left]}")
    return failures


def cli_agreement(sources: list) -> list:
    """--jobs 1, --jobs 2, cold cache and warm cache give the same results on ``sources``."""
    from reflint import cli
    from reflint.cache import Cache
    from reflint.settings import Settings

    with tempfile.TemporaryDirectory() as d:
        files = []
        for i, src in enumerate(sources):
            p = os.path.join(d, f"gen_{i:03}.py")
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(src)
            files.append(p)
        settings = Settings()

        def digest(results):
            return [(r.path, [(x, x.message) for x in r.diagnostics]) for r in results]

        one = digest(cli.check_paths(files, settings, 1))
        old = cli.PARALLEL_MIN_CHARS
        cli.PARALLEL_MIN_CHARS = 0  # force the worker pool
        try:
            two = digest(cli.check_paths(files, settings, 2))
        finally:
            cli.PARALLEL_MIN_CHARS = old
        cache = Cache(os.path.join(d, ".cache"))
        cold = digest(cli.check_paths(files, settings, 1, cache=cache))
        warm = digest(cli.check_paths(files, settings, 1, cache=Cache(cache.directory)))
    out = []
    if one != two:
        out.append("--jobs 1 and --jobs 2 differ")
    if one != cold or one != warm:
        out.append("cached and uncached results differ")
    return out
