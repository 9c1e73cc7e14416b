"""The JAX API that reflint knows, by qualified name, across JAX versions.

Every spelling of an API (``jax.new_ref``, ``jax.ref.new_ref``, ``jax._src.core.new_ref``, the
pre-0.7.2 ``jax.array_ref`` ...) maps to one canonical name, so rules never spell names.
The per-version availability comes from ../shared/research/runtime-truth.md, section 2e.
"""

from __future__ import annotations

# Canonical API names.
NEW_REF = "new_ref"
EMPTY_REF = "empty_ref"
FREEZE = "freeze"
REF_TYPE = "Ref"
REF_GET = "ref_get"
REF_SET = "ref_set"
REF_SWAP = "ref_swap"
REF_ADDUPDATE = "ref_addupdate"

JIT = "jit"
VMAP = "vmap"
PMAP = "pmap"
SHARD_MAP = "shard_map"
GRAD = "grad"
VALUE_AND_GRAD = "value_and_grad"
JACREV = "jacrev"
JACFWD = "jacfwd"
HESSIAN = "hessian"
JVP = "jvp"
VJP = "vjp"
LINEARIZE = "linearize"
CHECKPOINT = "checkpoint"
CUSTOM_VJP = "custom_vjp"
CUSTOM_JVP = "custom_jvp"
SCAN = "scan"
COND = "cond"
SWITCH = "switch"
WHILE_LOOP = "while_loop"
FORI_LOOP = "fori_loop"
MAP = "map"
PALLAS_CALL = "pallas_call"
RUN_SCOPED = "run_scoped"
EMIT_PIPELINE = "emit_pipeline"
STOP_GRADIENT = "stop_gradient"
PARTIAL = "partial"

REF_CONSTRUCTORS = frozenset({NEW_REF, EMPTY_REF})
REF_WRITERS = frozenset({REF_SET, REF_SWAP, REF_ADDUPDATE})
MAP_TRANSFORMS = frozenset({VMAP, PMAP, SHARD_MAP})
GRAD_TRANSFORMS = frozenset({GRAD, VALUE_AND_GRAD, JACREV, JACFWD, HESSIAN, JVP, VJP, LINEARIZE})
FUNCTION_TRANSFORMS = (
    frozenset({JIT, CHECKPOINT, CUSTOM_VJP, CUSTOM_JVP}) | MAP_TRANSFORMS | GRAD_TRANSFORMS
)
CONTROL_FLOW = frozenset({SCAN, COND, SWITCH, WHILE_LOOP, FORI_LOOP, MAP})

_SRC_CORE = ("jax._src.core",)

_TABLE: dict[str, tuple[str, ...]] = {
    NEW_REF: (
        "jax.new_ref", "jax.ref.new_ref", "jax._src.core.new_ref", "jax._src.ref.new_ref",
        # Pre-0.7.2 and deprecated spellings.
        "jax.array_ref", "jax.ref.array_ref", "jax.experimental.mutable_array",
        "jax._src.core.mutable_array", "jax._src.core.array_ref",
    ),
    EMPTY_REF: ("jax.empty_ref", "jax.ref.empty_ref", "jax._src.core.empty_ref"),
    FREEZE: ("jax.freeze", "jax.ref.freeze", "jax._src.core.freeze", "jax._src.ref.freeze"),
    REF_TYPE: (
        "jax.Ref", "jax.ref.Ref", "jax._src.core.Ref", "jax.ArrayRef", "jax.ref.ArrayRef",
        "jax.experimental.MutableArray", "jax._src.core.MutableArray", "jax._src.core.ArrayRef",
        "jax.ref.AbstractRef", "jax._src.state.types.AbstractRef",
    ),
    REF_GET: ("jax.ref.get", "jax._src.ref.get", "jax._src.state.primitives.ref_get"),
    REF_SET: ("jax.ref.set", "jax._src.ref.set", "jax._src.state.primitives.ref_set"),
    REF_SWAP: ("jax.ref.swap", "jax._src.ref.swap", "jax._src.state.primitives.ref_swap"),
    REF_ADDUPDATE: (
        "jax.ref.addupdate", "jax._src.ref.addupdate", "jax._src.state.primitives.ref_addupdate",
    ),
    JIT: ("jax.jit", "jax.pjit", "jax.experimental.pjit.pjit", "jax._src.api.jit",
          "jax._src.pjit.pjit"),
    VMAP: ("jax.vmap", "jax._src.api.vmap"),
    PMAP: ("jax.pmap", "jax._src.api.pmap"),
    SHARD_MAP: ("jax.shard_map", "jax.experimental.shard_map.shard_map",
                "jax._src.shard_map.shard_map"),
    GRAD: ("jax.grad", "jax._src.api.grad"),
    VALUE_AND_GRAD: ("jax.value_and_grad", "jax._src.api.value_and_grad"),
    JACREV: ("jax.jacrev", "jax.jacobian", "jax._src.api.jacrev"),
    JACFWD: ("jax.jacfwd", "jax._src.api.jacfwd"),
    HESSIAN: ("jax.hessian", "jax._src.api.hessian"),
    JVP: ("jax.jvp", "jax._src.api.jvp"),
    VJP: ("jax.vjp", "jax._src.api.vjp"),
    LINEARIZE: ("jax.linearize", "jax._src.api.linearize"),
    CHECKPOINT: ("jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint",
                 "jax.ad_checkpoint.remat", "jax._src.ad_checkpoint.checkpoint",
                 "jax._src.ad_checkpoint.remat"),
    CUSTOM_VJP: ("jax.custom_vjp", "jax._src.custom_derivatives.custom_vjp"),
    CUSTOM_JVP: ("jax.custom_jvp", "jax._src.custom_derivatives.custom_jvp"),
    PALLAS_CALL: ("jax.experimental.pallas.pallas_call", "jax._src.pallas.pallas_call.pallas_call"),
    RUN_SCOPED: ("jax.experimental.pallas.run_scoped", "jax._src.pallas.primitives.run_scoped"),
    EMIT_PIPELINE: ("jax.experimental.pallas.tpu.emit_pipeline",
                    "jax._src.pallas.mosaic.pipeline.emit_pipeline"),
    STOP_GRADIENT: ("jax.lax.stop_gradient", "jax._src.lax.lax.stop_gradient"),
    PARTIAL: ("functools.partial",),
    # Flax NNX: a module/state whose arrays were turned into refs.
    "to_refs": ("flax.nnx.to_refs", "flax.nnx.variablelib.to_refs", "flax.nnx.graphlib.to_refs"),
}

