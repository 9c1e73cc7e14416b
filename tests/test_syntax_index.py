"""The shared syntax queries rules ask instead of walking the module themselves:
``analysis.syntax_index()`` (parents, nodes by type), ``analysis.aot_call_of`` (AotCall facts)
and a kernel's names with their ancestors (rules/_kernel_refs.kernel_names), each compared with
a plain walk of every field of every node (``_fields``, layout nodes left out)."""

import textwrap

import pytest

from reflint import fasttree
from reflint import nodes as cst
from reflint.analysis import ModuleAnalysis
from reflint.analysis.syntax import LAYOUT, child_nodes
from reflint.engine import parse_module
from reflint.rules._kernel_refs import kernel_names, name_uses
from reflint.settings import Settings

from conftest import fixture_files

SOURCE = textwrap.dedent('''
    import functools
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def kernel(x_ref, o_ref, *, n):
        @pl.when(x_ref.shape[0] > 0)
        def _():
            o_ref[...] = x_ref[...] * n

        def inner(o_ref):  # its own o_ref
            o_ref[0] = 1

        class Holder:
            x_ref = None
        acc = x_ref[0]
        o_ref[1] += acc
        o_ref = jnp.zeros(3)
        f = lambda x_ref: x_ref

    def launch(x):
        return pl.pallas_call(functools.partial(kernel, n=2),
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    def traced(x):
        return x + 1

    lowered = jax.jit(traced).lower(1.0)
    shaped = jax.jit(traced).eval_shape(1.0)
    y = jnp.zeros(3)
    y.at[0].set(1.0)
''')


def _children(node) -> list:
    """Every node in any field of ``node``, layout fields included."""
    out = []
    for f in node._fields:
        v = getattr(node, f)
        for x in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(x, cst.CSTNode):
                out.append(x)
    return out


def _reference_parents(module) -> dict:
    parents, stack = {}, [module]
    while stack:
        node = stack.pop()
        for child in _children(node):
            if isinstance(child, LAYOUT):
                continue
            parents[id(child)] = node
            stack.append(child)
    return parents


def _analysis(source: str, fast: bool) -> ModuleAnalysis:
    module = fasttree.convert(source) if fast else parse_module(source)
    return ModuleAnalysis(module, "m.py", Settings(), source)


@pytest.mark.parametrize("fast", [True, False], ids=["fast tree", "libcst"])
def test_index_parents_and_types_are_a_plain_walk_s(fast):
    sources = [SOURCE] + [open(p, encoding="utf-8").read() for p in fixture_files()[::40]]
    for source in sources:
        a = _analysis(source, fast)
        index = a.syntax_index()
        assert index is a.syntax_index()  # one walk per analysis
        want = _reference_parents(a.module)
        assert {k: id(v) for k, v in index.parents.items()} == \
            {k: id(v) for k, v in want.items()}
        assert len(index.nodes) == len(want) + 1  # every node once, the module too
        for t in (cst.Expr, cst.Assign, cst.Name):
            got = index.of_type(t)
            assert [id(n) for n in got] == [id(n) for n in index.nodes if type(n) is t]
        both = index.of_type(cst.Assign, cst.AugAssign)
        assert [id(n) for n in both] == \
            [id(n) for n in index.nodes if type(n) in (cst.Assign, cst.AugAssign)]


def test_enclosing_finds_the_nearest_scope():
    a = _analysis(SOURCE, True)
    index = a.syntax_index()
    stores = [n for n in index.of_type(cst.AssignTarget)
              if isinstance(n.target, cst.Subscript)]
    scopes = {(n.target.value.value, index.enclosing(n, (cst.FunctionDef,)).name.value)
              for n in stores}
    assert scopes == {("o_ref", "_"), ("o_ref", "inner")}
    assert index.enclosing(a.module, (cst.FunctionDef,)) is None


def test_aot_calls_name_the_transformed_function_s_receiver():
    a = _analysis(SOURCE, True)
    receivers = [c.receiver for c in a.aot_calls]
    assert {a.text_of(r) for r in receivers} == {"jax.jit(traced)"}
    assert {a.aot_call_of(r).func.attr.value for r in receivers} == {"lower", "eval_shape"}
    assert a.aot_call_of(a.module) is None


