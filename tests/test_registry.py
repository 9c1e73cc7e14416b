"""The registry (reflint.api) and what is derived from it.

The differential test generates, for every registry entry, every spelling of it and several
uses, programs that exercise the entry together with the mistakes the rules look for, and
checks that the findings are the same with the pre-filter (text triggers and the ast gate) on
and off: the pre-filter asks the registry's tables, so a new entry cannot make it drift.
"""

from __future__ import annotations

import ast
import os
import random
import re

import pytest

from reflint import api
from reflint.engine import lint_source
from reflint.settings import Settings

ALL = Settings()
PER_ENTRY = int(os.environ.get("REFLINT_REGISTRY_PROGRAMS", "30"))


def _codes(source, settings=ALL, **kw):
    return {(d.line, d.code) for d in lint_source(source, "t.py", settings, **kw).diagnostics}


# --------------------------------------------------------------------------------------------
# The registry itself
# --------------------------------------------------------------------------------------------


def test_every_spelling_has_one_entry():
    seen: dict = {}
    for a in api.APIS:
        assert a.spellings, a.name
        for qn in a.spellings:
            assert qn not in seen, (qn, seen.get(qn), a.name)
            seen[qn] = a.name
    assert api.CANONICAL == seen


def test_every_role_has_its_properties_and_every_callee_a_known_role():
    assert set(api.ROLES) == set(api.Role)
    for a in api.APIS:
        if a.family is api.Family.TRANSFORM:
            assert a.role is not None, a.name
        for c in a.callees:
            assert c.role is None or c.role in api.ROLES, a.name
        for s in a.operands:
            assert s.pos is not None or s.kw, a.name


def test_derived_tables_follow_the_entries():
    assert api.MAP_TRANSFORMS == {"vmap", "pmap", "shard_map", "nnx_vmap"}
    assert api.ARRAY_RESULT_APIS >= {"freeze", "ref_get", "ref_swap", "stop_gradient"}
    assert "jit" in api.ONCE_PER_TRACE_APIS and "grad" not in api.ONCE_PER_TRACE_APIS
    assert "pallas_call" in api.REF_SOURCES and "kernel" in api.REF_SOURCES
    assert api.role_info("while_loop").word == "a lax.while_loop body"
    assert api.role_info(api.Role.SCAN).return_hint


def test_freeze_result_is_an_array_for_the_prefilter_too():
    """Issue 18: the gate's own list of Array producers left out freeze."""
    source = "import jax\ndef snapshot(r):\n    out = jax.freeze(r)\n    out[0] = 0.0\n"
    assert _codes(source, use_prefilter=False) == {(4, "REF013")}
    assert _codes(source) == {(4, "REF013")}


def test_a_new_entry_reaches_the_analysis_and_the_prefilter(monkeypatch):
    """Adding a transform is one entry: the analysis traces its function, the rules and the
    pre-filter follow (a made-up `mylib.jit2` behaving like jax.jit)."""
    source = ("import jax\nimport mylib\n\n@mylib.jit2\ndef f(r):\n    return r\n\n"
              "f(jax.new_ref(1.0))\n")
    assert _codes(source) == set()
    entry = api.Api("jit2", ("mylib.jit2",), api.Family.TRANSFORM, api.Result.FUNCTION,
                    role=api.Role.JIT, checks_aliasing=True, checks_closure=True)
    monkeypatch.setitem(api.API, "jit2", entry)
    monkeypatch.setitem(api.CANONICAL, "mylib.jit2", "jit2")
    monkeypatch.setattr(api, "DECORATOR_APIS", api.DECORATOR_APIS | {"jit2"})
    assert _codes(source, use_prefilter=False) == {(6, "REF001")}


# --------------------------------------------------------------------------------------------
# Differential test: pre-filter on == off, on programs generated from every entry
# --------------------------------------------------------------------------------------------

HEADER = ("import functools\nfrom functools import partial\nimport jax\nimport jax.numpy as jnp\n"
          "{imports}\n\nr = jax.new_ref(jnp.zeros(3))\ncache = {{}}\nxs = jnp.ones((4, 3))\n\n")

# Mistakes (and harmless lines) the bodies of generated functions are made of: every rule's.
BODIES = [
    "x[0] = 1.0", "cache['k'] = x", "return r", "r[...] = x", "y = r + 1", "return x",
    "out = jax.freeze(r)", "r[...] += jnp.sin(x)", "y = x * 2\n{ind}y[0] = 0.0",
    "z = jnp.zeros(3)\n{ind}z[1] = x", "cache.setdefault('k', []).append(x)", "pass",
    "return jax.new_ref(x)", "s = jax.new_ref(r)",
]