_LAX_MODULES = (
    "jax.lax", "jax._src.lax.control_flow", "jax._src.lax.control_flow.loops",
    "jax._src.lax.control_flow.conditionals",
)
for _name in (SCAN, COND, SWITCH, WHILE_LOOP, FORI_LOOP, MAP):
    _TABLE[_name] = tuple(f"{m}.{_name}" for m in _LAX_MODULES)

CANONICAL: dict[str, str] = {qn: canon for canon, names in _TABLE.items() for qn in names}

# The APIs through which the analysis can produce a Ref value (constructors, the Ref type in
# annotations, the APIs whose kernels receive refs). A file that spells none of their names
# cannot hold a ref; the rules' pre-filter (reflint.rule.REF_TRIGGERS) is derived from them.
# When the analysis learns a new source of refs, add its canonical name here.
REF_SOURCES = frozenset({NEW_REF, EMPTY_REF, REF_TYPE, PALLAS_CALL, RUN_SCOPED, EMIT_PIPELINE,
                         "to_refs"})


def ref_source_names() -> list:
    """The last component of every spelling of a REF_SOURCES API (any use of the API names it
    in the text: an attribute, an imported name or an annotation string)."""
    return sorted({qn.rsplit(".", 1)[-1] for qn, canon in CANONICAL.items()
                   if canon in REF_SOURCES})


def availability_names() -> list:
    """The last component of every name of AVAILABILITY and KWARG_AVAILABILITY (a use of the
    name spells it in the text)."""
    return sorted({q.rsplit(".", 1)[-1] for q in AVAILABILITY} |
                  {name for name, _ in KWARG_AVAILABILITY})


# Modules whose functions compute on Arrays: passing an unread Ref to them is REF007.
ARRAY_FUNCTION_MODULES = ("jax.numpy.", "jax.lax.", "numpy.", "jax.nn.", "jax.scipy.",
                          "jax.random.", "math.", "jax._src.numpy.", "jax._src.lax.lax.")
# Functions of those modules that only look at shape/dtype metadata, or take refs on purpose.
ARRAY_FUNCTION_EXEMPT = frozenset({
    "shape", "ndim", "size", "result_type", "dtype", "isscalar", "iterable", "issubdtype",
    "broadcast_shapes", "can_cast", "promote_types", "finfo", "iinfo",
    # Only the shape and dtype of their argument matter (idiomatic in Pallas kernels:
    # `acc_ref[...] = jnp.zeros_like(acc_ref)`).
    "zeros_like", "ones_like", "full_like", "empty_like",
})
# Methods that store their argument(s) into a Python container (REF012).
STORE_METHODS = frozenset({"append", "extend", "insert", "update", "add", "appendleft",
                           "extendleft"})
