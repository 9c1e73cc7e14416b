"""The registry of JAX, Pallas and Flax semantics that reflint knows, across JAX versions.

Every API the analysis, the rules, the pre-filter and the runtime companion know is one
:class:`Api` entry below: its canonical name, every spelling (``jax.new_ref``,
``jax.ref.new_ref``, ``jax._src.core.new_ref``, the pre-0.7.2 ``jax.array_ref`` ...), its
family, what its result is, which of its arguments are functions and how it traces them
(:class:`Callee`, under a :class:`Role`), which operands it passes them, and the words used in
messages. The ways a function is traced (:class:`Role`) carry their own properties in
:data:`ROLES`. Every list that rules, the gate and the runtime use (which transforms map, which
trace once per call, which APIs give an Array ...) is derived from these two tables; adding an
API is one entry here, plus fixtures. docs/analysis.md ("The registry") says how.

The per-version availability of names comes from ../shared/research/runtime-truth.md,
section 2e (and docs/jax-versions.md for 0.11 and later).
"""

from __future__ import annotations

import enum

from ._lazy import lazy_re
from ._record import record

_TYPING = False
if _TYPING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional


# --------------------------------------------------------------------------------------------
# Roles: the ways a function is traced
# --------------------------------------------------------------------------------------------


class Role(str, enum.Enum):
    """How a function runs under JAX: the transform applied to it, or the part it plays in a
    control-flow call, a custom derivative or a Pallas kernel. Values are the strings the
    analysis used before roles were an enum (``Role.WHILE_BODY == "while_body"``)."""

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
    WHILE_COND = "while_cond"
    WHILE_BODY = "while_body"
    FORI = "fori"
    MAP = "map"
    CUSTOM_VJP_FWD = "custom_vjp_fwd"
    CUSTOM_VJP_BWD = "custom_vjp_bwd"
    CUSTOM_JVP_RULE = "custom_jvp_rule"
    PALLAS_KERNEL = "pallas_kernel"
    # A BlockSpec's index map: called with the grid indices and, under a
    # PrefetchScalarGridSpec, the scalar-prefetch refs after them.
    INDEX_MAP = "index_map"
    STATE_BODY = "state_body"  # run_state: a function of refs, discharged into a pure one
    # Flax NNX's own transforms (flax.nnx.jit ...): they split NNX objects passed as arguments
    # into graph and state, and merge the state (and attribute changes) back afterwards.
    NNX_JIT = "nnx_jit"
    NNX_VMAP = "nnx_vmap"
    NNX_SCAN = "nnx_scan"
    NNX_GRAD = "nnx_grad"
    NNX_VALUE_AND_GRAD = "nnx_value_and_grad"
    NNX_REMAT = "nnx_remat"

    def __str__(self) -> str:  # messages and sort keys read the plain value
        return self.value


@record(frozen=True)
class RoleInfo:
    """What a role means for the rules."""

    word: str  # "a lax.scan body": the function, in messages
    # Python code runs once per trace, values are tracers (REF012).
    once_per_trace: bool = False
    repeats: str = ""  # what a trace-time side effect fails to repeat for ("iteration")
    # The function's outputs may not hold refs (REF001); a hint appended to the message.
    no_ref_outputs: bool = False
    return_hint: str = ""
    # Freezing a ref created outside this trace fails (REF004): JAX's error, by version
    # ((first version, text), ... ascending); `freeze_argument_error` for a ref argument.
    freeze_error: tuple = ()
    freeze_argument_error: tuple = ()
    maps: bool = False  # maps its function over a batch axis (REF005)
    mapped_write_error: tuple = ()  # JAX's error for a write to a shared ref, by version
    remat: bool = False  # rematerialized (REF006)
    differentiates: bool = False  # differentiates its function (REF008, REF016)
    spelled: str = ""  # the public spelling, for messages ("jax.grad")
    # Flax NNX transforms: attribute changes of NNX objects passed as arguments (and NNX
    # objects holding refs in the outputs) come back to the caller (REF001, REF012).
    graph_updates: bool = False
    # JAX traces it with mutable-array checks off (jax.config.mutable_array_checks(False)):
    # Pallas kernels (jax/_src/pallas/pallas_call.py, _trace_kernel_to_jaxpr).
    unchecked: bool = False
    # Its outputs may carry a ref through (the same ref, in the carry) where checks are off:
    # a fori_loop / while_loop body inside a Pallas kernel (measured on 0.10.2 under
    # interpret=True; a cond branch or a scan body returning a ref still fails there).
    carries_refs_unchecked: bool = False
    # A ref view (`x_ref.at[1:6]`, `.reshape(...)`: a TransformedRef) given to it as an
    # operand (REF020): JAX's error by version ("" from a version on: accepted).
    view_operand_error: tuple = ()
    # A loop condition (REF021): JAX's error, by version, when it writes a ref that the other
    # functions of the same call (the loop body) write; and, when the loop runs eagerly, when
    # it uses (reads or writes) a ref that they use.
    shared_write_error: tuple = ()
    eager_shared_ref_error: tuple = ()
    # ... and when, traced, it reads a ref that the body writes (what JAX does instead).
    stale_read_error: tuple = ()


_SCAN_FREEZE = ((None, "JAX fails with an empty `AssertionError`"),)
_MAP_ERROR_0_10 = "JAX fails with `AttributeError: 'AbstractRef' object has no attribute 'nospec'`"

ROLES: dict = {
    Role.JIT: RoleInfo(
        "a jit-compiled function", once_per_trace=True, no_ref_outputs=True,
        freeze_error=((None, "JAX fails with `KeyError: <number>`"),),
        freeze_argument_error=(
            (None, "JAX fails with `IndexError: list index out of range`"),
            ((0, 10), "JAX fails with `IndexError: list index out of range` (or, when the "
                      "frozen value is unused, silently does nothing)"))),
    Role.SCAN: RoleInfo(
        "a lax.scan body", once_per_trace=True, repeats="iteration", no_ref_outputs=True,
        return_hint=" (keep refs out of the carry; close over them instead)",
        freeze_error=_SCAN_FREEZE),
    Role.FORI: RoleInfo("a lax.fori_loop body", once_per_trace=True, repeats="iteration",
                        no_ref_outputs=True, freeze_error=_SCAN_FREEZE,
                        carries_refs_unchecked=True),
    Role.MAP: RoleInfo("a lax.map body", once_per_trace=True, repeats="iteration",
                       no_ref_outputs=True, freeze_error=_SCAN_FREEZE),
    Role.COND: RoleInfo(
        "a lax.cond branch", once_per_trace=True, no_ref_outputs=True,
        freeze_error=((None, "JAX fails with `ValueError: safe_zip() argument 1 has length 0 "
                             "...`"),)),
    Role.SWITCH: RoleInfo(
        "a lax.switch branch", once_per_trace=True, no_ref_outputs=True,
        freeze_error=((None, "JAX fails with `ValueError: safe_zip() argument 1 has length 0 "
                             "...`"),)),
    Role.WHILE_BODY: RoleInfo(
        "a lax.while_loop body", once_per_trace=True, repeats="iteration", no_ref_outputs=True,
        carries_refs_unchecked=True,
        freeze_error=((None, "JAX fails with `ValueError: foreach() argument 2 is shorter "
                             "...`"),)),
    Role.WHILE_COND: RoleInfo(
        "a lax.while_loop condition", once_per_trace=True, repeats="iteration",
        # Measured on 0.10.2 and 0.12.0.1 (a ref closed over by both functions).
        shared_write_error=((None, "JAX raises `NotImplementedError: Cannot write to the same "
                                   "ref in both cond and body of while loop`"),),
        eager_shared_ref_error=((None, "outside jit JAX raises `ValueError: only one reference "
                                       "to a mutable array may be passed as an argument to a "
                                       "function, but when tracing while ...`, even when "
                                       "neither writes it"),),
        stale_read_error=((None, "JAX evaluates the condition on the ref's value from before "
                                 "the loop and never sees the body's writes (no error: a loop "
                                 "meant to end on it runs on, or never ends)"),),
        freeze_error=((None, "JAX fails with `ValueError: foreach() argument 2 is shorter "
                             "...`"),)),
    Role.CHECKPOINT: RoleInfo(
        "a checkpointed (remat) function", remat=True,
        freeze_error=((None, "JAX fails with `StopIteration` under jit"),)),
    Role.PMAP: RoleInfo(
        "a pmapped function", once_per_trace=True, maps=True,
        freeze_error=((None, "JAX fails with an internal error"), ((0, 10), _MAP_ERROR_0_10)),
        mapped_write_error=(
            (None, "JAX fails with `ValueError: Cannot lower jaxpr with effects`"),
            ((0, 8), "JAX accepts it without error on one device, and with several devices "
                     "the writes of all but one device can be lost"),
            ((0, 10), _MAP_ERROR_0_10))),
    Role.SHARD_MAP: RoleInfo(
        "a shard_map function", once_per_trace=True, maps=True,
        freeze_error=((None, "JAX fails with an internal error"), ((0, 10), _MAP_ERROR_0_10)),
        mapped_write_error=(
            (None, "JAX accepts it on a 1-device mesh and fails with `_RepError` on more "
                   "devices (eager shard_map: an empty `AssertionError`)"),
            ((0, 10), _MAP_ERROR_0_10 + " (eager shard_map: an empty `AssertionError`)"))),
    Role.VMAP: RoleInfo(
        "a vmapped function", once_per_trace=True, repeats="batch element", maps=True,
        # Measured on 0.10.2 (in jit: 0.10's concrete Ref has no `.at`) and 0.12.0.1 (in jit
        # and eagerly). jit, checkpoint, cond, scan and shard_map take views on both.
        view_operand_error=((None, "JAX raises `TypeError: When tracing ... for vmap, "
                                   "TransformedRefs are not allowed`"),),
        mapped_write_error=(
            (None, "JAX fails with `Exception: performing a set/swap operation with vmapped "
                   "value ...` for a per-element value, and silently writes an "
                   "element-independent value once, not once per element"),
            ((0, 8), "JAX fails with `Exception: performing a set/swap operation with vmapped "
                     "value on an unbatched array reference`"))),
    Role.GRAD: RoleInfo("a differentiated function", differentiates=True, spelled="jax.grad"),
    Role.VALUE_AND_GRAD: RoleInfo("a differentiated function", differentiates=True,
                                  spelled="jax.value_and_grad"),
    Role.JACREV: RoleInfo("a differentiated function", differentiates=True,
                          spelled="jax.jacrev"),
    Role.JACFWD: RoleInfo("a differentiated function", differentiates=True,
                          spelled="jax.jacfwd"),
    Role.HESSIAN: RoleInfo("a differentiated function", differentiates=True,
                           spelled="jax.hessian"),
    Role.JVP: RoleInfo("a differentiated function", differentiates=True, spelled="jax.jvp"),
    Role.VJP: RoleInfo("a differentiated function", differentiates=True, spelled="jax.vjp"),
    Role.LINEARIZE: RoleInfo("a differentiated function", differentiates=True,
                             spelled="jax.linearize"),
    Role.CUSTOM_VJP: RoleInfo("a custom_vjp function", no_ref_outputs=True),
    Role.CUSTOM_JVP: RoleInfo("a custom_jvp function"),
    Role.CUSTOM_VJP_FWD: RoleInfo("a custom_vjp fwd rule"),
    Role.CUSTOM_VJP_BWD: RoleInfo("a custom_vjp bwd rule"),
    Role.CUSTOM_JVP_RULE: RoleInfo("a custom_jvp rule"),
    Role.PALLAS_KERNEL: RoleInfo("a Pallas kernel", once_per_trace=True, repeats="grid step",
                                 unchecked=True),
    Role.STATE_BODY: RoleInfo("a run_state body", once_per_trace=True),
    Role.INDEX_MAP: RoleInfo("a BlockSpec index map"),
    # Measured on flax 0.12.8 + JAX 0.10.2 and flax 0.12.12 + JAX 0.12.0.1 (docs/flax-nnx.md):
    # returning a module holding refs and passing one module twice are fine under nnx.jit, a
    # ref both closed over and passed is not; nnx.vmap fails like jax.vmap on a write to a
    # closed-over ref; nnx.grad fails like jax.grad on ref-holding arguments.
    Role.NNX_JIT: RoleInfo("an nnx.jit function", once_per_trace=True, graph_updates=True,
                           spelled="nnx.jit"),
    Role.NNX_VMAP: RoleInfo(
        "an nnx.vmap function", once_per_trace=True, repeats="batch element", maps=True,
        graph_updates=True, spelled="nnx.vmap",
        mapped_write_error=(
            (None, "JAX fails with `Exception: performing a set/swap operation with vmapped "
                   "value on an unbatched array reference`"),)),
    Role.NNX_SCAN: RoleInfo("an nnx.scan body", once_per_trace=True, repeats="iteration",
                            graph_updates=True, spelled="nnx.scan"),
    Role.NNX_GRAD: RoleInfo("a differentiated function", differentiates=True,
                            graph_updates=True, spelled="nnx.grad"),
    Role.NNX_VALUE_AND_GRAD: RoleInfo("a differentiated function", differentiates=True,
                                      graph_updates=True, spelled="nnx.value_and_grad"),
    Role.NNX_REMAT: RoleInfo("a checkpointed (nnx.remat) function", remat=True,
                             graph_updates=True, spelled="nnx.remat"),
}

