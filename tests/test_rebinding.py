"""Values that survive rebinding (issue 16): programs that rebind ref and function names, as
notebooks converted to scripts and test modules do, get the verdicts of the same programs
without the rebinding.

Each case is a small program: a ref `x_ref`, a function `f` and a call that is (or is not) a
Ref bug. Wrappers add rebindings around it that do not change what reaches the call: earlier
cells binding the same names, later cells rebinding them, the `if jit: f = jax.jit(f)` idiom,
rebinding under `if` and in loops, and the whole program inside a function (a test method).
The codes reported must be those of the plain program. The unit cases at the end are the
missed cases of the issue.
"""

from __future__ import annotations

import itertools
import textwrap

import pytest

from reflint.engine import lint_source
from reflint.settings import Settings

ALL = Settings()

# (name, definitions, call, expected codes of the plain program)
CASES = [
    ("closed_and_passed", "@jax.jit\ndef f(y_ref):\n    y_ref[...] = x_ref[...]\n",
     "f(x_ref)", {"REF003"}),
    ("passed_twice", "@jax.jit\ndef f(a_ref, b_ref):\n    a_ref[...] = b_ref[...]\n",
     "f(x_ref, x_ref)", {"REF002"}),
    ("returned", "@jax.jit\ndef f(a_ref):\n    a_ref[...] += 1.\n    return a_ref\n",
     "f(x_ref)", {"REF001"}),
    ("mapped_write", "def f(x):\n    x_ref[...] = x\n", "jax.vmap(f)(jnp.arange(3.))",
     {"REF005"}),
    ("custom_vjp_twice",
     "@jax.custom_vjp\ndef f(a_ref, b_ref):\n    return a_ref[...] + b_ref[...]\n\n"
     "f.defvjp(lambda a, b: (f(a, b), None), lambda _, g: (None, None))\n",
     "f(x_ref, x_ref)", {"REF002"}),
    ("ok_write", "@jax.jit\ndef f(a_ref):\n    a_ref[...] = 1.\n", "f(x_ref)", set()),
    ("ok_closed_read", "@jax.jit\ndef f(y):\n    return y + x_ref[...]\n", "f(1.)", set()),
    ("ok_vmapped_arg", "def f(r, x):\n    r[...] = x\n",
     "jax.vmap(f)(x_ref, jnp.arange(3.))", set()),
]

HEADER = "import jax\nimport jax.numpy as jnp\n\nFLAG = len(__name__) > 3\n\n"
MAKE = "x_ref = jax.new_ref(jnp.zeros(3))\n"


def _plain(defs: str, call: str) -> str:
    return MAKE + defs + call + "\n"


# Rebindings around the plain program (their own names only: x_ref, f, and unrelated values).
WRAPPERS = {
    # a notebook cell before: the same names bound to another ref and another function
    "cell_before": lambda body: ("x_ref = jax.new_ref(1.)\nprint(x_ref[...])\n\n"
                                 "def f(z):\n    return z\n\nprint(f(1))\n\n" + body),
    # a notebook cell after: the names rebound once the call has run
    "cell_after": lambda body: (body + "\nx_ref = jax.new_ref(2.)\nprint(x_ref[...])\n\n"
                                "def f(z):\n    return z + 1\n\nprint(f(2))\n"),
    # the test-module idiom: wrapping the function in jit on one path
    "if_jit": lambda body: body.replace(
        "\nx_ref", "\nif FLAG:\n    f = jax.jit(f)\nx_ref", 1) if "\nx_ref" in body else body,
    # rebinding under an if before the program
    "if_before": lambda body: ("if FLAG:\n    x_ref = jax.new_ref(3.)\n    print(x_ref[...])\n"
                               "else:\n    x_ref = None\n\n" + body),
    # rebinding in a loop before the program
    "loop_before": lambda body: ("for _ in range(2):\n    x_ref = jax.new_ref(1.)\n"
                                 "    x_ref[...] += 1.\n\n" + body),
}


def _in_function(body: str) -> str:
    """The program as the body of a function (a test method), called once."""
    return "def run(flag):\n" + textwrap.indent(body.replace("FLAG", "flag"), "    ") + \
        "\n\nrun(FLAG)\n"