# Calls that build a new Python container (REF012 takes only such names for outer state).
CONTAINER_CONSTRUCTORS = frozenset({
    "builtins.list", "builtins.dict", "builtins.set", "collections.defaultdict",
    "collections.OrderedDict", "collections.deque", "collections.Counter",
})
# Functions of those modules whose result is metadata, never taken for an Array by REF013.
ARRAY_METADATA_FUNCTIONS = frozenset({
    "shape", "dtype", "iinfo", "finfo", "result_type", "promote_types", "broadcast_shapes",
    "initializers", "key_data", "split_key",
})
# Modules whose functions return JAX Arrays (for REF013 and for "is this an Array").
JAX_ARRAY_MODULES = ("jax.numpy.", "jax.lax.", "jax.random.", "jax.nn.", "jax.scipy.")

# Attributes of a Ref that are valid without reading it.
REF_ATTRIBUTES_OK = frozenset({
    "shape", "dtype", "ndim", "size", "at", "aval", "unsafe_buffer_pointer", "get", "set",
    "swap", "addupdate", "bitcast", "transforms", "ref", "sharding", "format", "weak_type",
    "memory_space", "kind", "has_ref", "_aval",
})
# Attributes and methods that exist on Arrays but not on Refs (reading them is REF007).
ARRAY_ONLY_ATTRIBUTES = frozenset({
    "T", "mT", "real", "imag", "sum", "mean", "max", "min", "prod", "std", "var", "astype",
    "reshape", "transpose", "squeeze", "ravel", "flatten", "dot", "item", "tolist", "argmax",
    "argmin", "argsort", "sort", "cumsum", "cumprod", "clip", "round", "conj", "conjugate",
    "copy", "block_until_ready", "any", "all", "nonzero", "repeat", "take", "trace",
    "diagonal", "swapaxes", "view", "addressable_data", "device", "devices", "__array__",
})
# Inside Pallas kernels these return ref views (TransformedRef) and are idiomatic.
PALLAS_REF_VIEW_ATTRIBUTES = frozenset({"reshape", "T", "transpose", "bitcast", "at"})

BUILTINS_NEEDING_ARRAY = frozenset({"float", "int", "complex", "abs", "round"})


def canonical(qualname: str | None) -> str | None:
    """The canonical API name for a qualified name, or None if reflint does not know it."""
    if qualname is None:
        return None
    return CANONICAL.get(qualname)


def is_array_function(qualname: str) -> bool:
    """True for functions of jax.numpy / jax.lax / numpy that compute on array values."""
    if canonical(qualname) in CONTROL_FLOW:
        return False
    for mod in ARRAY_FUNCTION_MODULES:
        if qualname.startswith(mod):
            rest = qualname[len(mod):]
            if "." in rest:  # e.g. jax.numpy.linalg.norm: still array code
                rest = rest.rsplit(".", 1)[1]
            return rest not in ARRAY_FUNCTION_EXEMPT and not rest.startswith("_")
    return False


def returns_jax_array(qualname: str) -> bool:
    if canonical(qualname) is not None:
        return False
    return qualname.startswith(JAX_ARRAY_MODULES)


# --------------------------------------------------------------------------------------------
# Which names exist in which JAX version (measured: runtime-truth.md, section 2e; 0.11.2 and
# 0.12.0.1: docs/jax-versions.md, "API inventory").
# --------------------------------------------------------------------------------------------

MEASURED_VERSIONS = ((0, 7, 1), (0, 7, 2), (0, 8, 0), (0, 9, 0), (0, 10, 2), (0, 11, 2),
                     (0, 12, 0, 1))
YES, DEPRECATED, NO = "yes", "deprecated", "no"
_Y, _D, _N = YES, DEPRECATED, NO

