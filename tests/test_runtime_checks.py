"""Unit tests for reflint.runtime: one test (or more) per check, by error class and code."""
# This file misuses refs on purpose, to trigger the runtime checks:
# reflint: skip-file

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reflint.runtime as rt
from reflint.codes import CODES, META_CODES
from reflint.runtime import errors


@pytest.fixture
def on():
    rt.install()
    try:
        yield
    finally:
        rt.uninstall()


def _raises(cls):
    return pytest.raises(cls, match=rf"^{cls.code} {cls.name}: ")


# ---------------------------------------------------------------- error classes

def test_one_class_per_code_with_code_and_name():
    for code, cls in rt.ERROR_CLASSES.items():
        assert issubclass(cls, rt.RefError)
        assert cls.code == code and cls.name == CODES[code]
        assert str(cls("x")).startswith(f"{code} {CODES[code]}: ")
    assert set(rt.ERROR_CLASSES) == {c for c in CODES if c not in META_CODES}


def test_not_enforceable_is_one_place_with_reasons():
    assert set(rt.NOT_ENFORCEABLE) <= set(rt.ERROR_CLASSES)
    assert all(isinstance(v, str) and v for v in rt.NOT_ENFORCEABLE.values())


def test_import_changes_nothing():
    assert jax.new_ref is rt._api.new_ref
    assert not rt.is_installed()


def test_install_uninstall_restores_everything():
    before = {n: getattr(jax, n) for n in ("new_ref", "freeze", "jit", "vmap", "checkpoint")}
    ar_dict = dict(jax.ref.AbstractRef.__dict__)
    ref_dict = dict(jax.Ref.__dict__)
    rt.install()
    rt.install()
    assert jax.new_ref is not before["new_ref"]
    rt.uninstall()
    assert rt.is_installed()
    rt.uninstall()
    assert {n: getattr(jax, n) for n in before} == before
    assert dict(jax.ref.AbstractRef.__dict__) == ar_dict
    assert dict(jax.Ref.__dict__) == ref_dict


# ---------------------------------------------------------------- REF001/002/003 (translated)

def test_ref001_return(on):
    r = jax.new_ref(0.)
    with _raises(rt.RefReturned) as ei:
        jax.jit(lambda r: r)(r)
    assert isinstance(ei.value.__cause__, ValueError)
    assert "cannot be returned" in str(ei.value)


def test_ref001_scan_body_returns_ref(on):
    @jax.jit
    def f(x):
        def body(c, _):
            return c, jax.new_ref(c)
        return jax.lax.scan(body, x, jnp.arange(3.))
    with _raises(rt.RefReturned):
        f(1.)


def test_ref002_twice(on):
    r = jax.new_ref(0.)
    with _raises(rt.RefPassedTwice):
        jax.jit(lambda a, b: None)(r, r)


def test_ref003_closed_and_passed(on):
    r = jax.new_ref(0.)

    def f(a):
        a[...] = r[...]
    with _raises(rt.RefClosedOverAndPassed):
        jax.jit(f)(r)


# ---------------------------------------------------------------- REF004

def test_ref004_freeze_jit_arg(on):
    r = jax.new_ref(0.)
    with _raises(rt.FreezeOutsideCreationScope):
        jax.jit(lambda r: jax.freeze(r))(r)


def test_ref004_freeze_closed_over_in_jit(on):
    r = jax.new_ref(0.)
    with _raises(rt.FreezeOutsideCreationScope):
        jax.jit(lambda: jax.freeze(r))()


def test_ref004_scan_body_freezes_outer_ref(on):
    @jax.jit
    def f(x):
        r = jax.new_ref(x)

        def body(c, _):
            return c + jax.freeze(r), None
        return jax.lax.scan(body, 0., jnp.arange(2.))[0]
    with _raises(rt.FreezeOutsideCreationScope):
        f(1.)


def test_ref004_freeze_in_creation_scope_ok(on):
    @jax.jit
    def f(x):
        r = jax.new_ref(x)
        r[...] += 1.
        return jax.freeze(r)
    assert float(f(1.)) == 2.
    assert float(jax.grad(f)(1.)) == 1.
    r = jax.new_ref(3.)
    assert float(jax.freeze(r)) == 3.


def test_ref004_freeze_inside_vmap_of_internal_ref_ok(on):
    def f(x):
        r = jax.new_ref(0.)
        r[...] += x
        return jax.freeze(r)
    assert jax.vmap(f)(jnp.arange(3.)).tolist() == [0., 1., 2.]


# ---------------------------------------------------------------- REF005