def _move_make_after_defs(defs: str, call: str) -> str:
    """`if jit: f = jax.jit(f)` needs f defined before the ref: defs, then the ref, then call."""
    return defs + "\n" + MAKE + call + "\n"


def codes(source: str) -> set:
    return {d.code for d in lint_source(HEADER + source, "prog.py", ALL).diagnostics}


def _programs():
    for (name, defs, call, expected), in_fn in itertools.product(CASES, (False, True)):
        plain = _move_make_after_defs(defs, call)
        for k in range(1, 3):
            for combo in itertools.combinations(sorted(WRAPPERS), k):
                body = plain
                for w in combo:
                    body = WRAPPERS[w](body)
                yield (f"{name}-{'+'.join(combo)}-{'fn' if in_fn else 'module'}",
                       _in_function(plain) if in_fn else plain,
                       _in_function(body) if in_fn else body, expected)


PROGRAMS = list(_programs())


def test_the_generator_makes_enough_programs():
    assert len(PROGRAMS) >= 200, len(PROGRAMS)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_plain_programs_have_their_codes(case):
    name, defs, call, expected = case
    for src in (_plain(defs, call), _move_make_after_defs(defs, call),
                _in_function(_plain(defs, call))):
        assert codes(src) == expected, src


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_rebinding_keeps_the_verdict(prog):
    _, plain, rebound, expected = prog
    assert codes(plain) == expected, plain
    assert codes(rebound) == expected, rebound


# -- the missed cases of issue 16 ---------------------------------------------------------------

def _lint(src: str, **kw) -> list:
    return [(d.line, d.code) for d in lint_source(textwrap.dedent(src), "t.py",
                                                 Settings(**kw)).diagnostics]


def test_notebook_rebinding_keeps_closure_and_vmap_findings():
    src = """
        import jax
        import jax.numpy as jnp
        x_ref = jax.new_ref(0.)

        @jax.jit
        def err3(y_ref):
            y_ref[...] = x_ref[...]

        err3(x_ref)
        x_ref = jax.new_ref(0.)

        def err5(x):
            x_ref[...] = x

        jax.vmap(err5)(jnp.arange(3.))
        x_ref = jax.new_ref(1.)
        """
    assert _lint(src) == [(10, "REF003"), (14, "REF005")]


def test_closure_sees_the_ref_reaching_the_call_not_a_later_one():
    src = """
        import jax
        a_ref = jax.new_ref(0.)
        x_ref = jax.new_ref(1.)

        @jax.jit
        def g(y_ref):
            y_ref[...] = x_ref[...]

        g(a_ref)
        x_ref = a_ref
        """
    assert _lint(src) == []


def test_escaping_function_keeps_the_joined_value():
    """A function stored in a container may run later, with any binding: no call-site value."""
    src = """
        import jax
        x_ref = jax.new_ref(0.)

        @jax.jit
        def g(y_ref):
            y_ref[...] = x_ref[...]

        fns = [g]
        g(x_ref)
        x_ref = jax.new_ref(1.)
        """
    assert _lint(src) == []


@pytest.mark.parametrize("jit", ["", "    f = jax.jit(f)\n"])
def test_custom_vjp_primal_through_if_jit(jit):
    src = ("import jax\n\ndef t(jit):\n    @jax.custom_vjp\n    def f(ref):\n        return ref\n"
           "    f.defvjp(lambda ref: ..., lambda *_: ...)\n    if jit:\n" + (jit or "        pass\n")
           .replace("    f =", "        f =") + "    x_ref = jax.new_ref(0.)\n    f(x_ref)\n")
    assert _lint(src) == [(6, "REF001")]


def test_vjp_of_a_function_that_may_be_jitted_passed_one_ref_twice():
    src = """
        import jax

        def t(jit):
            @jax.custom_vjp
            def f(x_ref, y_ref):
                ...
            f.defvjp(lambda x_ref, y_ref: (None, None), lambda _, g: (None, None))
            if jit:
                f = jax.jit(f)
            x_ref = jax.new_ref(0.)
            jax.vjp(f, x_ref, x_ref)
        """
    assert _lint(src) == [(12, "REF002")]


