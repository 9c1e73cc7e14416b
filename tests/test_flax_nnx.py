"""Flax NNX: which objects hold refs (docs/flax-nnx.md), checked on the analysis' facts, the
messages, the pre-filter, the registry against the installed flax, and flax's own sources."""

from __future__ import annotations

import importlib
import os
import textwrap

import libcst as cst
import pytest

from reflint import api, gate
from reflint.analysis import ModuleAnalysis
from reflint.engine import lint_source
from reflint.settings import Settings
from reflint.values import RefVal, iter_refs

HEAD = "import jax\nimport jax.numpy as jnp\nfrom flax import nnx\n\n"
LINEAR = textwrap.dedent("""
    class Linear(nnx.Module):
        def __init__(self, din, dout, rngs):
            self.kernel = nnx.Param(jnp.ones((din, dout)))
            self.bias = nnx.Param(jnp.zeros(dout))

        def __call__(self, x):
            return x @ self.kernel + self.bias[None]
    """)


def _analysis(body: str) -> ModuleAnalysis:
    source = HEAD + LINEAR + textwrap.dedent(body)
    return ModuleAnalysis(cst.parse_module(source), "t.py", Settings(), source)


def _codes(body: str, **kw) -> list:
    source = HEAD + LINEAR + textwrap.dedent(body)
    return sorted(d.code for d in lint_source(source, "t.py", Settings(), **kw).diagnostics)


def _grad_operand(a: ModuleAnalysis):
    """The value a `jax.value_and_grad(loss_fn)(X)` call passes as X."""
    for call in a.traced_calls:
        if any(t.kind == "value_and_grad" for t in call.transforms):
            (target,) = call.targets
            return call.bindings[id(target)]["params"].value
    raise AssertionError("no value_and_grad call")


TRAIN = """
    {switch}
        model = Linear(2, 3, rngs=nnx.Rngs(0))

    @jax.jit
    def train_step(model, x):
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)

        def loss_fn(params):
            return nnx.merge(graphdef, params, rest)(x).sum()

        return jax.value_and_grad(loss_fn)({operand})

    train_step(model, jnp.ones((1, 2)))
    """


@pytest.mark.parametrize("switch", ["with nnx.var_defaults(ref=True):", "with nnx.use_refs(True):"])
def test_split_params_of_a_ref_model_are_a_ref_tree(switch):
    """The fact REF016 reads: nnx.split of a module holding refs gives states holding refs;
    converted to arrays (either API) they are not refs."""
    value = _grad_operand(_analysis(TRAIN.format(switch=switch, operand="params")))
    assert isinstance(value, RefVal) and value.tree == "state"
    for operand in ("nnx.with_vars(params, ref=False)", "nnx.to_arrays(params)"):
        value = _grad_operand(_analysis(TRAIN.format(switch=switch, operand=operand)))
        assert not list(iter_refs(value))


def test_refs_off_or_unknown_make_no_ref_tree():
    for switch in ("with nnx.var_defaults(ref=False):", "with nnx.var_defaults(hijax=True):",
                   "with nnx.var_defaults(ref=flag):", "if True:"):
        value = _grad_operand(_analysis(TRAIN.format(switch=switch, operand="params")))
        assert not list(iter_refs(value)), switch


def test_global_switch_decorator_and_explicit_variables():
    assert _codes("""
        nnx.var_defaults(ref=True)
        model = Linear(2, 3, rngs=None)
        jax.jit(lambda a, b: None)(model, model)
        """) == ["REF002"]
    assert _codes("""
        @nnx.var_defaults(ref=True)
        def make():
            return jax.jit(lambda: Linear(2, 3, rngs=None))()
        """) == ["REF001"]
    assert _codes("""
        v = nnx.Variable(jnp.zeros(3), ref=True)
        jax.jit(lambda a, b: None)(v, v)
        """) == ["REF002"]
    assert _codes("""
        v = nnx.Variable(jnp.zeros(3), ref=False)
        w = nnx.Variable(jnp.zeros(3))
        jax.jit(lambda a, b, c, d: None)(v, v, w, w)
        """) == []


def test_aliasing_inside_a_module_is_per_instance():
    """Two instances of one class are two sets of refs; one instance holding a Variable at two
    attributes is aliasing."""
    body = """
        class Pair(nnx.Pytree):
            def __init__(self, share):
                self.a = nnx.Variable(jnp.zeros(()))
                self.b = self.a if share else nnx.Variable(jnp.ones(()))

        with nnx.var_defaults(ref=True):
            p, q = Pair(False), Pair(False)

        jax.jit(lambda x, y: None)({args})
        """
    assert _codes(body.format(args="p, q")) == []
    assert _codes(body.format(args="p.a, q.a")) == []
    assert _codes(body.format(args="p, p.a")) == ["REF002"]