def test_ref005_vmap_closed_write(on):
    r = jax.new_ref(0.)

    def f(x):
        r[...] = x
    with _raises(rt.MappedWriteToClosedOverRef):
        jax.vmap(f)(jnp.arange(3.))


def test_ref005_vmap_unbatched_closed_write(on):
    r = jax.new_ref(0.)

    def f(x):
        r[...] = 1.
    with _raises(rt.MappedWriteToClosedOverRef):
        jax.vmap(f)(jnp.arange(3.))


def test_ref005_vmap_write_closed_ref_created_in_jit(on):
    @jax.jit
    def f(xs):
        r = jax.new_ref(0.)

        def g(x):
            r[...] += x
        jax.vmap(g)(xs)
        return r[...]
    with _raises(rt.MappedWriteToClosedOverRef):
        f(jnp.arange(3.))


def test_ref005_addupdate_api(on):
    r = jax.new_ref(0.)
    with _raises(rt.MappedWriteToClosedOverRef):
        jax.vmap(lambda x: jax.ref.addupdate(r, (), x))(jnp.arange(3.))


def test_ref005_shard_map_closed_write(on):
    mesh = jax.make_mesh((1,), ("i",))
    P = jax.sharding.PartitionSpec
    r = jax.new_ref(0.)

    def f(x):
        r[...] += jnp.sum(x)
        return x
    g = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P(), out_specs=P()))
    with _raises(rt.MappedWriteToClosedOverRef):
        g(jnp.arange(4.))


def test_ref005_pmap_closed_write(on):
    r = jax.new_ref(0.)

    def f(x):
        r[...] += jnp.sum(x)
        return x
    with _raises(rt.MappedWriteToClosedOverRef):
        jax.pmap(f)(jnp.ones((1, 3)))


def test_vmap_ref_args_and_reads_ok(on):
    r = jax.new_ref(jnp.zeros(3))
    c = jax.new_ref(2.)

    def f(x, out):
        out[...] = x * c[...]
    jax.vmap(f)(jnp.arange(3.), r)
    assert r[...].tolist() == [0., 2., 4.]


def test_vmap_internal_ref_and_inner_jit_arg_ok(on):
    @jax.jit
    def add1(q):
        q[...] += 1.

    def f(x):
        q = jax.new_ref(x)
        add1(q)
        return q[...]
    assert jax.vmap(f)(jnp.arange(3.)).tolist() == [1., 2., 3.]


# ---------------------------------------------------------------- REF006

def test_ref006_checkpoint_writes_closed_ref(on):
    r = jax.new_ref(0.)

    def f(x):
        r[...] += 1.
        return jnp.sin(x)
    with _raises(rt.RematOfImpureFunction):
        jax.grad(jax.checkpoint(f))(1.)


def test_ref006_remat_writes_arg_ref_no_grad(on):
    r = jax.new_ref(0.)

    def f(x, r):
        r[...] += x
        return x
    with _raises(rt.RematOfImpureFunction):
        jax.jit(jax.remat(f))(1., r)


def test_checkpoint_pure_internal_ref_and_reads_ok(on):
    c = jax.new_ref(2.)

    def f(x):
        q = jax.new_ref(x)
        q[...] = q[...] * c[...]
        return jnp.sin(q[...])
    g = jax.grad(jax.checkpoint(f))(1.)
    assert np.isclose(float(g), 2 * np.cos(2.))


@pytest.mark.skipif("kind" not in inspect.signature(jax.new_ref).parameters,
                    reason="kind= is JAX 0.10+")
def test_checkpoint_no_grad_no_remat_ref_ok(on):
    r = jax.new_ref(0., kind="no_grad_no_remat")

    def f(x):
        r[...] += 1.
        return jnp.sin(x)
    jax.grad(jax.checkpoint(f))(1.)
    assert float(r[...]) == 1.


# ---------------------------------------------------------------- REF007

@pytest.mark.parametrize("expr", [
    lambda r: r + 1, lambda r: 1 + r, lambda r: r * r, lambda r: -r, lambda r: r > 0,
    lambda r: r == 0, lambda r: r.sum(), lambda r: r.astype(jnp.int32), lambda r: float(r),
    lambda r: np.asarray(r), lambda r: jnp.asarray(r), lambda r: jnp.sin(r),
    lambda r: jax.lax.stop_gradient(r), lambda r: jnp.ones(()) + r,
], ids=["add", "radd", "mul", "neg", "gt", "eq", "sum", "astype", "float", "np.asarray",
        "jnp.asarray", "jnp.sin", "stop_gradient", "array+ref"])