# The roles in the order messages prefer them when a function has several.
ROLE_ORDER = (Role.JIT, Role.SCAN, Role.FORI, Role.MAP, Role.COND, Role.SWITCH,
              Role.WHILE_BODY, Role.WHILE_COND, Role.CHECKPOINT, Role.VMAP, Role.PMAP,
              Role.SHARD_MAP, Role.CUSTOM_VJP, Role.NNX_JIT, Role.NNX_SCAN, Role.NNX_VMAP,
              Role.NNX_REMAT)


def in_role_order(roles) -> tuple:
    """``roles`` in the order messages prefer them (``ROLE_ORDER``), any role missing from
    that order after them: a table of roles a rule derives never loses one."""
    rank = {r: i for i, r in enumerate(ROLE_ORDER)}
    return tuple(sorted(set(roles), key=lambda r: (rank.get(r, len(rank)), str(r))))


def role_info(kind) -> RoleInfo:
    """The properties of a role (a Role, its string, or an API name whose functions it
    traces: ``"while_loop"`` reads as the body)."""
    try:
        return ROLES[Role(kind)]
    except ValueError:
        a = API.get(kind)
        if a is not None and a.word:
            return RoleInfo(a.word)
        return RoleInfo(f"a function traced by {kind}")


def roles_where(prop: str) -> frozenset:
    """Every role whose RoleInfo has ``prop`` set."""
    return frozenset(r for r, info in ROLES.items() if getattr(info, prop))


def by_version(table: tuple, version: tuple) -> str:
    """The text of a ``((first version, text), ...)`` table at ``version``."""
    out = ""
    for first, text in table:
        if first is None or version >= first:
            out = text
    return out


# --------------------------------------------------------------------------------------------
# APIs
# --------------------------------------------------------------------------------------------


class Family(enum.Enum):
    REF_CONSTRUCTOR = "ref constructor"
    REF_TYPE = "Ref type"
    REF_READ = "ref read"
    REF_WRITE = "ref write"
    FREEZE = "freeze"
    FREE = "free"  # ends a ref without a value (jax.free_ref)
    TRANSFORM = "function transform"  # f -> f' (jit, vmap, grad, checkpoint, custom_vjp ...)
    CONTROL_FLOW = "control flow"  # calls its functions now (scan, cond, while_loop ...)
    KERNEL = "Pallas kernel entry point"  # its functions take refs
    # pl.BlockSpec(block_shape, index_map): the index map is called with the grid indices and
    # the scalar-prefetch refs (api.Callee.named_refs); nothing runs, nothing is launched.
    BLOCK_SPEC = "Pallas block spec"
    INLINE = "inline body"  # runs its function where it stands (pl.when, pl.loop)
    PARTIAL = "partial application"
    WRAPPER = "function wrapper"  # gives back its function, traced no differently
    NNX = "Flax NNX"
    ARRAY = "array function"  # an array function with meaning for the analysis
    GRAD_ENTRY = "with_refs entry"  # jax.ad.GradValue() / DontWant(): what a VJP gives back
    SEQUENCE = "sequence helper"  # split_list(refs, [n]): the pieces of its first argument
    # A decorator or base class that makes a class's instances records of named fields
    # (dataclasses, NamedTuple, flax.struct, register_dataclass ...): `record` says how they
    # are built (reflint/analysis/objects.py).
    RECORD = "record class"
    TREE = "pytree utility"  # jax.tree.map / leaves / flatten / unflatten: `tree_op`


class Result(enum.Enum):
    UNKNOWN = "unknown"
    NONE = "nothing"
    ARRAY = "an Array"
    REF = "a Ref"
    REF_TREE = "a pytree holding refs"  # nnx.to_refs(module): a copy whose arrays are refs
    # Flax NNX (docs/flax-nnx.md). NNX_OBJECT: a Variable, Module or Pytree (a flax class, or a
    # base class of the module's own NNX classes): it holds refs when created with refs on
    # (`ref=True`, the seed's `is_hijax=True`, or inside `var_defaults(ref=True)` /
    # `use_refs(True)`), arrays otherwise.
    NNX_OBJECT = "an NNX object (Variable, Module, Pytree)"
    ARRAY_TREE = "a pytree holding arrays, not refs"  # nnx.to_arrays
    NNX_WITH_VARS = "a copy with refs or arrays, as its ref= keyword says"  # nnx.with_vars
    NNX_SPLIT = "(graphdef, state, ...): the states hold refs when the object does"
    NNX_MERGE = "an NNX object holding refs when a state does"
    NNX_STATE = "the object's state: it holds refs when the object does"
    REF_SWITCH = "refs on or off for NNX objects created after it, or inside it as a context"
    FUNCTION = "a transformed function"
    LAUNCHER = "a callable that runs the kernel on its operands"
    PAIR = "a pair"  # scan: (carry, ys)
    PASS_THROUGH = "its operands"  # optimization_barrier
    VJP = "(outputs, a VJP function)"  # jax.vjp


@record(frozen=True)
class Src:
    """Where an operand of a call comes from: the positional argument ``pos`` or the keyword
    ``kw``; ``rest``: every positional argument from ``pos`` on; ``sliced``: the callee gets
    slices of it (scan's ``xs``)."""

    pos: Optional[int] = None
    kw: Optional[str] = None
    rest: bool = False
    sliced: bool = False


@record(frozen=True)
class Callee:
    """A function argument of an API call, and how the API calls it.

    ``receives``: what it is passed, parameter by parameter (a Src, or None for a value the
    analysis does not model, like fori_loop's index). ``sequence``: the argument is a sequence
    of functions (switch's branches). ``refs``: every parameter it has is a Ref (Pallas
    kernels) unless bound by ``functools.partial``. ``returns_none``: JAX rejects a function
    that returns a value ("The kernel function in the pallas_call ... should return None").
    ``outputs_after_operands``: the refs it receives are the call's operands, then the outputs,
    then the scratch buffers given by the keywords ``scratch`` (``scratch_shapes=[...]``,
    or a grid spec with its own ``scratch_shapes``)."""

    pos: Optional[int]
    kw: Optional[str]
    role: Optional[Role]
    receives: tuple = ()
    sequence: bool = False
    refs: bool = False
    returns_none: bool = False
    outputs_after_operands: bool = False
    scratch: tuple = ()
    # Parameters that are not refs: the first ``leading`` ones (a pipeline body's loop
    # indices), and the last one when one of the keywords ``carry_if`` is given (a carry).
    leading: int = 0
    carry_if: tuple = ()
    # The API's keyword arguments name the function's parameters and give their types
    # (`@pl.with_scoped(scratches=(pltpu.VMEM(...), ...))`): a tuple, list or dict there makes
    # the parameter a pytree of refs, not a ref.
    typed_kwargs: bool = False
    # Only the positional parameters spelled as refs (REF_PARAM_SUFFIX; a ``*refs`` tuple) are
    # refs: a BlockSpec's index map receives the grid indices, then the scalar-prefetch refs
    # (how many is the grid spec's `num_scalar_prefetch`, often set elsewhere).
    named_refs: bool = False