def test_nnx_transforms_semantics():
    """nnx.jit returns ref modules and takes one twice; it still rejects closed-over-and-passed
    refs; nnx.vmap rejects mapped writes to closed-over refs; attribute changes of NNX arguments
    are carried back by nnx.jit but lost under jax.jit."""
    assert _codes("""
        @nnx.jit
        def make():
            return Linear(2, 3, rngs=None)

        with nnx.var_defaults(ref=True):
            m = make()
        nnx.jit(lambda a, b: None)(m, m)
        """) == []
    assert _codes("""
        with nnx.var_defaults(ref=True):
            m = Linear(2, 3, rngs=None)
        nnx.jit(lambda a: m.bias[...].sum())(m)
        """) == ["REF003"]
    assert _codes("""
        with nnx.var_defaults(ref=True):
            m = Linear(2, 3, rngs=None)

        def f(x):
            m.bias[...] = x

        nnx.vmap(f)(jnp.ones((4, 3)))
        """) == ["REF005"]
    body = """
        with nnx.var_defaults(ref=True):
            m = Linear(2, 3, rngs=None)

        @{t}
        def f(model):
            model.count = 1

        f(m)
        """
    assert _codes(body.format(t="jax.jit")) == ["REF012"]
    assert _codes(body.format(t="nnx.jit")) == []
    # Returned, the changed object comes back (here JAX then rejects the returned refs).
    assert _codes(body.replace("model.count = 1", "model.count = 1\n            return model")
                  .format(t="jax.jit")) == ["REF001"]


def test_messages_speak_the_files_flax_api():
    body = """
        @jax.jit
        def make():
            return Linear(2, 3, rngs=None)

        {switch}
            m = make()
        """
    new = lint_source(HEAD + LINEAR + textwrap.dedent(body.format(
        switch="with nnx.var_defaults(ref=True):")), "t.py", Settings()).diagnostics
    old = lint_source(HEAD + LINEAR + textwrap.dedent(body.format(
        switch="with nnx.use_refs(True):")), "t.py", Settings()).diagnostics
    assert [d.code for d in new] == [d.code for d in old] == ["REF001"]
    assert "nnx.jit" in new[0].message and "nnx.var_defaults(ref=False)" in new[0].message
    assert "nnx.with_vars(model, ref=True)" in new[0].message
    assert "nnx.use_refs(False)" in old[0].message and "nnx.to_refs(model)" in old[0].message


def test_gate_sees_ref_keywords():
    """`nnx.Param(x, ref=True)` is the file's only ref source: the pre-filter keeps it, also
    through an alias the analysis resolves."""
    for source in (HEAD + "p = nnx.Param(jnp.zeros(3), ref=True)\njax.jit(lambda a, b: 0)(p, p)\n",
                   HEAD + "P = nnx.Param\np = P(jnp.zeros(3), ref=True)\n"
                   "jax.jit(lambda a, b: 0)(p, p)\n"):
        assert gate.verdict(source, {"REF002"}, (0, 10, 2)).refs
        assert [d.code for d in lint_source(source, "t.py", Settings()).diagnostics] == \
            ["REF002"]
    plain = HEAD + "p = nnx.Param(jnp.zeros(3))\njax.jit(lambda a, b: 0)(p, p)\n"
    assert not gate.verdict(plain, {"REF002"}, (0, 10, 2)).refs


flax = pytest.importorskip("flax")
NNX = importlib.import_module("flax.nnx")


def _exists(qualname: str) -> bool:
    module, _, name = qualname.rpartition(".")
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


def test_registry_names_match_the_installed_flax():
    """Every flax 0.12 spelling the registry knows exists in the installed flax (0.12.x); the
    seed's API (before 0.12) does not: the fixtures using it are static-only."""
    version = tuple(int(p) for p in flax.__version__.split(".")[:2])
    if version < (0, 12):  # pragma: no cover - the test extra installs flax 0.12.x
        pytest.skip(f"flax {flax.__version__}")
    names = [qn for a in api.APIS for qn in a.spellings if qn.startswith("flax.nnx.")]
    seed = {qn for a in api.APIS if a.seed_api for qn in a.spellings}
    top = [qn for qn in names if qn.count(".") == 2]  # flax.nnx.<name>
    missing = [qn for qn in top if qn not in seed and not _exists(qn)]
    assert not missing, missing
    present = [qn for qn in top if qn in seed and _exists(qn)]
    assert not present, present


def test_no_findings_on_installed_flax_nnx():
    """Flax's own NNX sources use refs, var_defaults and the NNX transforms correctly."""
    root = os.path.dirname(NNX.__file__)
    findings = []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    source = fh.read()
                findings += [f"{path}:{d.line}: {d.code} {d.message}"
                             for d in lint_source(source, path, Settings()).diagnostics]
    assert not findings, "\n".join(findings)


def test_refs_mode_follows_calls():
    """A plain helper runs with refs on only if every call of it does; a jitted function is
    traced with refs on by any call made with refs on (the seed's create_model)."""
    helper = """
        def create():
            return Linear(2, 3, rngs=None)

        with nnx.var_defaults(ref=True):
            m = create()

        @jax.jit
        def f():
            return create()

        f()
        """
    assert _codes(helper) == []
    jitted = """
        @jax.jit
        def create_model():
            return Linear(2, 3, rngs=None)

        with nnx.var_defaults(ref=True):
            m = create_model()
        with nnx.var_defaults(ref=False):
            m = create_model()
        """
    assert _codes(jitted) == ["REF001"]
    assert _codes(jitted.replace("(ref=True)", "(ref=False)")) == []