def test_jit_of_the_constructor():
    src = """
        import jax
        from jax._src import core
        jax.jit(core.new_ref)(1.)
        jax.jit(jax.new_ref)(1.)
        jax.vmap(jax.new_ref)(1.)
        """
    assert _lint(src) == [(4, "REF001"), (5, "REF001")]


def test_notebook_kernels_one_per_cell():
    """A module that defines the same function name in several cells keeps every definition."""
    src = """
        import jax
        x_ref = jax.new_ref(0.)

        @jax.jit
        def step(a_ref):
            return a_ref

        step(x_ref)

        @jax.jit
        def step(a_ref, b_ref):
            a_ref[...] = b_ref[...]

        step(x_ref, x_ref)
        """
    assert _lint(src) == [(7, "REF001"), (15, "REF002")]


def test_refs_through_an_args_helper():
    src = """
        import jax

        def call(f, *args):
            return f(*args)

        x_ref = jax.new_ref(0.)
        call(jax.jit(lambda a, b: a[...] + b[...]), x_ref, x_ref)
        """
    assert _lint(src) == [(8, "REF002")]


def test_array_ref_annotation_is_reported():
    src = """
        import jax

        class S:
            buf: jax.ArrayRef

        def f(x: jax.ArrayRef):
            return x
        """
    assert [c for _, c in _lint(src)] == ["REF015", "REF015"]


# -- values through the constructs real code uses ----------------------------------------------
# The ref of each case held in a container, an attribute bag, an instance or a conditional
# expression, and the function reached through a table, a conditional expression or a method:
# the codes must be those of the plain program. `x_ref` (in the definitions and the call) is
# replaced by the expression that reaches the ref; `f` in the call by one reaching the function.

REF_HOLDERS = {
    "list_comprehension": ("pool = [jax.new_ref(jnp.zeros(3)) for _ in range(2)]\n", "pool[0]"),
    "dict_comprehension": ("bufs = {k: jax.new_ref(jnp.zeros(3)) for k in ('a', 'b')}\n",
                           "bufs['a']"),
    "dict_literal": ("bufs = {'a': jax.new_ref(jnp.zeros(3)), 'b': None}\n", "bufs['a']"),
    "list_literal": ("pair = [jax.new_ref(jnp.zeros(3)), jax.new_ref(jnp.ones(3))]\n",
                     "pair[1]"),
    "simple_namespace": ("import types\nns = types.SimpleNamespace(r=jax.new_ref(jnp.zeros(3)))\n",
                         "ns.r"),
    "instance": ("class Holder:\n    def __init__(self):\n"
                 "        self.r = jax.new_ref(jnp.zeros(3))\n\nh = Holder()\n", "h.r"),
    "same_ref_either_way": ("r0 = jax.new_ref(jnp.zeros(3))\nsel = r0 if FLAG else r0\n", "sel"),
}
FUNCTION_HOLDERS = {
    "dict_literal": ("fns = {'f': f}\n", "fns['f']"),
    "conditional": ("g = f if FLAG else f\n", "g"),
    "table_by_unknown_key": ("import sys\nfns = {'f': f, 'other': print}\n",
                             "fns[sys.argv[0]]"),
    "list_comprehension": ("fns = [g for g in (f, f)]\n", "fns[1]"),
}


def _construct_programs():
    import re

    for name, defs, call, expected in CASES:
        for holder, (prelude, expr) in REF_HOLDERS.items():
            body = (prelude + re.sub(r"\bx_ref\b", expr, defs) + "\n" +
                    re.sub(r"\bx_ref\b", expr, call) + "\n")
            yield f"{name}-ref-{holder}", body, expected
        for holder, (prelude, expr) in FUNCTION_HOLDERS.items():
            body = MAKE + defs + "\n" + prelude + re.sub(r"\bf\b", expr, call) + "\n"
            yield f"{name}-function-{holder}", body, expected


CONSTRUCTS = list(_construct_programs())


@pytest.mark.parametrize("prog", CONSTRUCTS, ids=[p[0] for p in CONSTRUCTS])
def test_values_through_constructs_keep_the_verdict(prog):
    _, body, expected = prog
    assert codes(body) == expected, body