def _spell(qn: str, style: int) -> tuple:
    """(import line, how the code names ``qn``) in one of three styles."""
    module, _, name = qn.rpartition(".")
    if not module:
        return "", qn
    if style == 0:
        top = module.split(".")[0]
        return f"import {module}" if module != top else f"import {top}", qn
    if style == 1:
        return f"import {module} as M", f"M.{name}"
    return f"from {module} import {name} as N", "N"


def _uses(a: api.Api, f: str, body: str, rng: random.Random) -> list:
    """Code using the API spelled ``f``, with ``body`` in the functions it runs."""
    ind = "    "
    fn = "def h(x, *rest):\n" + ind + body.format(ind=ind) + "\n"
    fam = a.family
    F = api.Family
    if fam is F.REF_CONSTRUCTOR:
        return [f"s = {f}(jnp.zeros(3))\n" + fn + "jax.jit(h)(s)\n",
                f"def g(x):\n{ind}q = {f}(x)\n{ind}{body.format(ind=ind)}\n"]
    if fam is F.REF_TYPE:
        return [f"def h(x: {f}):\n{ind}{body.format(ind=ind)}\n\njax.jit(h)(r)\n",
                f"class S:\n{ind}buf: {f}\n\n" + fn]
    if fam is F.FREE:  # jax.free_ref: uses and frees after it, at top level and in jit
        return [f"def g(x):\n{ind}q = jax.new_ref(x)\n{ind}{f}(q)\n{ind}{f}(q)\n{ind}y = q[...]\n"
                f"{ind}{body.format(ind=ind)}\njax.jit(g)(xs)\n",
                f"{f}(r)\ny = r[...]\nr[...] = 1.0\n" + fn]
    if fam in (F.FREEZE, F.REF_READ, F.ARRAY):
        return [f"def g(x):\n{ind}out = {f}(r)\n{ind}out[0] = 0.0\n{ind}{body.format(ind=ind)}\n",
                f"y = {f}(r)\ny[0] = 1.0\n" + fn]
    if fam is F.REF_WRITE:
        return [f"def g(x):\n{ind}v = {f}(r, (), x)\n{ind}v[0] = 1\n{ind}{body.format(ind=ind)}\n"
                "jax.jit(g)(xs)\n"]
    if fam is F.TRANSFORM:
        call = rng.choice(["h(xs)", "h(r)", "h(r, r)", "h(xs, r)", "jax.jit(h)(xs)"])
        return [f"@{f}\n" + fn + call + "\n",
                fn + f"k = {f}(h)\nk(xs)\nk(r, r)\n",
                fn + f"k = partial({f})(h)\nk(r)\n",
                fn + f"k = {f}(h)\nout = k(xs)\nout[0] = 1\n"]
    if fam is F.CONTROL_FLOW:
        args = []
        for i in range(max([c.pos for c in a.callees if c.pos is not None] +
                           [s.pos for s in a.operands if s.pos is not None]) + 2):
            callee = next((c for c in a.callees if c.pos == i), None)
            if callee is None:
                args.append(rng.choice(["r", "xs", "0", "True", "x0"]))
            elif callee.sequence:
                args.append("[h, h]")
            else:
                args.append("h")
        return [fn + f"x0 = jnp.zeros(3)\nres = {f}({', '.join(args)})\n",
                fn + f"def outer(q):\n{ind}return {f}({', '.join(args)})\n\njax.jit(outer)(r)\n"]
    if fam is F.KERNEL:
        k = f"def kern(x_ref, o_ref):\n{ind}{body.format(ind=ind).replace('x', 'x_ref')}\n"
        return [k + f"out = {f}(kern, out_shape=xs)(xs)\n",
                f"@partial({f}, out_shape=xs)\n" + k + "kern(xs)\n",
                f"@{f}(xs)\n" + k + "kern(xs)\n",
                f"def outer(a_ref):\n{ind}@{f}(xs)\n{ind}def body(q):\n{ind}{ind}y = a_ref + 1\n"
                f"{ind}{ind}cache[0] = q\n{ind}return body\n"]
    if fam is F.BLOCK_SPEC:  # an index map: its parameters spelled as refs are refs
        m = (f"def imap(i, n_ref):\n{ind}{body.format(ind=ind).replace('x', 'n_ref')}\n"
             f"{ind}return (i + n_ref, i)\n")
        return [m + f"spec = {f}((8,), imap)\n",
                f"class S({f}):\n{ind}pass\n\n" + m + "spec = S((8,), index_map=imap)\n",
                f"spec = {f}(index_map=lambda i, j_ref: (i * j_ref,), block_shape=(8,))\n"]
    if fam is F.INLINE:
        return [f"def kern(x_ref):\n{ind}@{f}(True)\n{ind}def _():\n{ind}{ind}"
                f"{body.format(ind=ind + ind).replace('x', 'x_ref')}\n"]
    if fam is F.WRAPPER:
        dec = f"@{f}('name')\n" if a.factory else f"@{f}\n"
        return [dec + fn + "jax.jit(h)(r, r)\n", fn + f"k = jax.jit({f}(h))\nk(r, r)\n"]
    if fam is F.PARTIAL:
        return [fn + f"k = jax.jit({f}(h, r))\nk(r)\n", fn + f"k = {f}(jax.vmap, in_axes=0)(h)\n"]
    if fam is F.GRAD_ENTRY:
        return [fn + f"_, v = jax.vjp(h, r)\nv.with_refs({f}())(1.0)\nv(1.0)\n",
                fn + f"_, v = jax.vjp(h, xs, r)\nv.with_refs({f}(), r)(1.0)\n"]
    if fam is F.NNX:
        # Flax NNX: conversions, ref keywords and the refs-on switches, one spelling each.
        return [f"def g(model):\n{ind}m = {f}(model)\n{ind}return jax.jit(lambda q: q)(m)\n",
                f"m = {f}(jnp.zeros(3), ref=True)\n" + fn + "jax.jit(h)(m, m)\nh(m)\n",
                f"with {f}(ref=True):\n{ind}m = {f}(jnp.zeros(3))\n" + fn + "jax.jit(h)(m)\n",
                f"{f}(True)\nclass M({f}):\n{ind}def __init__(self):\n{ind}{ind}self.a = {f}(1)"
                f"\n{ind}{ind}self.b = self.a\n\nm = M()\n" + fn + "jax.jit(h)(m)\n"]
    if fam is F.SEQUENCE:  # split_list: the pieces of a kernel's *refs are refs
        return [f"def kern(*refs):\n{ind}a, b = {f}(refs, [1])\n{ind}o = a[0] + b[0]\n"
                f"{ind}{body.format(ind=ind)}\n\nfrom jax.experimental import pallas as pl\n"
                "pl.pallas_call(kern, out_shape=xs)(xs, xs)\n",
                f"def g(x):\n{ind}a, b = {f}(x, [1])\n{ind}a[0] = 1\n{ind}"
                f"{body.format(ind=ind)}\n"]
    if fam is F.RECORD:
        # Objects holding refs (reflint/analysis/objects.py).
        cls = "class S:\n" + ind + "a: object\n" + ind + "b: object\n"
        if a.record == "namedtuple":
            cls = f"class S({f}):\n{ind}a: object\n{ind}b: object\n"
        elif a.record == "pytree":
            cls = (f"@{f}\nclass S:\n{ind}def __init__(self, a, b):\n{ind}{ind}self.a = a\n"
                   f"{ind}{ind}self.b = b\n")
        elif a.record == "replace":
            cls = "import dataclasses\n@dataclasses.dataclass\n" + cls
        else:
            cls = f"@{f}\n" + cls
        use = f"t = {f}(s, b=xs)\n" if a.record == "replace" else "t = s\n"
        return [cls + "s = S(r, r)\n" + use + fn + "jax.jit(h)(t.a, t.b)\ny = t.a + 1\n",
                cls + fn + "def g(q):\n" + ind + "s = S(q, xs)\n" + ind + use.replace(
                    "t =", ind + "t =").strip() + "\n" + ind + "return s\n\njax.jit(g)(xs)\n"
                "g(r).a.sum()\n"]
    if fam is F.TREE:
        uses = {
            "map": f"out = {f}(lambda p: p * 2, {{'a': r, 'b': r}})\n",
            "leaves": f"for p in {f}({{'a': r}}):\n{ind}y = p + 1\n",
            "flatten": f"leaves, td = {f}((r, r))\ny = leaves[0] + 1\n",
            "unflatten": f"t = {f}(None, [r, r])\njax.jit(h)(t)\n"}
        body_use = uses[a.tree_op]
        return [fn + body_use, fn + "def g(x):\n" + "".join(
            ind + line + "\n" for line in body_use.splitlines()) + "jax.jit(g)(xs)\n"]
    raise AssertionError(f"no template for {fam}")  # pragma: no cover - every family above


