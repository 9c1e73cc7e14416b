"""Checked ref primitives, wrapped transforms, and install()/uninstall().

Design: refs are never proxied.  JAX's own objects (``jax.Ref`` at top level,
tracers inside transforms) are returned unchanged; metadata lives on the side
in an identity-keyed registry whose entries die with the ref (weakref
callbacks).  Scopes come from JAX's own trace state (``core.trace_ctx.trace``)
plus two small stacks kept by the wrapped vmap/pmap/shard_map and
checkpoint/remat.  All checks run in Python at trace time or in the call
wrapper, never inside compiled code.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import jax
import numpy as np

from reflint import api as static_api
from reflint.runtime import _api
from reflint.runtime.errors import (
    REF016_ADVICE,
    AccumulatedWithoutInit,
    InputRefWritten,
    ClosedOverRefReboundAfterTrace,
    FreezeOutsideCreationScope,
    GradWithRespectToRef,
    MappedWriteToClosedOverRef,
    RefError,
    RefOfRef,
    OutputRefRebound,
    RefUsedAsArray,
    RematOfImpureFunction,
    UseAfterFreeze,
    VjpOfRefWithoutWithRefs,
    translate,
)

_MISSING = object()
# JAX before 0.11 (measured: docs/jax-versions.md): no Ref support in optimization_barrier.
_OLD_JAX = tuple(int(p) for p in jax.__version__.split(".")[:2] if p.isdigit()) < (0, 11)
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_JAX_DIR = os.path.dirname(os.path.abspath(jax.__file__))


# --------------------------------------------------------------------------- registry

class _Meta:
    __slots__ = ("scope", "maps", "remats", "frozen", "site")

    def __init__(self, scope: Any, maps: tuple, remats: tuple, site: str):
        self.scope = scope
        self.maps = maps
        self.remats = remats
        self.frozen = False
        self.site = site


class _Registry:
    """id(ref) -> (weakref or strong ref, _Meta); an entry is dropped when its ref dies."""

    def __init__(self) -> None:
        self._d: dict[int, tuple[Callable[[], Any], _Meta]] = {}
        self.frozen_top = 0  # top-level refs frozen so far (enables the jit-call check)

    def add(self, obj: Any, meta: _Meta) -> None:
        key = id(obj)
        d = self._d
        try:
            wr: Callable[[], Any] = weakref.ref(obj, lambda _w, key=key, d=d: d.pop(key, None))
        except TypeError:  # not weakref-able in this JAX version: keep it alive instead
            wr = (lambda o: (lambda: o))(obj)
        d[key] = (wr, meta)

    def get(self, obj: Any) -> _Meta | None:
        entry = self._d.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def clear(self) -> None:
        self._d.clear()
        self.frozen_top = 0


REGISTRY = _Registry()


class _Scope:
    """One active vmap/pmap/shard_map body or checkpoint/remat body."""

    __slots__ = ("kind", "fname", "trace", "args", "outer", "__weakref__")

    def __init__(self, kind: str, fname: str, trace: Any, args: list, outer: set[int]):
        self.kind = kind
        self.fname = fname
        self.trace = trace
        self.args = args
        self.outer = outer


class _Stacks(threading.local):
    def __init__(self) -> None:
        self.maps: list[_Scope] = []
        self.remats: list[_Scope] = []


STACKS = _Stacks()


def _user_site() -> str:
    """file:line of the innermost frame outside reflint.runtime and jax."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_PKG_DIR) or fn.startswith(_JAX_DIR) or "<frozen" in fn
                or fn.endswith(("contextlib.py", "functools.py"))):
            return f"{fn}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


def _describe(ref: Any, meta: _Meta | None) -> str:
    aval = getattr(ref, "aval", None)
    ty = aval.str_short() if hasattr(aval, "str_short") else type(ref).__name__
    where = f" created at {meta.site}" if meta is not None else ""
    return f"ref of type {ty}{where}"


def _parent_chain(trace: Any) -> set[int]:
    out: set[int] = set()
    t = getattr(trace, "parent_trace", None)
    while t is not None and len(out) < 256:
        out.add(id(t))
        t = getattr(t, "parent_trace", None)
    return out


# --------------------------------------------------------------------------- checks

def _is_foreign(ref: Any, meta: _Meta | None, scope: _Scope, created_in: tuple,
                args_ok: bool = True) -> bool:
    """True when `ref` was not created inside `scope` (nor passed to it, when `args_ok`)."""
    if any(a is ref for a in scope.args):
        return not args_ok
    if meta is not None:
        return scope not in created_in
    if _api.is_tracer(ref):
        return id(getattr(ref, "_trace", None)) in scope.outer
    return True  # a top-level Ref that the body closes over