# qualified name -> status in each of MEASURED_VERSIONS. Names not listed exist in all of them
# (or reflint has no data) and are never reported.
AVAILABILITY: dict[str, tuple] = {
    "jax.new_ref": (_N, _Y, _Y, _Y, _Y, _Y, _Y),
    "jax.Ref": (_N, _Y, _Y, _Y, _Y, _Y, _Y),
    "jax.freeze": (_N, _N, _Y, _Y, _Y, _Y, _Y),
    "jax.empty_ref": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.free_ref": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.array_ref": (_Y, _Y, _D, _N, _N, _N, _N),
    "jax.ArrayRef": (_Y, _Y, _D, _N, _N, _N, _N),
    "jax.ref.new_ref": (_N, _Y, _Y, _Y, _Y, _Y, _Y),
    "jax.ref.Ref": (_N, _Y, _Y, _Y, _Y, _Y, _Y),
    "jax.ref.empty_ref": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.ref.free_ref": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.ref.array_ref": (_Y, _Y, _D, _N, _N, _N, _N),
    "jax.ref.ArrayRef": (_Y, _Y, _D, _N, _N, _N, _N),
    "jax.experimental.mutable_array": (_Y, _Y, _D, _N, _N, _N, _N),
    "jax.experimental.MutableArray": (_Y, _Y, _D, _N, _N, _N, _N),
    "jax._src.core.new_ref": (_N, _Y, _Y, _Y, _Y, _Y, _Y),
    "jax._src.core.Ref": (_N, _Y, _Y, _Y, _Y, _Y, _Y),
    "jax._src.core.mutable_array": (_Y, _Y, _N, _N, _N, _N, _N),
    "jax._src.core.array_ref": (_Y, _Y, _N, _N, _N, _N, _N),
    "jax._src.core.MutableArray": (_Y, _Y, _N, _N, _N, _N, _N),
    "jax._src.core.ArrayRef": (_Y, _Y, _N, _N, _N, _N, _N),
    "jax._src.core.empty_ref": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax._src.core.free_ref": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.ad": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.ad.GradValue": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.ad.DontWant": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.ad.GradRef": (_N, _N, _N, _N, _Y, _Y, _Y),
    "jax.ad.DidntWant": (_N, _N, _N, _N, _Y, _Y, _Y),
}
# Keyword arguments of the ref constructor, by canonical constructor name.
KWARG_AVAILABILITY: dict[tuple, tuple] = {
    (NEW_REF, "kind"): (_N, _N, _N, _N, _Y, _Y, _Y),
    (NEW_REF, "memory_space"): (_N, _Y, _Y, _Y, _Y, _Y, _Y),
    (NEW_REF, "pin"): (_N, _N, _N, _N, _N, _Y, _Y),
}
# What to write instead (any version that has the name).
REPLACEMENTS: dict[str, str] = {
    "jax.new_ref": "jax.array_ref (JAX 0.7.1)",
    "jax.Ref": "jax.ArrayRef (JAX 0.7.1)",
    "jax.freeze": "jax.ref.freeze (every version)",
    "jax.ref.new_ref": "jax.array_ref (JAX 0.7.1)",
    "jax.ref.Ref": "jax.ArrayRef (JAX 0.7.1)",
    "jax.array_ref": "jax.new_ref",
    "jax.ArrayRef": "jax.Ref",
    "jax.ref.array_ref": "jax.new_ref",
    "jax.ref.ArrayRef": "jax.Ref",
    "jax.experimental.mutable_array": "jax.new_ref",
    "jax.experimental.MutableArray": "jax.Ref",
    "jax._src.core.mutable_array": "jax.new_ref",
    "jax._src.core.array_ref": "jax.new_ref",
    "jax._src.core.MutableArray": "jax.Ref",
    "jax._src.core.ArrayRef": "jax.Ref",
}


def _status_at(statuses: tuple, version: tuple) -> str | None:
    """The status at ``version``: a measured version's, or that of the measured versions
    around it when they agree (None when they differ: reflint does not know)."""
    versions = MEASURED_VERSIONS
    if version in versions:
        return statuses[versions.index(version)]
    if version < versions[0]:
        return statuses[0]
    if version > versions[-1]:
        return statuses[-1]
    for i in range(len(versions) - 1):
        if versions[i] < version < versions[i + 1]:
            return statuses[i] if statuses[i] == statuses[i + 1] else None
    return None  # pragma: no cover


def _span(statuses: tuple, wanted: str) -> str:
    """'0.8.0 and later', '0.7.1 to 0.7.2', ... for the measured versions with ``wanted``."""
    have = [v for v, s in zip(MEASURED_VERSIONS, statuses) if s in wanted]
    if not have:
        return ""
    text = ".".join(map(str, have[0]))
    if have[-1] == MEASURED_VERSIONS[-1]:
        return f"{text} and later"
    last = ".".join(map(str, have[-1]))
    return text if have[0] == have[-1] else f"{text} to {last}"


def availability(qualname: str, version: tuple) -> tuple[str | None, str]:
    """(status, where it exists) of a JAX name at ``version``: status is YES, DEPRECATED, NO,
    or None when reflint has no data for this name or version."""
    statuses = AVAILABILITY.get(qualname)
    if statuses is None:
        return None, ""
    return _status_at(statuses, version), _span(statuses, (YES, DEPRECATED))


def kwarg_availability(constructor: str, keyword: str, version: tuple) -> tuple[str | None, str]:
    statuses = KWARG_AVAILABILITY.get((constructor, keyword))
    if statuses is None:
        return None, ""
    return _status_at(statuses, version), _span(statuses, (YES, DEPRECATED))