def generated_programs(entry: api.Api, count: int):
    rng = random.Random(f"{entry.name}-{count}")
    out = []
    for i in range(count):
        qn = entry.spellings[i % len(entry.spellings)]
        imports, f = _spell(qn, rng.randrange(3))
        uses = _uses(entry, f, rng.choice(BODIES), rng)
        out.append(HEADER.format(imports=imports) + uses[i % len(uses)])
    return out


SELECTIONS = [ALL] + [Settings(select=frozenset({c})) for c in ("REF012", "REF013", "REF007")]


def test_the_differential_test_covers_enough_programs():
    total = sum(len(generated_programs(a, PER_ENTRY)) for a in api.APIS)
    assert total >= 1000, total


@pytest.mark.parametrize("entry", api.APIS, ids=[a.name for a in api.APIS])
@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_generated_programs_same_findings_with_prefilter_on_and_off(entry):
    checked = 0
    for source in generated_programs(entry, PER_ENTRY):
        try:
            compile(source, "gen.py", "exec")
        except SyntaxError:  # pragma: no cover - the templates make valid code
            raise AssertionError(source)
        for s in SELECTIONS:
            on = lint_source(source, "gen.py", s).diagnostics
            off = lint_source(source, "gen.py", s, use_prefilter=False).diagnostics
            assert on == off, (source, on, off)
        checked += 1
    assert checked == PER_ENTRY