def test_kernel_names_match_a_walk_per_parameter():
    """kernel_names' one walk gives what a walk of the body per parameter gives: each use
    with its ancestors, nested functions that bind the name as a parameter and classes left
    out."""
    a = _analysis(SOURCE, True)
    info = next(f for f in a.all_functions() if f.name == "kernel")
    names = kernel_names(a, info)
    parents = a.syntax_index().parents
    for name in ("x_ref", "o_ref", "n", "acc"):
        got = [(id(node), id(p), id(g), id(gg)) for node, p, g, gg in names.get(name, ())]
        want = []
        for node in _uses_by_walk(info.node.body, name):
            p = parents.get(id(node))
            g = parents.get(id(p))
            gg = parents.get(id(g))
            want.append((id(node), id(p), id(g), id(gg)))
        assert got == want, name
    # inner's o_ref and the lambda's x_ref are their own; Holder's x_ref is a class's.
    assert sorted(k for k, _ in name_uses(a, info, "o_ref")) == ["augstore", "other", "store"]
    assert sorted(k for k, _ in name_uses(a, info, "x_ref")) == ["meta", "read", "read"]


def _uses_by_walk(body, name: str) -> list:
    out, stack = [], [body]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name:
            if node.value == name:
                out.append(node)
            continue
        if type(node) is cst.ClassDef:
            continue
        if type(node) in (cst.FunctionDef, cst.Lambda):
            p = node.params
            own = [q.name.value for q in (*p.posonly_params, *p.params, *p.kwonly_params,
                                          p.star_arg, p.star_kwarg) if isinstance(q, cst.Param)]
            if name in own:
                continue
        stack.extend(reversed(child_nodes(node)))  # field order, as the rules' walks
    return out


# Every kind of statement holder: small_statements reads only the fields that hold
# statements (body, orelse, handlers, finalbody, cases).
EVERY_STATEMENT = """\
import jax
x = 1; y = 2
if x:
    a = 1
elif y:
    b = 2
else:
    c = 3
for i in range(3):
    d = i
else:
    e = 0
while x:
    f = 1
    break
else:
    g = 2
try:
    h = 1
except ValueError as err:
    i = 2
except (KeyError, TypeError):
    pass
else:
    j = 3
finally:
    k = 4
with open("f") as fh, open("g"):
    m = fh
async def co():
    async with w:
        n = 1
    async for q in it:
        r = q
match x:
    case 1 if y:
        s = 1
    case [a, *rest]:
        t = rest
    case _:
        u = 0
class C:
    v = 1
    def m(self):
        if self: return 1
        w = lambda: (yield)
@jax.jit
def g(z): return z
"""


@pytest.mark.parametrize("fast", [True, False], ids=["fast tree", "libcst"])
def test_small_statements_are_the_index_s_with_their_scope_and_blocks(fast):
    """syntax.small_statements (a walk of statements only) finds every small statement the
    whole-module index has, with the nearest function or class and the compound statements
    in between, as the parents say."""
    from reflint.analysis.syntax import small_statements

    sources = [SOURCE, EVERY_STATEMENT] + [open(p, encoding="utf-8").read()
                                           for p in fixture_files()[::5]]
    for source in sources:
        a = _analysis(source, fast)
        index = a.syntax_index()
        found = list(small_statements(a.module))
        got = {id(s): (scope, blocks) for s, scope, blocks in found}
        want = [n for n in index.nodes if isinstance(n, cst.BaseSmallStatement)]
        assert [id(s) for s, _, _ in found] == [id(n) for n in want]  # the index's order
        for stmt in want:
            scope, blocks = got[id(stmt)]
            chain, n = [], index.parent(stmt)
            while n is not None and type(n) not in (cst.FunctionDef, cst.ClassDef):
                if isinstance(n, cst.BaseCompoundStatement):
                    chain.append(n)
                n = index.parent(n)
            assert scope is n and list(blocks) == chain[::-1]
