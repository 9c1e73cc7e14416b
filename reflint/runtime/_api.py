"""Version-portable lookup of JAX's mutable-array API (JAX 0.7.1 … 0.10.x).

Resolved once, at import; a missing name resolves to None and never raises.
See runtime-truth.md §2e for which spelling exists in which version.
"""

from __future__ import annotations

from typing import Any, Callable

import jax

API_NAMES: dict[str, str | None] = {}


def _mod(path: str) -> Any:
    import importlib

    try:
        return importlib.import_module(path)
    except Exception:  # noqa: BLE001 - optional module
        return None


def _resolve(label: str, candidates: list[tuple[str, Callable[[], Any]]]) -> Any:
    for name, getter in candidates:
        try:
            obj = getter()
        except Exception:  # noqa: BLE001 - a spelling this version lacks
            continue
        if obj is not None:
            API_NAMES[label] = name
            return obj
    API_NAMES[label] = None
    return None


jref = _mod("jax.ref")
core = _mod("jax._src.core")
pe = _mod("jax._src.interpreters.partial_eval")


def _attr(mod: Any, name: str) -> Callable[[], Any]:
    return lambda: getattr(mod, name, None) if mod is not None else None


def _jax(name: str) -> Callable[[], Any]:
    return lambda: jax.__dict__.get(name)


new_ref = _resolve("new_ref", [
    ("jax.new_ref", _jax("new_ref")), ("jax.ref.new_ref", _attr(jref, "new_ref")),
    ("jax.array_ref", _jax("array_ref")), ("jax.ref.array_ref", _attr(jref, "array_ref")),
    ("jax._src.core.new_ref", _attr(core, "new_ref")),
    ("jax._src.core.mutable_array", _attr(core, "mutable_array")),
])
empty_ref = _resolve("empty_ref", [
    ("jax.empty_ref", _jax("empty_ref")), ("jax.ref.empty_ref", _attr(jref, "empty_ref")),
])
freeze = _resolve("freeze", [
    ("jax.freeze", _jax("freeze")), ("jax.ref.freeze", _attr(jref, "freeze")),
    ("jax._src.core.freeze", _attr(core, "freeze")),
])
get = _resolve("get", [("jax.ref.get", _attr(jref, "get"))])
swap = _resolve("swap", [("jax.ref.swap", _attr(jref, "swap"))])
set_ = _resolve("set", [("jax.ref.set", _attr(jref, "set"))])
addupdate = _resolve("addupdate", [("jax.ref.addupdate", _attr(jref, "addupdate"))])
Ref = _resolve("Ref", [
    ("jax.Ref", _jax("Ref")), ("jax.ref.Ref", _attr(jref, "Ref")),
    ("jax.ArrayRef", _jax("ArrayRef")), ("jax._src.core.Ref", _attr(core, "Ref")),
    ("jax._src.core.MutableArray", _attr(core, "MutableArray")),
])
AbstractRef = _resolve("AbstractRef", [
    ("jax.ref.AbstractRef", _attr(jref, "AbstractRef")),
    ("jax._src.state.types.AbstractRef", _attr(_mod("jax._src.state.types"), "AbstractRef")),
])
Tracer = _resolve("Tracer", [("jax.core.Tracer", lambda: jax.core.Tracer),
                             ("jax._src.core.Tracer", _attr(core, "Tracer"))])
DynamicJaxprTrace = _resolve("DynamicJaxprTrace", [
    ("jax._src.interpreters.partial_eval.DynamicJaxprTrace", _attr(pe, "DynamicJaxprTrace"))])
aval_method = _resolve("aval_method", [("jax._src.core.aval_method", _attr(core, "aval_method"))])
shard_map_module = _mod("jax.experimental.shard_map")
# The class of the function jax.vjp returns (with .with_refs; JAX 0.7.1 ... 0.12.0.1).
VJP = _resolve("VJP", [("jax._src.api.VJP", _attr(_mod("jax._src.api"), "VJP"))])
Partial = _resolve("Partial", [("jax.tree_util.Partial", lambda: jax.tree_util.Partial)])

_trace_ctx = getattr(core, "trace_ctx", None) if core is not None else None


def current_trace() -> Any:
    """The innermost active trace (an EvalTrace at top level), or None if unknown."""
    if _trace_ctx is not None:
        return getattr(_trace_ctx, "trace", None)
    return None


def is_eval_trace(trace: Any) -> bool:
    return trace is not None and type(trace).__name__ == "EvalTrace"


def is_ref(x: Any) -> bool:
    """True for a top-level Ref and for a tracer whose aval is a ref type."""
    if Ref is not None and type(x) is Ref:
        return True
    if Tracer is not None and isinstance(x, Tracer):
        return AbstractRef is not None and isinstance(getattr(x, "aval", None), AbstractRef)
    return Ref is not None and isinstance(x, Ref)


def is_tracer(x: Any) -> bool:
    return Tracer is not None and isinstance(x, Tracer)


def mutable_array_checks_enabled() -> bool | None:
    try:
        return bool(jax.config.jax_mutable_array_checks)
    except Exception:  # noqa: BLE001 - flag absent in this version
        return None