def test_generated_programs_exercise_the_rules():
    """The generator is not vacuous: its programs have findings of many rules."""
    codes = set()
    for a in api.APIS:
        for source in generated_programs(a, 6):
            codes |= {d.code for d in lint_source(source, "g.py", ALL).diagnostics}
    assert {"REF001", "REF002", "REF007", "REF012", "REF013"} <= codes, codes


def test_no_list_of_apis_outside_the_registry():
    """No module but reflint/api.py lists canonical API names or roles (a list of two or
    more of them is a second model of JAX that can drift)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = sorted({a.name for a in api.APIS} | {r.value for r in api.Role}, key=len,
                   reverse=True)
    item = (r"(?:api\.(?!(?:YES|NO|DEPRECATED)\b)[A-Z][A-Z_]+|Role\.[A-Z_]+|[\"'](?:" +
            "|".join(names) + r")[\"'])")
    pattern = re.compile(item + r"\s*[,|]\s*" + item)
    offenders = []
    for d in ("reflint", "rules"):
        for dirpath, _, files in os.walk(os.path.join(here, d)):
            for name in files:
                path = os.path.join(dirpath, name)
                if not name.endswith(".py") or path.endswith(os.path.join("reflint", "api.py")):
                    continue
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                exported = set()  # the lines of `__all__ = [...]` (names of functions)
                for node in ast.parse(text).body:
                    if isinstance(node, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                        exported |= set(range(node.lineno, node.end_lineno + 1))
                for i, line in enumerate(text.splitlines(), 1):
                    code = line.split("#", 1)[0]
                    if i not in exported and pattern.search(code):
                        offenders.append(f"{path}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("kind,expected", [("'no_grad_no_remat'", set()), ("'anselm_ref'", set()),
                                           ("None", {(5, "REF006")})])
def test_refs_of_a_no_remat_kind_may_be_written_under_remat(kind, expected):
    """JAX's own remat tests write refs of kind 'anselm_ref' (the earlier name of
    'no_grad_no_remat') inside jax.remat and expect the write once."""
    source = ("import jax\n\nx_ref = jax.new_ref(1.0, kind=" + kind + ")\n\n"
              "@jax.remat\ndef f(y):\n    x_ref[...] += 1\n    return y * 2\n\n"
              "jax.grad(f)(2.0)\n")
    assert {c for c in _codes(source) if c[1] == "REF006"} == expected


# --------------------------------------------------------------------------------------------
# REF015's text question: a name missing at the target version spelled as a word
# --------------------------------------------------------------------------------------------

def _problem_regex(version):
    words = api.problem_names(version)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b") if words else None


@pytest.mark.parametrize("version", [(0, 7, 1), (0, 8, 0), (0, 10, 2), (0, 12, 0, 1)])
def test_spells_problem_name_is_the_word_boundary_regex(version):
    """api.spells_problem_name (substring searches) answers as the regex of the words between
    word boundaries, on texts built from the words, their neighbours and the fixtures."""
    words = list(api.problem_names(version))
    rx = _problem_regex(version)
    if rx is None:
        assert not api.spells_problem_name("x = 1\n", version)
        return
    rng = random.Random(15)
    pieces = words + ["_", "x", "é", "2", ".", " ", "\n", "(", "ArrayRefs", "my_" + words[0]]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(3000)]
    from conftest import fixture_files

    texts += [open(p, encoding="utf-8").read() for p in fixture_files()[::3]]
    for text in texts:
        assert api.spells_problem_name(text, version) == (rx.search(text) is not None), text