@pytest.mark.parametrize("where", ["top", "jit"])
def test_ref007_math_on_unread_ref(on, expr, where):
    r = jax.new_ref(1.)
    with _raises(rt.RefUsedAsArray):
        with rt.checks():
            if where == "top":
                expr(r)
            else:
                jax.jit(lambda r: expr(r))(r)


def test_ref_equality_with_ref_is_identity(on):
    r, s = jax.new_ref(0.), jax.new_ref(0.)
    assert r == r and r != s and len({id(r), id(s)}) == 2
    assert hash(r) == hash(r)


def test_ref_metadata_still_works(on):
    r = jax.new_ref(jnp.zeros((2, 3)))
    assert r.shape == (2, 3) and r.dtype == jnp.float32 and len(r) == 2

    @jax.jit
    def f(r):
        assert r.T.shape == (3, 2)  # a legal transformed-ref view inside jit
        r[...] = jnp.ones((2, 3))
        return r.ndim
    assert int(f(r)) == 2
    assert r[...].tolist() == [[1.] * 3] * 2


# ---------------------------------------------------------------- REF008, REF011

def test_ref008_differentiated_write(on):
    r = jax.new_ref(0.)

    def f(x, r):
        r[...] += x * 2
        return x
    with _raises(rt.DifferentiatedValueWrittenToRef):
        jax.grad(f)(1., r)


def test_ref008_stop_gradient_ok(on):
    r = jax.new_ref(0.)

    def f(x, r):
        r[...] += jax.lax.stop_gradient(x * 2)
        return x
    assert float(jax.grad(f)(1., r)) == 1. and float(r[...]) == 2.


def test_ref011_fwd_returns_created_ref(on):
    @jax.custom_vjp
    def f(x):
        return x

    def fwd(x):
        return x, jax.new_ref(x)

    def bwd(res, g):
        return (g,)
    f.defvjp(fwd, bwd)
    with _raises(rt.CustomVjpFwdForeignRef):
        jax.grad(f)(1.)


# ---------------------------------------------------------------- REF009, REF010

def test_ref009_top(on):
    r = jax.new_ref(0.)
    with _raises(rt.RefOfRef):
        jax.new_ref(r)


def test_ref009_jit(on):
    with _raises(rt.RefOfRef):
        jax.jit(lambda x: jax.new_ref(jax.new_ref(x))[...][...])(1.)


@pytest.mark.parametrize("use", [
    lambda r: r[...], lambda r: r.__setitem__(..., 1.), lambda r: jax.freeze(r),
    lambda r: jax.ref.get(r, ()), lambda r: jax.ref.swap(r, (), 2.),
    lambda r: jax.ref.addupdate(r, (), 1.), lambda r: jax.ref.set(r, (), 1.),
    lambda r: jax.jit(lambda q: q[...])(r),
], ids=["read", "write", "freeze", "get", "swap", "addupdate", "set", "pass-to-jit"])
def test_ref010_use_after_freeze_top(on, use):
    r = jax.new_ref(0.)
    jax.freeze(r)
    with _raises(rt.UseAfterFreeze):
        use(r)


@pytest.mark.parametrize("use", [lambda r: r[...], lambda r: r.__setitem__(..., 1.)],
                         ids=["read", "write"])
def test_ref010_use_after_freeze_jit(on, use):
    @jax.jit
    def f(x):
        r = jax.new_ref(x)
        y = jax.freeze(r)
        use(r)
        return y
    with _raises(rt.UseAfterFreeze):
        f(1.)


# ---------------------------------------------------------------- REF013, REF014 (translated)

def test_ref013_array_item_assignment_translated():
    x = jnp.zeros(3)
    with _raises(rt.ArrayItemAssignment):
        with rt.checks():
            x[0] = 1.


def test_ref014_donated_ref_with_output_translated(on):
    r = jax.new_ref(jnp.zeros(3))

    def f(r):
        r[...] += 1.
        return r[...] * 2
    with _raises(rt.RedundantDonation):
        jax.jit(f, donate_argnums=0)(r)


# ---------------------------------------------------------------- primitives without install

def test_primitives_check_without_install():
    assert not rt.is_installed()
    r = rt.new_ref(jnp.zeros(2))
    rt.set(r, (0,), 1.)
    rt.addupdate(r, (1,), 2.)
    assert rt.swap(r, (), jnp.ones(2)).tolist() == [1., 2.]
    assert rt.get(r, ()).tolist() == [1., 1.]
    assert rt.freeze(r).tolist() == [1., 1.]
    with _raises(rt.UseAfterFreeze):
        rt.get(r, ())
    with _raises(rt.RefOfRef):
        rt.new_ref(rt.new_ref(0.))
    if rt.API_NAMES["empty_ref"]:  # JAX >= 0.10; no eager rule, so inside jit
        @jax.jit
        def f():
            e = rt.empty_ref(jax.ShapeDtypeStruct((2,), jnp.float32))
            e[...] = jnp.ones(2)
            return rt.freeze(e)
        assert f().tolist() == [1., 1.]