def check_access(ref: Any, write: bool, op: str) -> None:
    """Run the use-after-freeze, mapped-write and remat-write checks for one access."""
    meta = REGISTRY.get(ref)
    if meta is not None and meta.frozen:
        raise UseAfterFreeze(
            f"{op} of a {_describe(ref, meta)} after jax.freeze(...) invalidated it. "
            "Freeze a ref only after its last read or write, and use the frozen value instead.")
    if not write:
        return
    st = STACKS
    if st.maps:
        sc = st.maps[-1]
        if _is_foreign(ref, meta, sc, meta.maps if meta is not None else ()):
            raise MappedWriteToClosedOverRef(
                f"{op} to a {_describe(ref, meta)} that the {sc.kind}-mapped function "
                f"{sc.fname} closes over: which mapped instance's value should it hold? Pass the "
                f"ref as an argument of the mapped function (with a mapped axis, e.g. "
                f"in_axes=0), or write to it outside the {sc.kind}.")
    if st.remats:
        sc = st.remats[-1]
        kind = getattr(getattr(ref, "aval", None), "kind", None)
        if kind != "no_grad_no_remat" and _is_foreign(
                ref, meta, sc, meta.remats if meta is not None else (), args_ok=False):
            raise RematOfImpureFunction(
                f"{op} to a {_describe(ref, meta)} inside {sc.kind}-ed function {sc.fname}, "
                "which did not create it. Under jax.grad the backward pass replays the "
                "function, so the write happens twice (JAX >= 0.9 does this silently). Move the "
                "write outside the rematerialized function, or create the ref with "
                "jax.new_ref(..., kind='no_grad_no_remat') (JAX >= 0.10).")


def _register_new(ref: Any) -> None:
    st = STACKS
    REGISTRY.add(ref, _Meta(_api.current_trace(), tuple(st.maps), tuple(st.remats),
                            _user_site()))


def new_ref(init_val: Any, **kwargs: Any) -> Any:
    """Checked ``jax.new_ref``: REF009 for a ref of a ref; records the creation scope."""
    if _api.new_ref is None:
        raise NotImplementedError("this JAX version has no mutable array refs")
    if _api.is_ref(init_val):
        raise RefOfRef(
            "jax.new_ref(x) was called with x itself a ref; refs of refs are not supported "
            "(JAX fails later with an internal error). Pass x[...] to copy the value into a "
            "new ref, or use x directly.")
    ref = _api.new_ref(init_val, **kwargs)
    _register_new(ref)
    return ref


def empty_ref(*args: Any, **kwargs: Any) -> Any:
    """Checked ``jax.empty_ref`` (JAX >= 0.10 only)."""
    if _api.empty_ref is None:
        raise NotImplementedError("jax.empty_ref does not exist in JAX " + jax.__version__)
    ref = _api.empty_ref(*args, **kwargs)
    _register_new(ref)
    return ref


# Traces that JAX lets a freeze cross (measured on 0.10.2: vmap of a ref argument or of a
# closed-over ref, grad/jvp/vjp of a closure freezing an outer ref): the freeze is judged in
# the trace the transform was applied in.  Staging traces (jit, scan, cond, ...) are not here.
_TRANSPARENT_TRACES = frozenset({"BatchTrace", "JVPTrace", "LinearizeTrace"})


def _peel_transparent(ref: Any, cur: Any) -> tuple[Any, Any]:
    """Strip vmap/autodiff traces: (the ref as seen by the enclosing trace, that trace)."""
    for _ in range(256):
        if type(cur).__name__ not in _TRANSPARENT_TRACES:
            break
        parent = getattr(cur, "parent_trace", None)
        if parent is None:
            break
        if _api.is_tracer(ref) and getattr(ref, "_trace", None) is cur:
            inner = getattr(ref, "val", _MISSING)
            if inner is _MISSING:
                inner = getattr(ref, "primal", _MISSING)
            if inner is _MISSING:
                break
            ref = inner
        cur = parent
    return ref, cur


def freeze(ref: Any) -> Any:
    """Checked ``jax.freeze``: REF004 outside the creation scope, REF010 when frozen twice."""
    meta = REGISTRY.get(ref)
    if meta is not None and meta.frozen:
        raise UseAfterFreeze(
            f"jax.freeze of a {_describe(ref, meta)} that was already frozen. Freeze each ref "
            "once and keep the returned Array.")
    cur = _api.current_trace()
    if cur is not None and _api.is_ref(ref):
        base, cur_base = _peel_transparent(ref, cur)
        base_meta = meta if base is ref else REGISTRY.get(base)
        if base_meta is not None:
            outside = base_meta.scope is not cur_base
        else:
            outside = not _api.is_eval_trace(cur_base)
        if outside:
            raise FreezeOutsideCreationScope(
                f"jax.freeze was called on a {_describe(ref, meta)} outside the trace that "
                "created it (a jit argument, a ref closed over by jit, or an outer ref frozen "
                "in a scan/cond/vmap body). Freeze only where the ref was created; elsewhere "
                "read its value with x_ref[...].")
    out = _api.freeze(ref)
    if meta is None:
        meta = _Meta(cur, (), (), _user_site())
        REGISTRY.add(ref, meta)
    meta.frozen = True
    if not _api.is_tracer(ref):
        REGISTRY.frozen_top += 1
    return out


def get(ref: Any, idx: Any = (), *args: Any, **kwargs: Any) -> Any:
    """Checked ``jax.ref.get``."""
    check_access(ref, False, "read")
    return _api.get(ref, idx, *args, **kwargs)