@record(frozen=True)
class Api:
    """One API. See the module docstring."""

    name: str
    spellings: tuple
    family: Family
    result: Result = Result.UNKNOWN
    role: Optional[Role] = None  # TRANSFORM: the role its function gets
    callees: tuple = ()  # CONTROL_FLOW / KERNEL / INLINE: its function arguments
    operands: tuple = ()  # Src of the traced operands (aliasing checks)
    # Called with configuration only (no function), it returns a decorator: `@pl.kernel(...)`,
    # `@pl.core_map(mesh)`. "kwargs": when no positional argument is given; "always": the
    # positional arguments are configuration too.
    factory: str = ""
    checks_aliasing: bool = False  # one ref passed twice is an error (REF002)
    checks_closure: bool = False  # a ref closed over and passed is an error (REF003)
    argnums: bool = False  # differentiates the arguments given by argnums (default 0)
    primals: str = ""  # jvp/vjp/linearize: "tuple" (jvp(f, primals, ...)) or "varargs"
    donation: tuple = ()  # keywords that donate arguments (REF014)
    static: tuple = ()  # keywords that mark arguments static
    in_axes: Optional[Src] = None  # where a map's in_axes is given
    word: str = ""  # the function it traces, in messages ("a lax.while_loop body")
    call_word: str = ""  # the call, in messages ("lax.scan")
    runtime: str = ""  # how reflint.runtime wraps it: "jit", "map", "remat", "grad", "jvp", "call"
    ref_source: bool = False  # a value the analysis can see as a Ref comes from it
    accepts_refs_since: Optional[tuple] = None  # an array function that takes refs since
    # A grad-like transform given a Ref to differentiate: JAX's error, by version (REF016).
    ref_argument_error: tuple = ()
    # NNX_OBJECT: keywords that turn refs on (True) or off (False) for this object alone.
    ref_keywords: tuple = ()
    seed_api: bool = False  # Flax NNX's API of seed 001 (before flax 0.12), not in 0.12
    # Control flow: arguments that must be Arrays (a predicate, an index, loop bounds): a ref
    # there is REF007 (JAX: "Attempting to pass a Ref ... did you forget to unpack").
    array_args: tuple = ()
    # RECORD: "dataclass" (fields are the annotated class attributes, given by position or
    # keyword), "namedtuple" (the same, and the instance is a tuple of them), "pytree" (a
    # registered class built by its own __init__).
    record: str = ""
    # TREE: "map" (calls its function on the leaves of its tree arguments; the result is a
    # tree of what the function returns), "leaves", "flatten", "unflatten".
    tree_op: str = ""
    # NNX_OBJECT (a Flax layer): calling it (``"__call__"``) or its method of that name writes
    # its own Variables with values computed from the call's arguments (BatchNorm's batch
    # statistics in training, Optimizer.update's state), unless one of ``write_unless`` is a
    # literal True at construction or at the call (``use_running_average=True``).
    call_writes: str = ""
    write_unless: tuple = ()
    # The values it writes are wrapped in `jax.lax.stop_gradient` (BatchNorm's statistics of
    # ref Variables on flax 0.12.12; flax 0.12.8 did not, and failed under `jax.grad`): the
    # write is a write (REF005), but never of a differentiated value (no REF008).
    writes_stop_gradient: bool = False


def _lax(name: str) -> tuple:
    return tuple(f"{m}.{name}" for m in (
        "jax.lax", "jax._src.lax.control_flow", "jax._src.lax.control_flow.loops",
        "jax._src.lax.control_flow.conditionals"))


def _src(mod: str, name: str) -> tuple:
    return (f"jax.{name}", f"jax._src.{mod}.{name}")


SEED_REF_KEYWORD = "is_hijax"  # `nnx.Variable(x, is_hijax=True)`: the seed's ref Variable
_GRAD_LIKE = dict(family=Family.TRANSFORM, result=Result.FUNCTION, argnums=True,
                  runtime="grad")
_GET_ERROR = "JAX fails with ``ValueError: `get` must be called on `Ref` types``"


def _ref_argument_error(name: str) -> tuple:
    """What grad-like ``name`` does given a Ref to differentiate (measured 0.10.2-0.12.0.1)."""
    return ((None, "JAX fails in the backward pass with `ValueError: Expected cotangent type "
                   "Ref{...} but got ...`"),
            ((0, 11), f"JAX raises `TypeError: {name} cannot differentiate with respect to a "
                      f"Ref-typed argument`"))
_REST3 = Src(3, rest=True)