def test_translate_keeps_unrelated_errors():
    assert errors.translate(ValueError("something else")) is None
    err = errors.translate(TypeError("unsupported operand type(s) for +: 'Ref' and 'int'"))
    assert isinstance(err, rt.RefUsedAsArray)


# ---------------------------------------------------------------- REF016 / REF017 (both lines)

NEW_JAX = tuple(int(p) for p in jax.__version__.split(".")[:2]) >= (0, 11)


def test_install_uninstall_restores_vjp_class():
    cls = rt._api.VJP
    before = dict(cls.__dict__)
    rt.install()
    assert cls.__dict__["__call__"] is not before["__call__"]
    rt.uninstall()
    assert dict(cls.__dict__) == before


@pytest.mark.parametrize("call", [
    lambda r: jax.grad(lambda w: w[...] ** 2)(r),
    lambda r: jax.grad(lambda x, w: x * w[...], argnums=1)(1., r),
    lambda r: jax.grad(lambda x, w: x * w[...], 1)(1., r),
    lambda r: jax.grad(lambda x, w: x * w[...], argnums=(0, 1))(1., r),
    lambda r: jax.grad(lambda x, w: x * w[...], argnums=-1)(1., r),
    lambda r: jax.value_and_grad(lambda w: w[...] ** 2)(r),
    lambda r: jax.grad(lambda p: p["w"][...] ** 2)({"w": r}),
    lambda r: jax.jacrev(lambda w: w[...] ** 2)(r),
    lambda r: jax.jacfwd(lambda w: w[...] ** 2)(r),
    lambda r: jax.hessian(lambda w: w[...] ** 3)(r),
    lambda r: jax.jit(jax.grad(lambda w: w[...] ** 2))(r),
    lambda r: jax.jvp(lambda w: w[...] ** 2, (r,), (1.,)),
], ids=["grad", "argnums1", "argnums_positional", "argnums_tuple", "argnums_negative",
        "value_and_grad", "dict", "jacrev", "jacfwd", "hessian", "jit_of_grad", "jvp"])
def test_ref016_differentiating_a_ref(on, call):
    with _raises(rt.GradWithRespectToRef):
        call(jax.new_ref(2.))


def test_ref016_names_the_argument_and_path(on):
    with pytest.raises(rt.GradWithRespectToRef, match=r"argument 1 \(at \['w'\]\)"):
        jax.grad(lambda x, p: x * p["w"][...], argnums=1)(1., {"w": jax.new_ref(2.)})


def test_ref016_refs_outside_argnums_ok(on):
    r = jax.new_ref(3.)
    assert float(jax.grad(lambda x, w: x * w[...])(2., r)) == 3.
    v, g = jax.value_and_grad(lambda x, w, b: x * w[...] + b, argnums=(0, 2))(2., r, 1.)
    assert float(v) == 7. and [float(x) for x in g] == [3., 1.]
    assert float(jax.grad(lambda x: x * r[...])(2.)) == 3.
    assert float(jax.grad(lambda w: w ** 2)(r[...])) == 6.
    assert float(jax.grad(lambda x, *, w: x * w[...])(2., w=r)) == 3.


def test_ref017_vjp_applied_directly(on):
    _, f_vjp = jax.vjp(lambda w: w[...] ** 2, jax.new_ref(2.))
    with _raises(rt.VjpOfRefWithoutWithRefs):
        f_vjp(1.)


def test_ref017_vjp_applied_directly_in_jit(on):
    @jax.jit
    def step(w_ref):
        _, f_vjp = jax.vjp(lambda w: w[...] ** 2, w_ref)
        return f_vjp(1.)
    with _raises(rt.VjpOfRefWithoutWithRefs):
        step(jax.new_ref(2.))


@pytest.mark.parametrize("entries", [
    lambda: (jax.new_ref(0.), jax.new_ref(0.)), lambda: (None,), lambda: ({"w": jax.new_ref(0.)},),
], ids=["two_for_one", "none_placeholder", "dict_for_leaf"])
def test_ref017_with_refs_structure(on, entries):
    _, f_vjp = jax.vjp(lambda w: w[...] ** 2, jax.new_ref(2.))
    with pytest.raises(rt.VjpOfRefWithoutWithRefs, match="with_refs got"):
        f_vjp.with_refs(*entries())