def swap(ref: Any, idx: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    """Checked ``jax.ref.swap``."""
    check_access(ref, True, "swap")
    return _api.swap(ref, idx, value, *args, **kwargs)


def ref_set(ref: Any, idx: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    """Checked ``jax.ref.set`` (exported as ``reflint.runtime.set``)."""
    check_access(ref, True, "write")
    return _api.set_(ref, idx, value, *args, **kwargs)


def addupdate(ref: Any, idx: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    """Checked ``jax.ref.addupdate``."""
    check_access(ref, True, "add-update")
    return _api.addupdate(ref, idx, value, *args, **kwargs)


# --------------------------------------------------------------------------- REF007

def _ref007(what: str) -> RefUsedAsArray:
    return RefUsedAsArray(
        f"{what} was applied to a ref, not an Array. Read the ref first: x_ref[...] (or "
        "x_ref[idx]) gives an Array to do math on.")


_BINOPS = ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
           "rfloordiv", "mod", "rmod", "divmod", "rdivmod", "pow", "rpow", "matmul", "rmatmul",
           "and", "rand", "or", "ror", "xor", "rxor", "lshift", "rlshift", "rshift", "rrshift",
           "lt", "le", "gt", "ge")
_UNOPS = ("neg", "pos", "abs", "invert", "float", "int", "complex")
_EQOPS = ("eq", "ne")
_ARRAY_METHODS = ("sum", "mean", "prod", "max", "min", "all", "any", "argmax", "argmin",
                  "astype", "item", "tolist", "cumsum", "cumprod", "dot", "std", "var", "clip",
                  "round", "ravel", "flatten", "squeeze", "conj", "nonzero", "sort", "argsort")
_SYMBOL = {"add": "+", "radd": "+", "sub": "-", "rsub": "-", "mul": "*", "rmul": "*",
           "truediv": "/", "rtruediv": "/", "floordiv": "//", "rfloordiv": "//", "mod": "%",
           "rmod": "%", "pow": "**", "rpow": "**", "matmul": "@", "rmatmul": "@", "lt": "<",
           "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "neg": "unary -",
           "pos": "unary +", "abs": "abs()", "invert": "~", "and": "&", "rand": "&", "or": "|",
           "ror": "|", "xor": "^", "rxor": "^"}


def _is_array_like(x: Any) -> bool:
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic, jax.Array)):
        return not _api.is_ref(x)
    return False


def _top_dunder(name: str) -> Callable[..., Any]:
    what = f"operator {_SYMBOL.get(name, name + '()')}"
    if name in _EQOPS:
        def cmp(self: Any, other: Any) -> Any:
            if _is_array_like(other):
                raise _ref007(what + " (which silently compares identity for refs)")
            return NotImplemented
        return cmp

    def op(self: Any, *args: Any) -> Any:
        raise _ref007(what)
    return op