APIS: tuple = (
    # -- refs ---------------------------------------------------------------------------------
    Api("new_ref", (
        "jax.new_ref", "jax.ref.new_ref", "jax._src.core.new_ref", "jax._src.ref.new_ref",
        # Pre-0.7.2 and deprecated spellings.
        "jax.array_ref", "jax.ref.array_ref", "jax.experimental.mutable_array",
        "jax._src.core.mutable_array", "jax._src.core.array_ref"),
        Family.REF_CONSTRUCTOR, Result.REF, ref_source=True),
    Api("empty_ref", ("jax.empty_ref", "jax.ref.empty_ref", "jax._src.core.empty_ref"),
        Family.REF_CONSTRUCTOR, Result.REF, ref_source=True),
    Api("Ref", (
        "jax.Ref", "jax.ref.Ref", "jax._src.core.Ref", "jax.ArrayRef", "jax.ref.ArrayRef",
        "jax.experimental.MutableArray", "jax._src.core.MutableArray", "jax._src.core.ArrayRef",
        "jax.ref.AbstractRef", "jax._src.state.types.AbstractRef"),
        Family.REF_TYPE, ref_source=True),
    Api("freeze", ("jax.freeze", "jax.ref.freeze", "jax._src.core.freeze", "jax._src.ref.freeze"),
        Family.FREEZE, Result.ARRAY),
    # Measured 0.10.2 and 0.12.0.1: inside jit a use after free fails like one after freeze
    # (`get`/`swap` must be called on `Ref` types; 0.12 accepts the write), a second free or a
    # freeze fails with KeyError; at top level nothing is checked.
    Api("free_ref", ("jax.free_ref", "jax.ref.free_ref", "jax._src.core.free_ref"),
        Family.FREE, Result.NONE),
    Api("ref_get", ("jax.ref.get", "jax._src.ref.get", "jax._src.state.primitives.ref_get"),
        Family.REF_READ, Result.ARRAY),
    Api("ref_set", ("jax.ref.set", "jax._src.ref.set", "jax._src.state.primitives.ref_set"),
        Family.REF_WRITE, Result.NONE),
    Api("ref_swap", ("jax.ref.swap", "jax._src.ref.swap", "jax._src.state.primitives.ref_swap"),
        Family.REF_WRITE, Result.ARRAY),
    Api("ref_addupdate", ("jax.ref.addupdate", "jax._src.ref.addupdate",
                          "jax._src.state.primitives.ref_addupdate"),
        Family.REF_WRITE, Result.NONE),
    # -- function transforms --------------------------------------------------------------------
    Api("jit", ("jax.jit", "jax.pjit", "jax.experimental.pjit.pjit", "jax._src.api.jit",
                "jax._src.pjit.pjit"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.JIT, checks_aliasing=True,
        checks_closure=True, donation=("donate_argnums", "donate_argnames"),
        static=("static_argnums", "static_argnames"), word="a jit-compiled function",
        call_word="a jit-compiled function", runtime="jit"),
    Api("vmap", _src("api", "vmap"), Family.TRANSFORM, Result.FUNCTION, role=Role.VMAP,
        checks_aliasing=True, in_axes=Src(1, "in_axes"), word="a vmapped function",
        call_word="a vmapped function", runtime="map"),
    Api("pmap", _src("api", "pmap"), Family.TRANSFORM, Result.FUNCTION, role=Role.PMAP,
        checks_aliasing=True, checks_closure=True, static=("static_broadcasted_argnums",),
        word="a pmapped function", call_word="a pmapped function", runtime="map"),
    Api("shard_map", ("jax.shard_map", "jax.experimental.shard_map.shard_map",
                      "jax._src.shard_map.shard_map"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.SHARD_MAP, word="a shard_map function",
        runtime="map"),
    Api("grad", _src("api", "grad"), role=Role.GRAD,
        ref_argument_error=_ref_argument_error("grad"), **_GRAD_LIKE),
    Api("value_and_grad", _src("api", "value_and_grad"), role=Role.VALUE_AND_GRAD,
        ref_argument_error=_ref_argument_error("grad"), **_GRAD_LIKE),
    Api("jacrev", ("jax.jacrev", "jax.jacobian", "jax._src.api.jacrev"), role=Role.JACREV,
        ref_argument_error=_ref_argument_error("jacrev"), **_GRAD_LIKE),
    # Forward mode: even JAX 0.12 fails with "`get` must be called on `Ref` types".
    Api("jacfwd", _src("api", "jacfwd"), role=Role.JACFWD,
        ref_argument_error=((None, _GET_ERROR),), **_GRAD_LIKE),
    Api("hessian", _src("api", "hessian"), role=Role.HESSIAN,
        ref_argument_error=((None, _GET_ERROR), _ref_argument_error("jacrev")[1]),
        **_GRAD_LIKE),
    Api("jvp", _src("api", "jvp"), Family.TRANSFORM, Result.UNKNOWN, role=Role.JVP,
        primals="tuple", runtime="jvp", ref_argument_error=((None, _GET_ERROR),)),
    Api("vjp", _src("api", "vjp"), Family.TRANSFORM, Result.VJP, role=Role.VJP,
        primals="varargs", runtime="call"),
    # Measured 0.10.2 and 0.12.0.1: linearize computes the primal output, and the linearized
    # function fails when called (with any tangent).
    Api("linearize", _src("api", "linearize"), Family.TRANSFORM, Result.UNKNOWN,
        role=Role.LINEARIZE, primals="varargs", runtime="call",
        ref_argument_error=((None, "JAX computes the primal output, and the linearized "
                                   "function fails when called: `ValueError: linearized "
                                   "function called on tangent values inconsistent with the "
                                   "original primal values`"),)),
    Api("checkpoint", ("jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint",
                       "jax.ad_checkpoint.remat", "jax._src.ad_checkpoint.checkpoint",
                       "jax._src.ad_checkpoint.remat"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.CHECKPOINT,
        word="a checkpointed (remat) function", runtime="remat"),
    Api("custom_vjp", ("jax.custom_vjp", "jax._src.custom_derivatives.custom_vjp"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.CUSTOM_VJP, checks_aliasing=True,
        checks_closure=True, word="a custom_vjp function", call_word="a custom_vjp function"),
    Api("custom_jvp", ("jax.custom_jvp", "jax._src.custom_derivatives.custom_jvp"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.CUSTOM_JVP, word="a custom_jvp function"),
    # -- control flow ---------------------------------------------------------------------------
    Api("scan", _lax("scan"), Family.CONTROL_FLOW, Result.PAIR,
        callees=(Callee(0, "f", Role.SCAN, (Src(1, "init"), Src(2, "xs", sliced=True))),),
        operands=(Src(1, "init"), Src(2, "xs")), checks_aliasing=True, checks_closure=True,
        word="a lax.scan body", call_word="lax.scan"),
    Api("cond", _lax("cond"), Family.CONTROL_FLOW,
        callees=(Callee(1, "true_fun", Role.COND, (_REST3,)),
                 Callee(2, "false_fun", Role.COND, (_REST3,))),
        operands=(_REST3,), checks_aliasing=True, checks_closure=True,
        word="a lax.cond branch", call_word="lax.cond", array_args=(Src(0, "pred"),)),
    Api("switch", _lax("switch"), Family.CONTROL_FLOW,
        callees=(Callee(1, "branches", Role.SWITCH, (Src(2, rest=True),), sequence=True),),
        operands=(Src(2, rest=True),), checks_aliasing=True, checks_closure=True,
        word="a lax.switch branch", call_word="lax.switch", array_args=(Src(0, "index"),)),
    Api("while_loop", _lax("while_loop"), Family.CONTROL_FLOW,
        callees=(Callee(0, "cond_fun", Role.WHILE_COND, (Src(2, "init_val"),)),
                 Callee(1, "body_fun", Role.WHILE_BODY, (Src(2, "init_val"),))),
        operands=(Src(2, "init_val"),), checks_aliasing=True, checks_closure=True,
        word="a lax.while_loop body", call_word="lax.while_loop"),
    Api("fori_loop", _lax("fori_loop"), Family.CONTROL_FLOW,
        callees=(Callee(2, "body_fun", Role.FORI, (None, Src(3, "init_val"))),),
        operands=(Src(3, "init_val"),), checks_aliasing=True, checks_closure=True,
        word="a lax.fori_loop body", call_word="lax.fori_loop",
        array_args=(Src(0, "lower"), Src(1, "upper"))),
    Api("map", _lax("map"), Family.CONTROL_FLOW,
        callees=(Callee(0, "f", Role.MAP, (Src(1, "xs", sliced=True),)),),
        operands=(Src(1, "xs"),), checks_closure=True, word="a lax.map body",
        call_word="lax.map"),
    # -- Pallas -----------------------------------------------------------------------------------
    Api("pallas_call", ("jax.experimental.pallas.pallas_call",
                        "jax._src.pallas.pallas_call.pallas_call"),
        Family.KERNEL, Result.LAUNCHER,
        callees=(Callee(0, "kernel", Role.PALLAS_KERNEL, refs=True, returns_none=True,
                        outputs_after_operands=True,
                        scratch=("scratch_shapes", "grid_spec")),), factory="kwargs",
        word="a Pallas kernel", call_word="pallas_call", ref_source=True),
    # `pl.kernel(body, mesh=...)(x_ref, ...)`: one ref passed twice is rejected ("Cannot pass
    # the same ref into a mpmd map multiple times", measured on 0.10.2 with a one-core
    # TensorCore mesh under interpret).
    Api("kernel", ("jax.experimental.pallas.kernel", "jax._src.pallas.helpers.kernel"),
        Family.KERNEL, Result.LAUNCHER,
        callees=(Callee(0, "body", Role.PALLAS_KERNEL, refs=True, returns_none=True),),
        factory="kwargs", checks_aliasing=True, word="a Pallas kernel", call_word="pl.kernel",
        ref_source=True),
    Api("kernel_gpu", ("jax.experimental.pallas.mosaic_gpu.kernel",
                       "jax._src.pallas.mosaic_gpu.core.kernel"),
        Family.KERNEL, Result.LAUNCHER,
        callees=(Callee(0, "body", Role.PALLAS_KERNEL, refs=True, returns_none=True),),
        factory="kwargs", word="a Pallas kernel", call_word="plgpu.kernel", ref_source=True),
    Api("run_scoped", ("jax.experimental.pallas.run_scoped",
                       "jax._src.pallas.primitives.run_scoped"),
        Family.KERNEL, callees=(Callee(0, "f", Role.PALLAS_KERNEL, refs=True),),
        word="a Pallas kernel", ref_source=True),
    # TPU: body(*block_refs, *scratches) (jax/_src/pallas/mosaic/pipeline.py).
    Api("emit_pipeline", ("jax.experimental.pallas.tpu.emit_pipeline",
                          "jax._src.pallas.mosaic.pipeline.emit_pipeline",
                          "jax.experimental.pallas.tpu.emit_pipeline_with_allocations",
                          "jax._src.pallas.mosaic.pipeline.emit_pipeline_with_allocations"),
        Family.KERNEL, Result.LAUNCHER,
        callees=(Callee(0, "body", Role.PALLAS_KERNEL, refs=True),), factory="kwargs",
        word="a Pallas pipeline body", ref_source=True),
    # Mosaic GPU: body(indices, *refs) and, with init_carry (emit_pipeline) or compute_context
    # (warp specialized), a last carry argument (jax/_src/pallas/mosaic_gpu/pipeline.py).
    Api("emit_pipeline_gpu", ("jax.experimental.pallas.mosaic_gpu.emit_pipeline",
                              "jax._src.pallas.mosaic_gpu.pipeline.emit_pipeline",
                              "jax.experimental.pallas.mosaic_gpu.emit_pipeline_warp_specialized",
                              "jax._src.pallas.mosaic_gpu.pipeline.emit_pipeline_warp_specialized"),
        Family.KERNEL, Result.LAUNCHER,
        callees=(Callee(0, "body", Role.PALLAS_KERNEL, refs=True, leading=1,
                        carry_if=("init_carry", "compute_context")),), factory="kwargs",
        word="a Pallas pipeline body", ref_source=True),
    # TPU, JAX 0.12: returns (pipeline, async_prefetch); the body receives the block refs.
    Api("emit_pipeline_with_async_prefetch",
        ("jax.experimental.pallas.tpu.emit_pipeline_with_async_prefetch",
         "jax._src.pallas.mosaic.prefetch.emit_pipeline_with_async_prefetch"),
        Family.KERNEL, callees=(Callee(0, "body", Role.PALLAS_KERNEL, refs=True),),
        word="a Pallas pipeline body", ref_source=True),
    # `@pl.with_scoped(*types, **kw_types) def f(*outer_refs, *scoped_refs)`: the decorated
    # function runs under run_scoped; its arguments and allocations are refs
    # (jax/_src/pallas/helpers.py).
    Api("with_scoped", ("jax.experimental.pallas.with_scoped",
                        "jax._src.pallas.helpers.with_scoped"),
        Family.KERNEL, callees=(Callee(0, "f", Role.PALLAS_KERNEL, refs=True,
                                       typed_kwargs=True),),
        factory="always", word="a Pallas with_scoped body", ref_source=True),
    Api("core_map", ("jax.experimental.pallas.core_map", "jax._src.pallas.core.core_map"),
        Family.KERNEL, callees=(Callee(0, "f", Role.PALLAS_KERNEL, returns_none=True),),
        factory="always", word="a Pallas core_map body", call_word="core_map",
        ref_source=True),
    Api("run_state", ("jax.experimental.pallas.run_state", "jax._src.state.discharge.run_state",
                      "jax._src.state.discharge.run_state_reference"),
        Family.KERNEL, Result.LAUNCHER,
        callees=(Callee(0, "f", Role.STATE_BODY, refs=True),),
        word="a run_state body", ref_source=True),
    # `pl.BlockSpec(block_shape, index_map)`: TPU Pallas calls the index map with the grid
    # indices and then the scalar-prefetch refs of a PrefetchScalarGridSpec (SMEM refs: read
    # them, `lengths_ref[b]`); those parameters are spelled as refs in real kernels
    # (jax/experimental/pallas/ops/tpu/paged_attention, megablox).
    Api("BlockSpec", ("jax.experimental.pallas.BlockSpec", "jax._src.pallas.core.BlockSpec",
                      "jax.experimental.pallas.mosaic_gpu.BlockSpec",
                      "jax._src.pallas.mosaic_gpu.core.BlockSpec"),
        Family.BLOCK_SPEC,
        callees=(Callee(1, "index_map", Role.INDEX_MAP, refs=True, named_refs=True),),
        word="a BlockSpec index map"),
    Api("when", ("jax.experimental.pallas.when", "jax._src.pallas.helpers.when",
                 "jax._src.pallas.primitives.when"),
        Family.INLINE, callees=(Callee(0, "f", None),), factory="always"),
    Api("loop", ("jax.experimental.pallas.loop", "jax._src.pallas.helpers.loop"),
        Family.INLINE, callees=(Callee(0, "f", None, (None,)),), factory="always"),
    # TPU SparseCore: `@plsc.parallel_loop(lo, hi) def body(i): ...` runs its body in the
    # kernel (jax/_src/pallas/mosaic/sc_primitives.py).
    Api("parallel_loop", ("jax.experimental.pallas.tpu_sc.parallel_loop",
                          "jax._src.pallas.mosaic.sc_primitives.parallel_loop"),
        Family.INLINE, callees=(Callee(0, "f", None, (None,)),), factory="always"),
    # JAX's own sequence helper, used by Pallas kernels to split their `*refs`
    # (`gmem_refs, scratch_refs = util.split_list(refs, [n])`, tests/pallas/mosaic_gpu_test.py):
    # the pieces of the refs are refs.
    Api("split_list", ("jax._src.util.split_list", "jax._src.util.split_list_checked"),
        Family.SEQUENCE),
    # -- other ----------------------------------------------------------------------------------
    Api("stop_gradient", ("jax.lax.stop_gradient", "jax._src.lax.lax.stop_gradient"),
        Family.ARRAY, Result.ARRAY),
    Api("optimization_barrier", ("jax.lax.optimization_barrier",
                                 "jax._src.ad_checkpoint.optimization_barrier"),
        Family.ARRAY, Result.PASS_THROUGH, accepts_refs_since=(0, 11, 0)),
    # Measured 0.10.2 and 0.12.0.1: device_get gives back the ref itself (a "snapshot" that
    # keeps changing), device_put fails ("No pxla_result_handler for type ... AbstractRef").
    Api("device_get", _src("api", "device_get"), Family.ARRAY, Result.PASS_THROUGH,
        word="which returns the ref itself, not a copy of its value: later writes show "
             "through the \"snapshot\""),
    Api("device_put", _src("api", "device_put"), Family.ARRAY, Result.ARRAY,
        word="which fails on a Ref (`TypeError: No pxla_result_handler for type ... "
             "AbstractRef`)"),
    Api("partial", ("functools.partial",), Family.PARTIAL),
    # Entries of `vjp_fn.with_refs(...)` other than a gradient ref (JAX 0.10.2 and later).
    Api("GradValue", ("jax.ad.GradValue",), Family.GRAD_ENTRY, word="return the gradient as a "
        "value"),
    Api("DontWant", ("jax.ad.DontWant",), Family.GRAD_ENTRY, word="skip the gradient"),
    # Decorators that give back a function that runs the same way (a name for profiles).
    Api("named_scope", _src("api", "named_scope"), Family.WRAPPER, Result.FUNCTION,
        factory="always"),
    Api("named_call", _src("api", "named_call"), Family.WRAPPER, Result.FUNCTION),
    # `@functools.wraps(fn) def wrapper(*args): ...` (a Pallas test's kernel wrapper): the
    # decorated function itself.
    Api("wraps", ("functools.wraps",), Family.WRAPPER, Result.FUNCTION, factory="always"),
    # Flax NNX: a module/state whose arrays were turned into refs (the seed's API).
    Api("to_refs", ("flax.nnx.to_refs", "flax.nnx.variablelib.to_refs",
                    "flax.nnx.graphlib.to_refs"),
        Family.NNX, Result.REF_TREE, ref_source=True, seed_api=True),
    # -- Flax NNX (docs/flax-nnx.md) -------------------------------------------------------------
    # Refs on/off: `with nnx.var_defaults(ref=True):` (flax 0.12), `with nnx.use_refs(True):`
    # (the seed's API, before 0.12); also called as a plain statement (a global switch) or as a
    # decorator (the function runs with refs on).
    Api("var_defaults", ("flax.nnx.var_defaults", "flax.nnx.variablelib.var_defaults"),
        Family.NNX, Result.REF_SWITCH, ref_source=True),
    Api("use_refs", ("flax.nnx.use_refs", "flax.nnx.variablelib.use_refs"),
        Family.NNX, Result.REF_SWITCH, ref_source=True, seed_api=True),
    Api("with_vars", ("flax.nnx.with_vars", "flax.nnx.graphlib.with_vars", "flax.nnx.vars_as",
                      "flax.nnx.graphlib.vars_as"),
        Family.NNX, Result.NNX_WITH_VARS, ref_source=True),
    Api("to_arrays", ("flax.nnx.to_arrays", "flax.nnx.variablelib.to_arrays",
                      "flax.nnx.graphlib.to_arrays"),
        Family.NNX, Result.ARRAY_TREE, seed_api=True),
    Api("nnx_split", ("flax.nnx.split", "flax.nnx.graphlib.split"), Family.NNX,
        Result.NNX_SPLIT),
    Api("nnx_merge", ("flax.nnx.merge", "flax.nnx.graphlib.merge"), Family.NNX,
        Result.NNX_MERGE),
    # Variables: refs with `ref=True` (flax 0.12) or `is_hijax=True` (the seed's API), or when
    # created with refs on.
    Api("nnx_variable", tuple(f"flax.nnx.{m}{v}" for m in ("", "variablelib.") for v in (
        "Variable", "Param", "BatchStat", "Cache", "Intermediate", "Perturbation"))
        + ("flax.nnx.rnglib.RngState", "flax.nnx.rnglib.RngKey", "flax.nnx.rnglib.RngCount"),
        Family.NNX, Result.NNX_OBJECT, ref_keywords=("ref", SEED_REF_KEYWORD),
        word="a Variable"),
    # Base classes of the module's own NNX classes, and flax's objects that hold Variables.
    Api("nnx_module", ("flax.nnx.Module", "flax.nnx.module.Module", "flax.nnx.Pytree",
                       "flax.nnx.pytreelib.Pytree", "flax.nnx.Object", "flax.nnx.object.Object"),
        Family.NNX, Result.NNX_OBJECT, word="a Module"),
    Api("nnx_layer", tuple(f"flax.nnx.{n}" for n in (
        "Linear", "LinearGeneral", "Einsum", "Conv", "ConvTranspose", "Embed",
        "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm", "MultiHeadAttention", "LoRA",
        "LoRALinear", "Rngs", "RngStream", "LSTMCell", "Dropout", "Sequential", "List", "Dict",
        "GRUCell", "SimpleCell", "OptimizedLSTMCell")),
        Family.NNX, Result.NNX_OBJECT, word="a Module"),
    # Measured on flax 0.12.8 + JAX 0.10.2 (docs/flax-nnx.md): in training a BatchNorm call
    # writes its batch statistics (under jax.vmap of a closure: JAX's set/swap error; under
    # jax.grad: the differentiated-value error on flax 0.12.8, none on flax 0.12.12, which
    # stop_gradients them: not reported), `Optimizer.update` its state and the model's
    # parameters. (Dropout's and Rngs' counters fail with Flax's TraceContextError instead:
    # not modelled.)
    Api("nnx_batch_norm", ("flax.nnx.BatchNorm", "flax.nnx.nn.normalization.BatchNorm"),
        Family.NNX, Result.NNX_OBJECT, word="a Module", call_writes="__call__",
        write_unless=("use_running_average",), writes_stop_gradient=True),
    Api("nnx_optimizer", ("flax.nnx.Optimizer", "flax.nnx.ModelAndOptimizer",
                          "flax.nnx.training.optimizer.Optimizer"),
        Family.NNX, Result.NNX_OBJECT, word="a Module", call_writes="update"),
    # nnx.data(x): marks an attribute's value as pytree data (`self.layers = nnx.data([...])`):
    # the value itself. (nnx.static(x) makes it static, no leaves: not an entry, so unknown.)
    Api("nnx_data", ("flax.nnx.data", "flax.nnx.pytreelib.data"), Family.NNX,
        Result.PASS_THROUGH),
    # nnx.split_rngs(splits=n) as a decorator: the function, run the same way (its Rngs split).
    Api("nnx_split_rngs", ("flax.nnx.split_rngs", "flax.nnx.rnglib.split_rngs"),
        Family.WRAPPER, Result.FUNCTION, factory="kwargs"),
    # nnx.state(obj, *filters): the object's state; it holds refs when the object does.
    Api("nnx_state", ("flax.nnx.state", "flax.nnx.graphlib.state", "flax.nnx.variables",
                      "flax.nnx.graphlib.variables"),
        Family.NNX, Result.NNX_STATE),
    # Flax NNX transforms: measured semantics in ROLES (Role.NNX_*).
    Api("nnx_jit", ("flax.nnx.jit", "flax.nnx.transforms.compilation.jit"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.NNX_JIT, checks_closure=True,
        word="an nnx.jit function", call_word="an nnx.jit function"),
    Api("nnx_vmap", ("flax.nnx.vmap", "flax.nnx.transforms.iteration.vmap"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.NNX_VMAP, word="an nnx.vmap function"),
    Api("nnx_scan", ("flax.nnx.scan", "flax.nnx.transforms.iteration.scan"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.NNX_SCAN, word="an nnx.scan body"),
    # nnx.grad of a module holding refs fails like jax.grad (measured, REF016).
    Api("nnx_grad", ("flax.nnx.grad", "flax.nnx.transforms.autodiff.grad"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.NNX_GRAD, argnums=True,
        ref_argument_error=_ref_argument_error("grad")),
    Api("nnx_value_and_grad", ("flax.nnx.value_and_grad",
                               "flax.nnx.transforms.autodiff.value_and_grad"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.NNX_VALUE_AND_GRAD, argnums=True,
        ref_argument_error=_ref_argument_error("grad")),
    # -- records and pytrees (reflint/analysis/objects.py) ----------------------------------------
    Api("dataclass", ("dataclasses.dataclass", "flax.struct.dataclass",
                      "jax.tree_util.register_dataclass", "chex.dataclass",
                      "chex.mappable_dataclass", "flax.struct.PyTreeNode",
                      "jax._src.tree_util.register_dataclass"),
        Family.RECORD, record="dataclass"),
    Api("NamedTuple", ("typing.NamedTuple", "typing_extensions.NamedTuple"), Family.RECORD,
        record="namedtuple"),
    # dataclasses.replace(obj, **changes): a copy of a record with those fields changed.
    Api("dataclass_replace", ("dataclasses.replace",), Family.RECORD, record="replace"),
    Api("register_pytree_node_class", ("jax.tree_util.register_pytree_node_class",
                                       "jax._src.tree_util.register_pytree_node_class",
                                       "jax.tree_util.register_pytree_with_keys_class"),
        Family.RECORD, record="pytree"),
    Api("tree_map", ("jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map",
                     "jax._src.tree_util.tree_map"),
        Family.TREE, tree_op="map"),
    Api("tree_leaves", ("jax.tree.leaves", "jax.tree_util.tree_leaves", "jax.tree_leaves",
                        "jax._src.tree_util.tree_leaves"),
        Family.TREE, tree_op="leaves"),
    Api("tree_flatten", ("jax.tree.flatten", "jax.tree_util.tree_flatten", "jax.tree_flatten",
                         "jax._src.tree_util.tree_flatten"),
        Family.TREE, tree_op="flatten"),
    Api("tree_unflatten", ("jax.tree.unflatten", "jax.tree_util.tree_unflatten",
                           "jax.tree_unflatten", "jax._src.tree_util.tree_unflatten"),
        Family.TREE, tree_op="unflatten"),
    Api("nnx_remat", ("flax.nnx.remat", "flax.nnx.transforms.autodiff.remat"),
        Family.TRANSFORM, Result.FUNCTION, role=Role.NNX_REMAT,
        word="a checkpointed (nnx.remat) function"),
)

API: dict = {a.name: a for a in APIS}
CANONICAL: dict = {qn: a.name for a in APIS for qn in a.spellings}


def lookup(qualname: Optional[str]) -> Optional[Api]:
    """The registry entry for a qualified name, or None."""
    if qualname is None:
        return None
    name = CANONICAL.get(qualname)
    return API[name] if name is not None else None


def canonical(qualname: Optional[str]) -> Optional[str]:
    """The canonical API name for a qualified name, or None if reflint does not know it."""
    if qualname is None:
        return None
    return CANONICAL.get(qualname)


def names_where(pred) -> frozenset:
    """The canonical names of the APIs for which ``pred(api)`` holds."""
    return frozenset(a.name for a in APIS if pred(a))


def family(*families: Family) -> frozenset:
    return names_where(lambda a: a.family in families)


# Canonical names, for the analysis and the rules (each is an entry above).
NEW_REF, EMPTY_REF, FREEZE, REF_TYPE = "new_ref", "empty_ref", "freeze", "Ref"
FREE_REF = "free_ref"
REF_GET, REF_SET, REF_SWAP, REF_ADDUPDATE = "ref_get", "ref_set", "ref_swap", "ref_addupdate"
JIT, VMAP, PMAP, SHARD_MAP = "jit", "vmap", "pmap", "shard_map"
GRAD, VALUE_AND_GRAD, JACREV, JACFWD, HESSIAN = "grad", "value_and_grad", "jacrev", "jacfwd", \
    "hessian"
JVP, VJP, LINEARIZE, CHECKPOINT = "jvp", "vjp", "linearize", "checkpoint"
CUSTOM_VJP, CUSTOM_JVP = "custom_vjp", "custom_jvp"
SCAN, COND, SWITCH, WHILE_LOOP, FORI_LOOP, MAP = "scan", "cond", "switch", "while_loop", \
    "fori_loop", "map"
PALLAS_CALL, RUN_SCOPED, EMIT_PIPELINE = "pallas_call", "run_scoped", "emit_pipeline"
STOP_GRADIENT, PARTIAL, TO_REFS = "stop_gradient", "partial", "to_refs"
NNX_SPLIT, NNX_MERGE = "nnx_split", "nnx_merge"

# Derived tables.
REF_CONSTRUCTORS = family(Family.REF_CONSTRUCTOR)
REF_WRITERS = family(Family.REF_WRITE)
FUNCTION_TRANSFORMS = family(Family.TRANSFORM)
CONTROL_FLOW = family(Family.CONTROL_FLOW)
KERNEL_APIS = family(Family.KERNEL)
BLOCK_SPEC = "BlockSpec"
BLOCK_SPEC_APIS = family(Family.BLOCK_SPEC)
CALLING_APIS = family(Family.TRANSFORM, Family.CONTROL_FLOW, Family.KERNEL, Family.INLINE,
                      Family.PARTIAL)
# APIs the analysis applies to a function given as a decorator (or through partial).
DECORATOR_APIS = family(Family.TRANSFORM, Family.KERNEL, Family.INLINE, Family.WRAPPER)
MAP_TRANSFORMS = names_where(lambda a: a.role is not None and ROLES[a.role].maps)
GRAD_TRANSFORMS = names_where(lambda a: a.role is not None and ROLES[a.role].differentiates)
# APIs whose result the analysis takes for an Array.
ARRAY_RESULT_APIS = names_where(lambda a: a.result is Result.ARRAY)
# APIs that trace a function once per call (the Python code of the function runs once).
ONCE_PER_TRACE_APIS = names_where(
    lambda a: (a.role is not None and ROLES[a.role].once_per_trace) or
    any(c.role is not None and ROLES[c.role].once_per_trace for c in a.callees))
# The APIs through which the analysis can produce a Ref value (constructors, the Ref type in
# annotations, the APIs whose functions receive refs). A file that spells none of their names
# cannot hold a ref; the rules' pre-filter (reflint.rule.REF_TRIGGERS) is derived from them.
REF_SOURCES = names_where(lambda a: a.ref_source)
# APIs that make a ref-holding NNX object when called with one of their ref_keywords true
# (`nnx.Param(x, ref=True)`): the gate looks for the keyword, the text filter for the name.
REF_KEYWORD_SOURCES = names_where(lambda a: bool(a.ref_keywords))
REF_KEYWORDS = frozenset(k for a in APIS for k in a.ref_keywords)


def callee_roles(api_name: str) -> tuple:
    """The roles an API gives the functions it calls (its own for a transform)."""
    a = API[api_name]
    if a.role is not None:
        return (a.role,)
    return tuple(c.role for c in a.callees if c.role is not None)


def spelled_names(names) -> list:
    """The last component of every spelling of the APIs ``names``: a use of one of them
    spells it in the text (an attribute, an imported name or an annotation string)."""
    return sorted({qn.rsplit(".", 1)[-1] for qn, canon in CANONICAL.items() if canon in names})


# The words of the seed's NNX API (flax before 0.12): a file spelling one is written for it.
SEED_NNX_WORDS = tuple(spelled_names(names_where(lambda a: a.seed_api))) + (SEED_REF_KEYWORD,)


def ref_source_names() -> list:
    """The words of REF_SOURCES: a file without any cannot hold a ref the analysis sees
    (unless it passes one of REF_KEYWORDS: see ref_trigger)."""
    return spelled_names(REF_SOURCES)


def ref_trigger() -> str:
    """The pre-filter regex of the rules that need a ref: a word of REF_SOURCES, or one of
    REF_KEYWORDS (passed to a call: `nnx.Param(x, ref=True)`; as a word, since a keyword
    argument may be spelled across lines)."""
    return r"\b(?:" + "|".join(spelled_names(REF_SOURCES) + sorted(REF_KEYWORDS)) + r")\b"


def trigger_words(names) -> str:
    """A pre-filter regex matching any of the words of the APIs ``names``."""
    return words_pattern(spelled_names(names))


def words_pattern(words) -> str:
    """A pre-filter regex matching any of ``words`` (names a use spells in the text)."""
    return r"\b(?:" + "|".join(sorted(words)) + r")\b"


def availability_names() -> list:
    """The last component of every name of AVAILABILITY and KWARG_AVAILABILITY (a use of the
    name spells it in the text)."""
    return sorted({q.rsplit(".", 1)[-1] for q in AVAILABILITY} |
                  {name for name, _ in KWARG_AVAILABILITY})


_PROBLEM_NAMES: dict = {}


def problem_names(version: tuple) -> tuple:
    """The last components of every API name missing or deprecated at ``version``."""
    words = _PROBLEM_NAMES.get(version)
    if words is None:
        words = _PROBLEM_NAMES[version] = tuple(sorted(
            {q.rsplit(".", 1)[-1] for q in AVAILABILITY
             if availability(q, version)[0] in (NO, DEPRECATED)}))
    return words


def word_char(c: str) -> bool:
    """Whether ``c`` can be part of an identifier (``\\w``)."""
    return c.isalnum() or c == "_"


def whole_words(source: str, word: str):
    """The offsets at which ``source`` spells ``word`` as a whole word (``\\bword\\b``), by
    substring search: for a few words, ten times faster than a regex between word
    boundaries, which cannot skip ahead on a literal."""
    find, n = source.find, len(word)
    i = find(word)
    while i >= 0:
        if not (i and word_char(source[i - 1])) and not word_char(source[i + n:i + n + 1]):
            yield i
        i = find(word, i + 1)


def spells_problem_name(source: str, version: tuple) -> bool:
    """Whether ``source`` spells one of ``problem_names(version)`` as a whole word: a text
    that does not uses none of those APIs (REF015's question, and the gate's)."""
    return any(next(whole_words(source, w), None) is not None for w in problem_names(version))


# --------------------------------------------------------------------------------------------
# Array functions
# --------------------------------------------------------------------------------------------

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
# Of those, the ones that make a new Array (shaped like their argument).
ARRAY_LIKE_CONSTRUCTORS = frozenset({"zeros_like", "ones_like", "full_like", "empty_like"})
# Methods that JAX's own test base classes define as thin wrappers of an API
# (jax/_src/pallas/pallas_test_util.py: `self.pallas_call(kernel, ...)` forwards to
# `pl.pallas_call` with `interpret=...`). A call of such a method on `self`/`cls` of a class
# that inherits it from an imported base stands for the API (the analysis cannot see the base).
INHERITED_WRAPPERS = {"pallas_call": "jax.experimental.pallas.pallas_call"}
# `functools.partial(kernel, **config)`: which parameters the mapping binds is not known. A
# Pallas kernel gets its refs positionally, so the mapping binds only parameters after them
# (or keyword-only ones); the positional parameters spelled as refs (`x_ref`, Pallas' own
# convention) are taken to be the refs, the others to be bound (analysis.calls._call_partial).
REF_PARAM_SUFFIX = "_ref"


def spelled_as_ref(name: str, tuple_of_refs: bool = False) -> bool:
    """``name`` is spelled as a ref (``x_ref``) or, for a ``*args`` parameter
    (``tuple_of_refs``), as a tuple of refs (``*refs``, ``*scalar_refs``)."""
    if tuple_of_refs:
        return name == "refs" or name.endswith(REF_PARAM_SUFFIX + "s")
    return name.endswith(REF_PARAM_SUFFIX)
# Ahead-of-time methods of a jit-wrapped function: `jax.jit(f).trace(*args)` traces `f` once,
# explicitly, at that point; `f` itself is never called through the wrapper (REF012).
AOT_METHODS = frozenset({"trace", "lower", "eval_shape"})
# Test parameterization decorators: each test case calls the test function with the values
# the decorator lists, bound to its parameters (analysis/cases.py; values.CaseVal). The form
# says how the decorator's arguments list the cases (absl.testing.parameterized, pytest):
# "parameters": `parameters(*cases)`: a case is a tuple or list (positional arguments after
#     `self`), a dict or `dict(...)` (keyword arguments) or one other value; a single argument
#     that is neither a tuple nor a dict is the list of cases;
# "named_parameters": the same, a case's first element (or its `testcase_name` key) its name;
# "product": `product(*dict_lists, **grid)`: each keyword lists its parameter's values, each
#     positional list holds dicts of keyword arguments;
# "parametrize": `parametrize(argnames, argvalues, *, indirect=False, ids=None)`: names in a
#     "a, b" string or a list; one value per case for one name, else a tuple per case;
#     `pytest.param(*values, id=...)` is one case. Values given to fixtures (`indirect`) are
#     not the parameters' values.
TEST_CASE_DECORATORS = {
    "absl.testing.parameterized.parameters": "parameters",
    "absl.testing.parameterized.named_parameters": "named_parameters",
    "absl.testing.parameterized.product": "product",
    "pytest.mark.parametrize": "parametrize",
}
TEST_CASE_PARAM = "pytest.param"
# The keyword naming an absl case (`dict(testcase_name="x", a=1)`).
TEST_CASE_NAME_KEY = "testcase_name"
# Methods that store their argument(s) into a Python container (REF012).
STORE_METHODS = frozenset({"append", "extend", "insert", "update", "add", "appendleft",
                           "extendleft"})
# Calls that build a new Python container (REF012 takes only such names for outer state).
CONTAINER_CONSTRUCTORS = frozenset({
    "builtins.list", "builtins.dict", "builtins.set", "collections.defaultdict",
    "collections.OrderedDict", "collections.deque", "collections.Counter",
})
# The JAX Array type, as a parameter's annotation: the parameter holds an immutable Array
# (REF013). Not `jax.typing.ArrayLike`, which admits NumPy arrays.
ARRAY_TYPES = frozenset({"jax.Array", "jax.numpy.ndarray"})
ARRAY_TYPE_WORDS = frozenset(qn.rsplit(".", 1)[1] for qn in ARRAY_TYPES)
# Calls that build a plain attribute bag, used as mutable state (`state.count = ...`).
NAMESPACE_CONSTRUCTORS = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
NAMESPACE_WORDS = frozenset(qn.rsplit(".", 1)[1] for qn in NAMESPACE_CONSTRUCTORS)
# Functions of those modules whose result is metadata, never taken for an Array by REF013.
ARRAY_METADATA_FUNCTIONS = frozenset({
    "shape", "dtype", "iinfo", "finfo", "result_type", "promote_types", "broadcast_shapes",
    "initializers", "key_data", "split_key",
})
# What selects between its operands, by the last name it is spelled with: `jnp.where(c, a,
# b)`, `lax.select`/`select_n`, and the control flow running one of several functions
# (`lax.cond`, `lax.switch`). A value read inside one may be left out: REF028 counts a store
# that reads a ref only there as one that may initialise it.
SELECTING_WORDS = frozenset({"where", "select", "select_n", "cond", "switch"})
# The same in a traced program: the primitives those become (the runtime's REF028 check).
SELECTING_PRIMITIVES = frozenset({"select_n", "cond"})
# Pallas's index constructors: an index built by one (`x_ref[pl.ds(0, 8)]`, `x_ref[pl.ds(i,
# n), :]`) indexes a ref, which a pytree of refs (a tuple, a dict) cannot take: the subscript
# reads the ref.
REF_INDEXERS = frozenset({"jax.experimental.pallas.ds", "jax.experimental.pallas.dslice",
                          "jax.experimental.pallas.Slice"})
# What describes one array, by the last name of the call spelling it: given as a
# `pallas_call`'s `out_shape` (alone, or as an element of a literal tuple or list), each is one
# output ref of the kernel. `jax.ShapeDtypeStruct(...)` and `.like(x)`, `jax.typeof(x)` (an
# Array's type), a memory space's allocation (`pltpu.VMEM(shape, dtype)`, `pltpu.ANY(...)`,
# `pl.MemoryRef(aval, space)`) and a semaphore type's (`pltpu.SemaphoreType.DMA(())`).
ONE_ARRAY_DESCRIPTIONS = frozenset({"ShapeDtypeStruct", "typeof", "VMEM", "SMEM", "HBM", "ANY",
                                    "MemoryRef"})
# ... and a call of an attribute of these: `jax.ShapeDtypeStruct.like(x)`,
# `pltpu.SemaphoreType.DMA(())`.
ONE_ARRAY_DESCRIPTION_OWNERS = frozenset({"ShapeDtypeStruct", "SemaphoreType"})
# Functions of the array modules that return a Python list/tuple of arrays, not an Array
# (item assignment on their result is fine; an element of it is an Array).
SEQUENCE_RESULT_FUNCTIONS = frozenset({
    "meshgrid", "split", "array_split", "hsplit", "vsplit", "dsplit", "broadcast_arrays",
    "unstack", "nonzero", "where", "histogram", "histogram2d", "histogramdd", "unravel_index",
    "indices", "diag_indices", "tril_indices", "triu_indices", "mask_indices", "shape",
    "tril_indices_from", "triu_indices_from", "diag_indices_from", "ix_", "divmod", "frexp",
    "modf", "unique", "unique_all", "unique_counts", "unique_inverse", "eigh", "eig", "svd",
    "qr", "slogdet", "lu", "lu_factor", "polyfit", "sort_key_val", "top_k", "approx_max_k",
    "approx_min_k", "scan", "while_loop", "fori_loop", "cond", "switch", "map",
    "associative_scan", "reduce", "sort", "all_gather", "psum", "pmean", "pmax", "pmin",
    "ppermute", "optimization_barrier", "broadcast_shapes", "dtype", "iinfo", "finfo",
    "result_type", "promote_types", "linear_solve", "custom_root", "custom_linear_solve",
    "key_data", "split_key", "initializers",
})
# Modules whose functions return JAX Arrays (for REF013 and for "is this an Array").
JAX_ARRAY_MODULES = ("jax.numpy.", "jax.lax.", "jax.random.", "jax.nn.", "jax.scipy.")
# Packages whose own functions (not their submodules') are those of `jax.numpy`: JAX's modules
# spell it `from jax._src import numpy as jnp`.
JAX_ARRAY_NAMESPACES = ("jax._src.numpy.",)
# Pallas functions (of kernels) that return an Array (annotated `-> jax.Array` or binding a
# primitive on Arrays, JAX 0.10.2 and 0.12.0.1): `o_ref = pltpu.roll(x, 1, 0)` rebinds an output
# ref to an Array (REF019). Not array functions for REF007: what they do with a ref is not
# measured.
PALLAS_ARRAY_FUNCTIONS = frozenset(
    [f"jax.experimental.pallas.tpu.{n}" for n in (
        "bitcast", "roll", "stochastic_round", "pack_elementwise", "unpack_elementwise",
        "matmul_pop", "prng_random_bits", "stateful_uniform", "stateful_normal",
        "stateful_bits", "stateful_bernoulli", "reciprocal")] +
    ["jax.experimental.pallas.reciprocal"])

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
# Methods and properties of an Array whose result is an Array (`(x_ref[...] ** 2).mean(1)`).
ARRAY_RESULT_METHODS = ARRAY_ONLY_ATTRIBUTES - frozenset({
    "T", "mT", "real", "imag", "item", "tolist", "nonzero", "block_until_ready",
    "addressable_data", "device", "devices", "__array__"})
ARRAY_RESULT_PROPERTIES = frozenset({"T", "mT", "real", "imag"})
# Ref views: on a traced ref (inside jit, a Pallas kernel, any trace) these give a ref view
# (a TransformedRef: still a ref, read with [...]). Defined on AbstractRef in
# jax/_src/state/types.py in 0.10.2, 0.11.2 and 0.12 (measured: a view inside jit and inside a
# pallas_call kernel under interpret=True on each); a concrete Ref at top level has none of them
# (AttributeError) but `.at`, which raises NotImplementedError up to 0.11 and gives a view on
# 0.12.
REF_VIEW_ATTRIBUTES = frozenset({"reshape", "T", "transpose", "bitcast", "at"})

# `if TYPE_CHECKING: plgpu = _plgpu else: plgpu = <a copy of that module>` (JAX's
# mosaic_gpu_test.py): a name the runtime branch makes unknown is what the checked branch says.
TYPE_CHECKING = "typing.TYPE_CHECKING"
# Those of them that are properties (the view itself), not methods called to make it.
REF_VIEW_PROPERTIES = frozenset({"T"})

# Array functions whose result carries no derivative, whatever their arguments (REF008).
NO_TANGENT_FUNCTIONS = frozenset({
    "shape", "ndim", "size", "dtype", "result_type", "zeros_like", "ones_like", "empty_like",
    "argmax", "argmin", "argsort", "argwhere", "nonzero", "flatnonzero", "searchsorted",
    "isnan", "isinf", "isfinite", "isclose", "allclose", "array_equal", "sign", "floor_divide",
    "issubdtype", "iinfo", "finfo", "eye", "arange", "zeros", "ones", "empty", "full",
    "broadcast_shapes", "bincount", "digitize", "logical_and", "logical_or", "logical_not",
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "stop_gradient",
})


# Ref kinds (`new_ref(..., kind=...)`) whose writes are not repeated by rematerialization:
# 'no_grad_no_remat' (JAX 0.10.2 on), and its earlier name in JAX's own tests.
NO_REMAT_KINDS = ("no_grad_no_remat", "anselm_ref")
# Ref kinds that take differentiated values (REF008 stays silent): 'no_grad_no_remat' (measured:
# JAX 0.10.2 and 0.12.0.1 accept `x_ref[...] += y * y` under jax.grad), and 'anselm_ref', which
# JAX's own tests at HEAD use so (0.10.2 still raises: reflint stays silent when in doubt).
NO_GRAD_KINDS = NO_REMAT_KINDS

BUILTINS_NEEDING_ARRAY = frozenset({"float", "int", "complex", "abs", "round"})


def accepts_refs(qualname: str, version: tuple) -> bool:
    """An array function that takes refs at ``version`` (optimization_barrier on 0.12)."""
    a = lookup(qualname)
    return a is not None and a.accepts_refs_since is not None and \
        version >= a.accepts_refs_since


def is_array_function(qualname: str) -> bool:
    """True for functions of jax.numpy / jax.lax / numpy that compute on array values."""
    a = lookup(qualname)
    if a is not None and a.family is not Family.ARRAY:
        return False
    for mod in ARRAY_FUNCTION_MODULES:
        if qualname.startswith(mod):
            rest = qualname[len(mod):]
            if "." in rest:  # e.g. jax.numpy.linalg.norm: still array code
                rest = rest.rsplit(".", 1)[1]
            return rest not in ARRAY_FUNCTION_EXEMPT and not rest.startswith("_")
    return False


# Modules whose array functions reject an unread Ref with an error on JAX 0.10.2 and 0.12
# (REF007's runtime messages): a name passed to one is not a ref in a program that runs
# (REF023's evidence, analysis/arrayness.py). Not NumPy or `math`: a concrete Ref converts.
REF_REJECTING_MODULES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.",
                         "jax._src.numpy.", "jax._src.lax.lax.")
# Array functions that accept a ref without an error on some line (silently wrong:
# `lax.stop_gradient(ref)` returns it, `jnp.asarray(ref)` inside jit on 0.10.2 gives a
# Ref-typed tracer): no evidence either way.
REF_TOLERANT_FUNCTIONS = frozenset({"asarray", "array", "stop_gradient", "optimization_barrier",
                                    "copy"})
# Methods of an Array that a ref lacks on every line (not the ref views of
# REF_VIEW_ATTRIBUTES): their result is never a ref, and a name they are called on is none.
NON_REF_RESULT_METHODS = frozenset({
    "sum", "mean", "max", "min", "prod", "std", "var", "astype", "squeeze", "ravel", "flatten",
    "dot", "argmax", "argmin", "argsort", "sort", "cumsum", "cumprod", "clip", "round", "conj",
    "conjugate", "any", "all", "repeat", "take", "trace", "diagonal", "swapaxes", "item",
    "tolist"})


# Flax NNX APIs that make Variables holding refs (`nnx.Param(x, ref=True)`, `nnx.use_refs`,
# `nnx.to_refs`, `nnx.var_defaults(ref=True)` ...): in a file that mentions them, a Variable
# may hold a ref, does arithmetic, and writes through `.at[i].set(v)` on JAX 0.12 (flax
# 0.12.12, measured): REF023's evidence from uses is not taken there.
NNX_REF_MODE = lazy_re(r"\b(?:use_refs|to_refs|var_defaults|vars_as|with_vars|new_ref|"
                       r"mutable_array|array_ref|Ref)\b|\bref\s*=\s*True")


# Array functions (of JAX_ARRAY_MODULES) whose result is a tuple/list of Arrays:
# `a, b = jnp.split(x, 2)` binds Arrays (not the control-flow ones, whose result is a carry).
ARRAY_SEQUENCE_FUNCTIONS = SEQUENCE_RESULT_FUNCTIONS - frozenset({
    "scan", "while_loop", "fori_loop", "cond", "switch", "map", "associative_scan", "reduce",
    "optimization_barrier", "linear_solve", "custom_root", "custom_linear_solve", "shape",
    "dtype", "iinfo", "finfo", "result_type", "promote_types", "broadcast_shapes",
    "initializers", "all_gather", "psum", "pmean", "pmax", "pmin", "ppermute"})


# Parameter annotations that say Array (REF023's evidence: a value passed there is no ref):
# jax.Array, and jaxtyping's (`Array`, `Float[Array, "n"]` ...), chex's.
ARRAY_ANNOTATIONS = ARRAY_TYPES | frozenset(
    {f"jaxtyping.{n}" for n in ("Array", "Float", "Int", "Bool", "Shaped", "Num", "Real",
                                 "Inexact", "Integer", "UInt", "Complex", "Float32",
                                 "Int32", "BFloat16")} | {"chex.Array"})


# Loops whose result is their final carry, and the position of the init (REF023: a carry whose
# init is an Array is one after the loop).
LOOP_INIT_POSITIONS = {"fori_loop": 3, "while_loop": 2}  # canonical names
# Loops whose result is made of carries (and, for scan, stacked outputs): JAX rejects a ref
# there, so no part of the result is one (REF023).
CARRY_RESULT_LOOPS = frozenset({FORI_LOOP, WHILE_LOOP, SCAN})


def rejects_refs(qualname: str) -> bool:
    """An array function that raises on an unread ref on every measured JAX line."""
    if not qualname.startswith(REF_REJECTING_MODULES) or not is_array_function(qualname):
        return False
    a = lookup(qualname)
    if a is not None and a.accepts_refs_since is not None:
        return False
    return qualname.rsplit(".", 1)[1] not in REF_TOLERANT_FUNCTIONS


def returns_jax_array(qualname: str) -> bool:
    if canonical(qualname) is not None:
        return False
    for ns in JAX_ARRAY_NAMESPACES:
        if qualname.startswith(ns):
            return "." not in qualname[len(ns):]
    return qualname.startswith(JAX_ARRAY_MODULES) or qualname in PALLAS_ARRAY_FUNCTIONS


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


# --------------------------------------------------------------------------------------------
# Dtypes (reflint/analysis/dtypes.py): what the array constructors and functions give.
# Measured on JAX 0.10.2 and 0.12.0.1 with 64-bit types off (the default): a ref write must
# match the ref's dtype exactly, Python scalars included (`f32_ref[...] = 0` fails: "Invalid
# dtype for `swap`. Ref dtype: float32. Value dtype: int32"); NumPy's 64-bit values are
# canonicalized to 32 bits first.
# --------------------------------------------------------------------------------------------

DTYPE_KINDS = {  # dtype -> (kind, bits): kind 0 bool, 1 signed int, 2 unsigned, 3 float, 4 complex
    "bool": (0, 8), "int8": (1, 8), "int16": (1, 16), "int32": (1, 32), "int64": (1, 64),
    "uint8": (2, 8), "uint16": (2, 16), "uint32": (2, 32), "uint64": (2, 64),
    "bfloat16": (3, 16), "float16": (3, 16), "float32": (3, 32), "float64": (3, 64),
    "complex64": (4, 64), "complex128": (4, 128),
    # Some float dtype, which one unknown: what `jnp.mean`/`jnp.sin` give for unknown input.
    "floating": (3, 0),
}
# Other spellings of those dtypes (the last name of `jnp.X`, `np.X`, a builtin, a string).
DTYPE_ALIASES = {
    "bool_": "bool", "half": "float16", "single": "float32", "double": "float64",
    "float_": "float32", "int_": "int32", "uint": "uint32", "complex_": "complex64",
    "float": "float32", "int": "int32", "complex": "complex64", "bf16": "bfloat16",
    "f32": "float32", "f16": "float16", "i32": "int32",
}
# The default dtype of each kind's Python scalar and of `jnp` constructors (64-bit types off).
DEFAULT_INT, DEFAULT_FLOAT, DEFAULT_COMPLEX = "int32", "float32", "complex64"

# Array constructors: last name -> (how the dtype is found, position of the dtype argument).
# "float": the default float dtype unless `dtype=` says; "like": the first argument's dtype;
# "fill": the fill value's (argument 1); "data": the data's (argument 0); "arange": int when
# every bound is an int, else float; "int"/"bool": that dtype.
ARRAY_CONSTRUCTOR_DTYPES = {
    "zeros": ("float", 1), "ones": ("float", 1), "empty": ("float", 1), "eye": ("float", 3),
    "identity": ("float", 1), "linspace": ("float", 5), "full": ("fill", 2),
    "zeros_like": ("like", 1), "ones_like": ("like", 1), "empty_like": ("like", 1),
    "full_like": ("like", 2), "array": ("data", 1), "asarray": ("data", 1),
    "arange": ("arange", 3),
    # jax.random (their dtype keyword is the last positional one)
    "normal": ("float", 2), "uniform": ("float", 2), "truncated_normal": ("float", 4),
    "randint": ("int", 4), "bernoulli": ("bool", None),
}
# Array functions by how their result's dtype follows their arguments: "same" (the first
# argument's), "promote" (the promotion of the first two), "inexact" (float for integer
# input), "bool", "index" (int32).
ARRAY_FUNCTION_DTYPES = {
    **dict.fromkeys(("reshape", "transpose", "squeeze", "expand_dims", "ravel", "flip",
                     "roll", "tile", "repeat", "broadcast_to", "negative", "abs", "absolute",
                     "max", "min", "amax", "amin", "cumsum", "clip", "sort", "square",
                     "stop_gradient", "concatenate", "stack", "take", "diag", "tril", "triu",
                     "pad", "where_values", "sign", "real", "conj"), "same"),
    **dict.fromkeys(("add", "subtract", "multiply", "maximum", "minimum", "dot", "matmul",
                     "einsum_pair", "power", "remainder", "floor_divide", "outer", "inner",
                     "kron"), "promote"),
    **dict.fromkeys(("sin", "cos", "tan", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt",
                     "tanh", "sigmoid", "relu", "gelu", "softmax", "log_softmax", "mean",
                     "var", "std", "true_divide", "divide", "arctan", "arcsin", "arccos",
                     "sinh", "cosh", "exp2", "log2", "log10", "logsumexp", "norm", "average",
                     "median", "erf", "silu", "softplus"), "inexact"),
    **dict.fromkeys(("greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
                     "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not",
                     "logical_xor", "any", "all", "isclose", "signbit"), "bool"),
    **dict.fromkeys(("argmax", "argmin", "argsort", "searchsorted", "count_nonzero",
                     "digitize"), "index"),
}
# Array methods (`x.sum()`, `x.astype(t)`) by the same classes; "astype": the argument's.
ARRAY_METHOD_DTYPES = {
    **dict.fromkeys(("reshape", "transpose", "squeeze", "ravel", "flatten", "max", "min",
                     "cumsum", "clip", "copy", "round", "conj", "swapaxes", "block_until_ready",
                     "sort"), "same"),
    **dict.fromkeys(("mean", "var", "std"), "inexact"),
    **dict.fromkeys(("any", "all"), "bool"),
    **dict.fromkeys(("argmax", "argmin", "argsort"), "index"),
    "astype": "astype", "view": "astype",
}
# Functional updates of an Array (`x.at[i].set(v)`): the result has ``x``'s dtype.
AT_UPDATE_METHODS = frozenset({"set", "add", "multiply", "mul", "divide", "power", "min",
                               "max", "apply"})

# Transforms that cache the trace of their function and reuse it for later calls with the same
# argument types: a closed-over ref is captured by the trace (REF024), and a custom_jvp
# function with ref effects fails under them (REF027; measured: jit).
CACHING_TRANSFORMS = frozenset({JIT, PMAP})