def test_ref017_with_refs_gradvalue_for_a_ref(on):
    _, f_vjp = jax.vjp(lambda w: w[...] ** 2, jax.new_ref(2.))
    with _raises(rt.VjpOfRefWithoutWithRefs):
        f_vjp.with_refs(jax.ad.GradValue())(1.)


def test_with_refs_for_a_ref_primal_by_version(on):
    """The docs' way: works on JAX >= 0.11; 0.10.2 cannot differentiate w.r.t. a Ref (REF016)."""
    g_ref = jax.new_ref(100.)
    _, f_vjp = jax.vjp(lambda w: w[...] ** 2, jax.new_ref(2.))
    if NEW_JAX:
        f_vjp.with_refs(g_ref)(1.)
        assert float(g_ref[...]) == 104.
    else:
        with pytest.raises(rt.GradWithRespectToRef, match="need JAX >= 0.11"):
            f_vjp.with_refs(g_ref)(1.)


def test_with_refs_value_primals_ok(on):
    """Docs examples over Array primals: fine on both lines; the bound function is a pytree."""
    take = jax.jit(lambda x, i: x[i])
    grad_ref = jax.new_ref(jnp.zeros(4))
    for i in (1, 3, 1):
        _, take_vjp = jax.vjp(take, jnp.arange(4.), i)
        take_vjp.with_refs(grad_ref, jax.ad.GradValue())(1.)
    assert grad_ref[...].tolist() == [0., 2., 0., 1.]
    _, f_vjp = jax.vjp(lambda W, x: W @ x, jnp.ones((2, 2)), jnp.ones(2))
    bound = f_vjp.with_refs(jax.ad.GradValue(), jax.ad.DontWant())
    assert isinstance(bound, jax.tree_util.Partial)  # like JAX's own
    W_bar, x_bar = bound(jnp.ones(2))
    assert W_bar.shape == (2, 2) and type(x_bar).__name__ == "DidntWant"
    _, r_vjp = jax.vjp(lambda w: w[...] ** 2, jax.new_ref(2.))
    assert type(r_vjp.with_refs(jax.ad.DontWant())(1.)[0]).__name__ == "DidntWant"


@pytest.mark.parametrize("message,code", [
    # JAX 0.11.2 / 0.12.0.1
    ("grad cannot differentiate with respect to a Ref-typed argument, because the gradient "
     "for a ref must itself be accumulated into a ref.", "REF016"),
    ("jacrev cannot differentiate with respect to a Ref-typed argument, because ...", "REF016"),
    ("the argument at position args[0] of the differentiated function f at x.py:3 is "
     "Ref-typed, so its gradient must be accumulated into a ref, but no gradient ref was "
     "provided.", "REF017"),
    ("the gradient for the argument at position args[0] of the differentiated function f at "
     "x.py:3, which is Ref-typed, can't be returned as a value.", "REF017"),
    ("unexpected tree structure in the arguments to a VJP function's `with_refs` method.",
     "REF017"),
    ("sin got a Ref of type Ref{float32[2,2]} at position 0, but a Ref can't be passed where "
     "an array is expected. Did you forget to read its value with `ref[...]`?", "REF007"),
    ("jnp.asarray got a Ref of type Ref{float32[2]}, but a Ref can't be passed where an array "
     "is expected. Did you forget to read its value with `ref[...]`?", "REF007"),
    # JAX 0.10.2
    ("Expected cotangent type Ref{float32[]} but got float32[]", "REF016"),
    ("linearized function called on tangent values inconsistent with the original primal "
     "values:\nGot tangent aval ~float32[] for primal aval Ref{float32[]} but expected "
     "Ref{float32[]}.", "REF016"),
])
def test_translate_jax_011_012_messages(message, code):
    err = errors.translate(ValueError(message))
    assert err is not None and err.code == code


def test_parse_version_four_parts():
    from reflint.settings import parse_version
    assert parse_version("0.12.0.1") == (0, 12, 0, 1) > parse_version("0.12") == (0, 12, 0)
    with pytest.raises(ValueError):
        parse_version("0.12.0.1.2")


def test_optimization_barrier_over_refs_by_version(on):
    """Valid from JAX 0.11 on (returns the same ref); JAX 0.10.2 fails with a bare
    AssertionError, which reflint reports as REF007."""
    r = jax.new_ref(jnp.ones(2))
    if NEW_JAX:
        y, r2 = jax.lax.optimization_barrier((jnp.zeros(2), r))
        assert r2 is r
    else:
        with _raises(rt.RefUsedAsArray):
            jax.lax.optimization_barrier((jnp.zeros(2), r))
    assert float(jax.lax.optimization_barrier(jnp.ones(()))) == 1.