def _top_method(name: str) -> Callable[..., Any]:
    def meth(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise _ref007(f".{name}()")
    meth.__name__ = name
    return meth


def _aval_dunder(name: str) -> Callable[..., Any]:
    what = f"operator {_SYMBOL.get(name, name + '()')}"

    def op(self: Any, tracer: Any, *args: Any) -> Any:
        raise _ref007(what)
    return op


def _aval_method(name: str) -> Any:
    def meth(tracer: Any, *args: Any, **kwargs: Any) -> Any:
        raise _ref007(f".{name}()")
    return _api.aval_method(meth) if _api.aval_method is not None else None


def _guard_first(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(x: Any, *args: Any, **kwargs: Any) -> Any:
        if _api.is_ref(x):
            raise _ref007(what)
        return fn(x, *args, **kwargs)
    return guarded


def _guard_tree(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(x: Any, *args: Any, **kwargs: Any) -> Any:
        if any(_api.is_ref(leaf) for leaf in jax.tree_util.tree_leaves(x)):
            raise _ref007(what)
        return fn(x, *args, **kwargs)
    return guarded


# --------------------------------------------------------------------------- transforms

def _reraise(e: Exception) -> None:
    err = translate(e)
    if err is None or err is e:
        raise e
    raise err.with_traceback(e.__traceback__) from e


def _translating(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RefError:
            raise
        except Exception as e:  # noqa: BLE001 - translated or re-raised unchanged
            _reraise(e)
    return call


def _fname(fun: Any) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)


def _scoped(fun: Callable[..., Any], kind: str, stack: str) -> Callable[..., Any]:
    """Wrap a transform's body so checks know they run inside it."""
    fname = _fname(fun)

    @functools.wraps(fun)
    def body(*args: Any, **kwargs: Any) -> Any:
        cur = _api.current_trace()
        leaves = jax.tree_util.tree_leaves((args, kwargs))
        sc = _Scope(kind, fname, cur, [x for x in leaves if _api.is_ref(x)], _parent_chain(cur))
        lst = getattr(STACKS, stack)
        lst.append(sc)
        try:
            return fun(*args, **kwargs)
        finally:
            lst.pop()
    return body


_JIT_ATTRS = ("lower", "trace", "eval_shape", "clear_cache", "_cache_size", "_fun",
              "_cache_miss", "_clear_cache")


def _check_frozen_args(args: tuple, kwargs: dict) -> None:
    for leaf in jax.tree_util.tree_leaves((args, kwargs)):
        if _api.Ref is not None and type(leaf) is _api.Ref:
            meta = REGISTRY.get(leaf)
            if meta is not None and meta.frozen:
                raise UseAfterFreeze(
                    f"a {_describe(leaf, meta)} was passed to a jit-compiled function after "
                    "jax.freeze(...) invalidated it. Pass the frozen Array instead, or freeze "
                    "later.")


def _free_names(fun: Any) -> tuple:
    """The global names read by ``fun``'s code (and the code nested in it), and its
    closure's (name, cell) pairs: where a closed-over ref can come from (REF024)."""
    code = getattr(fun, "__code__", None)
    if code is None:
        return (), ()
    names: set = set()
    stack = [code]
    while stack and len(names) < 512:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    cells = tuple(zip(code.co_freevars, getattr(fun, "__closure__", None) or ()))
    return tuple(sorted(names)), cells


def _captured_refs(fun: Any, names: tuple, cells: tuple) -> dict:
    """name -> id of the Ref it holds now, for the names ``fun`` reads."""
    out = {}
    g = getattr(fun, "__globals__", None) or {}
    ref_type = _api.Ref
    for n in names:
        v = g.get(n)
        if v is not None and type(v) is ref_type:
            out[n] = id(v)
    for n, cell in cells:
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if type(v) is ref_type:
            out[n] = id(v)
    return out


def _cache_size(jf: Any) -> Any:
    try:
        return jf._cache_size()
    except Exception:  # noqa: BLE001 - no such method in this JAX: no REF024 check
        return None


def _check_rebound(fun: Any, seen: dict, now: dict) -> None:
    """REF024: a call that reused a trace while a name the trace read as a ref now holds
    another ref."""
    stale = sorted(n for n, i in now.items() if n in seen and seen[n] != i)
    if stale:
        names = ", ".join(f"`{n}`" for n in stale)
        raise ClosedOverRefReboundAfterTrace(
            f"{names} now holds another ref than when jax.jit traced {_fname(fun)}; this "
            f"call reused that trace, so it read and updated the old ref. Reset the ref in "
            f"place ({stale[0]}[...] = ...) instead of rebinding the name, or pass the ref as "
            f"an argument.")


def _make_jit(orig: Callable[..., Any]) -> Callable[..., Any]:
    def jit(fun: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        if fun is None:
            return lambda f: jit(f, *args, **kwargs)
        jf = orig(fun, *args, **kwargs)
        registry = REGISTRY
        names, cells = _free_names(fun) if _api.Ref is not None else ((), ())
        traced: dict = {}  # the refs of `names` at the latest trace

        def call(*a: Any, **k: Any) -> Any:
            if registry.frozen_top:
                _check_frozen_args(a, k)
            now = _captured_refs(fun, names, cells) if names or cells else None
            size = _cache_size(jf) if now else None
            try:
                out = jf(*a, **k)
            except RefError:
                raise
            except Exception as e:  # noqa: BLE001
                _reraise(e)
            if size is not None:
                after = _cache_size(jf)
                if after is not None and (after > size or not traced):
                    traced.clear()
                    traced.update(now)
                elif after is not None:
                    _check_rebound(fun, traced, now)
            return out

        try:
            functools.update_wrapper(call, fun)
        except Exception:  # noqa: BLE001 - e.g. a callable object without __name__
            pass
        call.__wrapped__ = jf  # type: ignore[attr-defined]
        for name in _JIT_ATTRS:
            val = getattr(jf, name, _MISSING)
            if val is not _MISSING:
                try:
                    setattr(call, name, val)
                except Exception:  # noqa: BLE001
                    pass
        return call
    jit.__wrapped__ = orig  # type: ignore[attr-defined]
    jit.__doc__ = orig.__doc__
    return jit


def _make_transform(orig: Callable[..., Any], kind: str | None, stack: str | None
                    ) -> Callable[..., Any]:
    """Wrap a transform `orig(fun, ...) -> fun'`; scope the body when `kind` is given."""
    def transform(fun: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        if fun is None:
            return lambda f: transform(f, *args, **kwargs)
        body = _scoped(fun, kind, stack) if kind is not None and stack else fun
        return _translating(orig(body, *args, **kwargs))
    transform.__wrapped__ = orig  # type: ignore[attr-defined]
    transform.__doc__ = orig.__doc__
    return transform


# --------------------------------------------------------------------------- REF016

def _argnums(args: tuple, kwargs: dict) -> Any:
    """The ``argnums`` a grad-family transform was given (positional after ``fun`` or keyword);
    0 when absent, as in JAX."""
    if "argnums" in kwargs:
        return kwargs["argnums"]
    return args[0] if args else 0


def _ref_path(tree: Any) -> str | None:
    """The pytree path of the first Ref leaf of ``tree`` ('' for a bare Ref), or None."""
    if _api.is_ref(tree):
        return ""
    try:
        leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    except Exception:  # noqa: BLE001 - an unflattenable argument: JAX will say so
        return None
    for path, leaf in leaves:
        if _api.is_ref(leaf):
            return jax.tree_util.keystr(path)
    return None


def _check_differentiated(name: str, fname: str, argnums: Any, args: tuple) -> None:
    """REF016: a Ref among the arguments that ``name`` (grad, jacrev, ...) differentiates."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    try:
        nums = tuple(nums)
    except TypeError:  # not an int nor a sequence: JAX rejects it itself
        return
    for i in nums:
        if not isinstance(i, int) or not -len(args) <= i < len(args):
            continue  # out of range: JAX's own error
        path = _ref_path(args[i])
        if path is None:
            continue
        where = f"argument {i}" + (f" (at {path})" if path else "")
        what = "it is a Ref" if not path else "it holds a Ref"
        raise GradWithRespectToRef(
            f"jax.{name}({fname}) differentiates {where} (argnums={argnums!r}), but {what}: the "
            f"gradient of a Ref must itself be accumulated into a ref, so jax.{name} cannot "
            "return it (JAX >= 0.11: \"grad cannot differentiate with respect to a Ref-typed "
            "argument\"; JAX <= 0.10: \"Expected cotangent type Ref{...}\"). " + REF016_ADVICE)


def _make_diff_transform(orig: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Wrap a transform ``orig(fun, argnums=0, ...)`` whose result differentiates its
    positional arguments ``argnums``: REF016 when one of them holds a Ref."""
    def transform(fun: Any = None, /, *args: Any, **kwargs: Any) -> Any:
        if fun is None:
            return lambda f: transform(f, *args, **kwargs)
        argnums = _argnums(args, kwargs)
        inner = _translating(orig(fun, *args, **kwargs))
        fname = _fname(fun)

        @functools.wraps(inner)
        def call(*a: Any, **k: Any) -> Any:
            _check_differentiated(name, fname, argnums, a)
            return inner(*a, **k)
        return call
    transform.__wrapped__ = orig  # type: ignore[attr-defined]
    transform.__doc__ = orig.__doc__
    return transform


def _make_jvp(orig: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``jax.jvp(fun, primals, tangents)``: REF016 when a primal holds a Ref (JAX 0.10.2,
    0.11.2 and 0.12.0.1 all fail with the internal "`get` must be called on `Ref` types",
    which would otherwise read as REF010).  ``jax.linearize`` of a Ref fails only when the
    linear function is applied; that error is translated (errors.py)."""
    name = "jvp"

    def call(fun: Any, *args: Any, **kwargs: Any) -> Any:
        primals = args[0] if args else kwargs.get("primals")
        if isinstance(primals, (tuple, list)):
            for i, p in enumerate(primals):
                path = _ref_path(p)
                if path is not None:
                    raise GradWithRespectToRef(
                        f"jax.{name}({_fname(fun)}) differentiates primal {i}"
                        + (f" (at {path})" if path else "") + ", which "
                        + ("is" if not path else "holds") + " a Ref: forward-mode autodiff "
                        "with respect to a Ref is not supported (JAX fails with an internal "
                        "error such as \"`get` must be called on `Ref` types\"). Pass the value "
                        "x_ref[...] as the primal, or close over the ref instead of passing it.")
        return _translating(orig)(fun, *args, **kwargs)
    functools.update_wrapper(call, orig)
    return call


# --------------------------------------------------------------------------- REF017

# JAX <= 0.10 fails this way when a VJP of a Ref-typed primal is applied (directly or through
# with_refs); JAX >= 0.11 only when no gradient ref is bound, with its own clear message.
_COTANGENT_OF_REF = "Expected cotangent type Ref{"


def _ref017_direct(e: Exception) -> RefError:
    return VjpOfRefWithoutWithRefs(
        "the VJP function returned by jax.vjp(f, ...) was applied directly, but a primal "
        "argument of f is a Ref: its gradient must be accumulated into a gradient ref, bound "
        "with `f_vjp.with_refs(g_ref)(ct)` (JAX >= 0.11; one entry per primal argument: a "
        "Ref, jax.ad.GradValue() or jax.ad.DontWant()). "
        f"JAX {jax.__version__} says: {str(e).strip()}")


def _ref016_bound(e: Exception) -> RefError:
    return GradWithRespectToRef(
        f"a gradient ref was bound with with_refs(...) for a Ref-typed primal, but JAX "
        f"{jax.__version__} cannot differentiate with respect to a Ref at all (with_refs "
        "gradient refs for Ref-typed arguments need JAX >= 0.11). " + REF016_ADVICE +
        f" JAX says: {str(e).strip()}")


def _vjp_call_hook(orig: Callable[..., Any]) -> Callable[..., Any]:
    """``VJP.__call__``: a VJP of a Ref-typed primal applied without with_refs is REF017."""
    @functools.wraps(orig)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return orig(self, *args, **kwargs)
        except RefError:
            raise
        except Exception as e:  # noqa: BLE001 - translated or re-raised unchanged
            if _COTANGENT_OF_REF in str(e):
                raise _ref017_direct(e).with_traceback(e.__traceback__) from e
            _reraise(e)
    return __call__


def _call_bound_vjp(bound: Any, has_ref: bool, args: tuple, kwargs: dict) -> Any:
    try:
        return bound(*args, **kwargs)
    except RefError:
        raise
    except Exception as e:  # noqa: BLE001 - translated or re-raised unchanged
        if _COTANGENT_OF_REF in str(e):  # JAX <= 0.10
            err = _ref016_bound(e) if has_ref else _ref017_direct(e)
            raise err.with_traceback(e.__traceback__) from e
        _reraise(e)


# What ``VJP.with_refs(...)`` returns under reflint: jax.tree_util.Partial(one of these, JAX's
# bound function), so it stays a pytree like JAX's own (the function is its static part).
def _bound_vjp_with_ref(bound: Any, *args: Any, **kwargs: Any) -> Any:
    return _call_bound_vjp(bound, True, args, kwargs)


def _bound_vjp_without_ref(bound: Any, *args: Any, **kwargs: Any) -> Any:
    return _call_bound_vjp(bound, False, args, kwargs)


def _vjp_with_refs_hook(orig: Callable[..., Any]) -> Callable[..., Any]:
    """``VJP.with_refs``: entries that do not match the primals' pytree are REF017 (JAX <= 0.10
    raises a bare ``Exception``); the bound function translates JAX's errors."""
    @functools.wraps(orig)
    def with_refs(self: Any, *maybe_ct_refs: Any) -> Any:
        in_tree = getattr(self, "in_tree", None)
        if maybe_ct_refs and in_tree is not None:
            got = jax.tree_util.tree_structure(maybe_ct_refs)
            if got != in_tree:
                raise VjpOfRefWithoutWithRefs(
                    f"with_refs got {len(maybe_ct_refs)} entr"
                    f"{'y' if len(maybe_ct_refs) == 1 else 'ies'} shaped {got}, but the "
                    f"primal arguments of the differentiated function are shaped {in_tree}: "
                    "give one entry per primal argument, in the same pytree structure, each a "
                    "Ref (accumulate its gradient there), jax.ad.GradValue() (return it as a "
                    "value) or jax.ad.DontWant() (skip it); None is an empty pytree, not a "
                    "placeholder.")
        try:
            bound = orig(self, *maybe_ct_refs)
        except RefError:
            raise
        except Exception as e:  # noqa: BLE001 - translated or re-raised unchanged
            _reraise(e)
        if _api.Partial is None:
            return bound
        has_ref = any(_api.is_ref(x) for x in jax.tree_util.tree_leaves(maybe_ct_refs))
        return _api.Partial(_bound_vjp_with_ref if has_ref else _bound_vjp_without_ref, bound)
    return with_refs


# --------------------------------------------------------------------------- install

class _Patcher:
    def __init__(self) -> None:
        self.saved: list[tuple[Any, str, Any]] = []

    def set(self, obj: Any, name: str, value: Any) -> None:
        if obj is None or value is None:
            return
        self.saved.append((obj, name, obj.__dict__.get(name, _MISSING)))
        setattr(obj, name, value)

    def add_missing(self, cls: Any, name: str, value: Any) -> None:
        """Add `name` to `cls` only where neither it nor a base (but object) defines it."""
        if cls is None or value is None:
            return
        for base in cls.__mro__:
            if base is not object and name in base.__dict__:
                return
        self.set(cls, name, value)

    def restore(self) -> None:
        while self.saved:
            obj, name, old = self.saved.pop()
            if old is _MISSING:
                try:
                    delattr(obj, name)
                except AttributeError:
                    pass
            else:
                setattr(obj, name, old)


_PATCHER = _Patcher()
_LOCK = threading.RLock()
_installed = 0


def is_installed() -> bool:
    return _installed > 0


def install() -> None:
    """Put the checked primitives and transforms in place of JAX's (idempotent, counted)."""
    global _installed
    with _LOCK:
        _installed += 1
        if _installed > 1:
            return
        p = _PATCHER
        # The ref primitives, at every public spelling the registry knows.
        checked = {"new_ref": new_ref, "empty_ref": empty_ref, "freeze": freeze,
                   "ref_get": get, "ref_set": ref_set, "ref_swap": swap,
                   "ref_addupdate": addupdate}
        for mod, name, a in _public_spellings(lambda a: a.name in checked):
            p.set(mod, name, checked[a.name])

        # indexing syntax (top level and traced) goes through AbstractRef._getitem & co.
        ar = _api.AbstractRef
        if ar is not None:
            for name, write, op in (("_getitem", False, "read"), ("_setitem", True, "write"),
                                    ("_addupdate", True, "add-update")):
                orig = getattr(ar, name, None)
                if orig is not None:
                    p.set(ar, name, _hook(orig, write, op))
            for name in _BINOPS + _UNOPS + _EQOPS + ("bool", "index"):
                p.add_missing(ar, "_" + name, _aval_dunder(name))
            for name in _ARRAY_METHODS:
                p.add_missing(ar, name, _aval_method(name))
        ref_cls = _api.Ref
        if ref_cls is not None and isinstance(ref_cls, type):
            for name in _BINOPS + _UNOPS + _EQOPS:
                p.add_missing(ref_cls, f"__{name}__", _top_dunder(name))
            p.add_missing(ref_cls, "__array__", _top_method("__array__"))
            for name in _ARRAY_METHODS:
                p.add_missing(ref_cls, name, _top_method(name))
        jnp = sys.modules.get("jax.numpy")
        if jnp is not None:
            p.set(jnp, "asarray", _guard_first(jnp.asarray, "jnp.asarray"))
            p.set(jnp, "array", _guard_first(jnp.array, "jnp.array"))
        p.set(jax.lax, "stop_gradient", _guard_tree(jax.lax.stop_gradient,
                                                    "jax.lax.stop_gradient"))
        # jax.device_get(ref) gives back the ref itself: a "snapshot" that keeps changing.
        p.set(jax, "device_get", _guard_tree(jax.device_get,
                                             "jax.device_get (which returns the ref itself)"))
        if _OLD_JAX and "optimization_barrier" in jax.lax.__dict__:
            # JAX <= 0.10: a bare AssertionError (internal error in jit); valid from 0.11 on.
            p.set(jax.lax, "optimization_barrier", _guard_tree(
                jax.lax.optimization_barrier,
                f"jax.lax.optimization_barrier (which accepts refs only from JAX 0.11 on; "
                f"this is {jax.__version__})"))

        _install_transforms(p)
        vjp_cls = _api.VJP
        if vjp_cls is not None and isinstance(vjp_cls, type):
            if "__call__" in vjp_cls.__dict__:
                p.set(vjp_cls, "__call__", _vjp_call_hook(vjp_cls.__dict__["__call__"]))
            if "with_refs" in vjp_cls.__dict__:
                p.set(vjp_cls, "with_refs", _vjp_with_refs_hook(vjp_cls.__dict__["with_refs"]))
        _install_pallas(p)


def _install_pallas(p: _Patcher) -> None:
    """Check every pallas_call kernel when JAX traces it (REF019): JAX's internal
    ``_trace_kernel_to_jaxpr`` (0.10.2 .. 0.12) is wrapped; where it is missing, no check."""
    try:
        import importlib

        pc = importlib.import_module("jax._src.pallas.pallas_call")
    except Exception:  # noqa: BLE001 - Pallas not available
        return
    orig = getattr(pc, "_trace_kernel_to_jaxpr", None)
    if callable(orig):
        p.set(pc, "_trace_kernel_to_jaxpr", _checked_kernel_trace(orig))


def _checked_kernel_trace(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def trace(fun: Any, debug_info: Any, grid_mapping: Any, *args: Any, **kwargs: Any) -> Any:
        out = orig(fun, debug_info, grid_mapping, *args, **kwargs)
        caller = sys._getframe(1)
        try:
            unwritten = _unwritten_outputs(out[0], grid_mapping, caller)
            written_inputs = _written_inputs(out[0], grid_mapping, caller)
            read_first = _outputs_read_first(out[0], grid_mapping, caller)
        except Exception:  # noqa: BLE001 - JAX internals changed: no check
            unwritten, written_inputs, read_first = [], [], []
        where = getattr(debug_info, "func_src_info", None) or _fname(fun)
        n_out = getattr(grid_mapping, "num_outputs", 0)
        if written_inputs and n_out and len(unwritten) == n_out:
            raise InputRefWritten(
                f"input {written_inputs[0]} of the Pallas kernel {where} is written, but no "
                f"output is: the input is not aliased to an output (input_output_aliases), so "
                f"the write is dropped, and the outputs hold whatever their buffers held. "
                f"Write the output ref instead, or alias the input.")
        if read_first:
            raise AccumulatedWithoutInit(
                f"{read_first[0]} of the Pallas kernel {where} is read (`o_ref[...] += ...`?) "
                f"before anything writes it: an output block or scratch buffer starts "
                f"uninitialised, so "
                f"the result is garbage. Initialise it first, e.g. under "
                f"@pl.when(pl.program_id(axis) == 0).")
        if unwritten:
            raise OutputRefRebound(
                f"output {unwritten[0]} of the Pallas kernel {where} is never written: no "
                f"operation of the kernel uses that output ref, so the result is whatever the "
                f"buffer held. Was the ref rebound (`o_ref = value`) instead of written "
                f"(`o_ref[...] = value`)?")
        return out
    return trace


def _unwritten_outputs(jaxpr: Any, grid_mapping: Any, caller: Any) -> list:
    """Indices of the kernel's outputs that no equation of its jaxpr takes as an operand
    (outputs aliased to an input are left out: they hold the input)."""
    aliases = caller.f_locals.get("input_output_aliases")
    if aliases is None:
        return []
    aliased = set(dict(aliases).values())
    first = grid_mapping.num_index_operands + grid_mapping.num_inputs
    outs = jaxpr.invars[first:first + grid_mapping.num_outputs]
    used = {id(v) for eqn in jaxpr.eqns for v in eqn.invars}
    return [k for k, v in enumerate(outs) if k not in aliased and id(v) not in used]


def _written_inputs(jaxpr: Any, grid_mapping: Any, caller: Any) -> list:
    """Indices of the kernel's inputs (not aliased to an output) that a top-level equation of
    its jaxpr writes (``swap`` / ``addupdate``)."""
    aliases = caller.f_locals.get("input_output_aliases")
    if aliases is None:
        return []
    aliased = set(dict(aliases))
    first = grid_mapping.num_index_operands
    ins = jaxpr.invars[first:first + grid_mapping.num_inputs]
    written = {id(eqn.invars[0]) for eqn in jaxpr.eqns
               if eqn.primitive.name in ("swap", "addupdate") and eqn.invars}
    return [k for k, v in enumerate(ins) if k + first not in aliased and id(v) in written]


def _outputs_read_first(jaxpr: Any, grid_mapping: Any, caller: Any) -> list:
    """The kernel's outputs (not aliased to an input) and scratch buffers whose first use in
    the jaxpr's top-level equations is a read (``get``, or ``addupdate``, which reads): the output
    block is read before anything could write it. A first use by a loop (``fori_loop``'s
    ``scan`` or ``while``, the ref closed over by the body) is looked for in the body: its
    first iteration reads first. A first use by any other equation (a ``cond`` from
    ``pl.when``, a DMA) ends the search for that output."""
    aliases = caller.f_locals.get("input_output_aliases")
    if aliases is None:
        return []
    aliased = set(dict(aliases).values())
    first = grid_mapping.num_index_operands + grid_mapping.num_inputs
    n_out = grid_mapping.num_outputs
    n_scratch = getattr(grid_mapping, "num_scratch_operands", 0) or 0
    refs = jaxpr.invars[first:first + n_out + n_scratch]
    found = []
    for k, v in enumerate(refs):
        if k < n_out and k in aliased:
            continue
        if _read_first(jaxpr.eqns, v):
            found.append(f"output {k}" if k < n_out else f"scratch buffer {k - n_out}")
    return found


def _read_first(eqns: Any, v: Any, depth: int = 0) -> bool:
    """The first of ``eqns`` that uses the ref ``v`` reads it, or is a loop whose body's
    first use of it does."""
    for k, eqn in enumerate(eqns):
        at = [i for i, x in enumerate(eqn.invars) if x is v]
        if not at:
            continue
        if eqn.primitive.name == "addupdate" and at[0] == 0:
            return True
        if eqn.primitive.name == "get" and at[0] == 0:
            # `jnp.where(first, x, o_ref[...] + x)`: the contents may be selected away.
            return not _maybe_selected(eqns[k + 1:], eqn.outvars)
        inner = _loop_body_ref(eqn, at[0]) if len(at) == 1 and depth < 8 else None
        return inner is not None and _read_first(inner[0], inner[1], depth + 1)
    return False


def _maybe_selected(eqns: Any, values: Any, depth: int = 0) -> bool:
    """What ``eqns`` compute from ``values`` reaches an operand of a selection (``select_n``,
    which ``jnp.where`` and ``lax.select`` become, or a ``cond``), also inside a jitted
    function (``jnp.where`` is one): a read whose value may be left out."""
    seen = {id(x) for x in values}
    for eqn in eqns:
        at = [i for i, x in enumerate(eqn.invars) if id(x) in seen]
        if not at:
            continue
        if eqn.primitive.name in static_api.SELECTING_PRIMITIVES:
            return True
        inner = eqn.params.get("jaxpr") if depth < 8 else None
        inner = getattr(inner, "jaxpr", inner)
        invars = getattr(inner, "invars", None)
        if invars is not None and len(invars) == len(eqn.invars) and \
                _maybe_selected(inner.eqns, [invars[i] for i in at], depth + 1):
            return True
        seen.update(id(x) for x in eqn.outvars)
    return False


def _loop_body_ref(eqn: Any, i: int) -> Optional[tuple]:
    """(the body's equations, the body's variable) for operand ``i`` of a loop equation
    when the body takes it, else None: ``scan``'s body takes its operands one for one
    (constants, carry, scanned: a ref is a constant); ``while``'s takes the operands after
    the condition's constants."""
    params = eqn.params
    if eqn.primitive.name == "scan":
        body = params.get("jaxpr")
        if len(getattr(getattr(body, "jaxpr", body), "invars", ())) != len(eqn.invars):
            return None
    elif eqn.primitive.name == "while":
        nc, nb = params.get("cond_nconsts", 0), params.get("body_nconsts", 0)
        if not nc <= i < nc + nb:
            return None
        body, i = params.get("body_jaxpr"), i - nc
    else:
        return None
    body = getattr(body, "jaxpr", body)
    invars = getattr(body, "invars", ())
    return (body.eqns, invars[i]) if i < len(invars) else None


def _public_spellings(pred: Callable[[Any], bool]) -> Iterator[tuple[Any, str, Any]]:
    """(module, name, registry entry) for every public spelling (not ``jax._src``) of the
    registry's APIs satisfying ``pred`` that exists in a module already imported."""
    for a in static_api.APIS:
        if not pred(a):
            continue
        for qn in a.spellings:
            module_name, _, name = qn.rpartition(".")
            if "._src" in qn:
                continue
            mod = sys.modules.get(module_name)
            if mod is not None and callable(mod.__dict__.get(name)):
                yield mod, name, a


def _install_transforms(p: _Patcher) -> None:
    """Checked versions of the transforms, from the registry (reflint.api): every public
    spelling of an API with a ``runtime`` wrapping, in the modules already imported. One
    wrapper per original object, so aliases (``jax.remat is jax.checkpoint``) stay aliases."""
    wrapped: dict = {}
    for mod, name, a in _public_spellings(lambda a: bool(a.runtime)):
        orig = mod.__dict__[name]
        if id(orig) not in wrapped:
            if a.runtime == "jit":
                wrapped[id(orig)] = _make_jit(orig)
            elif a.runtime == "map":
                wrapped[id(orig)] = _make_transform(orig, a.name, "maps")
            elif a.runtime == "remat":
                wrapped[id(orig)] = _make_transform(orig, a.name, "remats")
            elif a.runtime == "grad":
                wrapped[id(orig)] = _make_diff_transform(orig, a.name)
            elif a.runtime == "jvp":
                wrapped[id(orig)] = _make_jvp(orig)
            else:  # "call": vjp/linearize call their function now
                wrapped[id(orig)] = _translating(orig)
        p.set(mod, name, wrapped[id(orig)])


def _hook(orig: Callable[..., Any], write: bool, op: str) -> Callable[..., Any]:
    @functools.wraps(orig)
    def hooked(self: Any, tracer: Any, *args: Any) -> Any:
        check_access(tracer, write, op)
        return orig(self, tracer, *args)
    return hooked


def uninstall() -> None:
    """Undo install() (when every install() has been matched); forget all ref metadata."""
    global _installed
    with _LOCK:
        if _installed == 0:
            return
        _installed -= 1
        if _installed:
            return
        _PATCHER.restore()
        REGISTRY.clear()


@contextmanager
def checks() -> Iterator[None]:
    """Enable the checks inside a ``with`` block; JAX errors escaping it are translated."""
    install()
    try:
        yield
    except RefError:
        raise
    except Exception as e:  # noqa: BLE001
        _reraise(e)
    finally:
        uninstall()
