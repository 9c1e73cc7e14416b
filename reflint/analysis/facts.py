"""The facts the evaluation records: what rules read (one dataclass per kind of fact)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Any, Optional

from .. import nodes as cst

from .. import api
from .._record import field, record
from ..values import (
    RefVal,
    Transform,
    Value,
)


@record(eq=False)
class Param:
    """A parameter of a function: its name, node, kind and annotation's qualified name."""

    name: str
    node: cst.Param
    kind: str  # 'pos' (positional or keyword), 'posonly', 'kwonly', 'vararg', 'kwarg'
    annotation_qn: Optional[str] = None


@record(eq=False)
class Role:
    """One way a function is traced: ``kind`` is a transform or a control-flow role."""

    kind: api.Role  # how it is traced (the registry's roles: api.ROLES)
    node: cst.CSTNode  # decorator, transform call or control-flow call
    transform: Optional[Transform] = None


@record(eq=False)
class FunctionInfo:
    """What the analysis knows of one function, lambda or the module's own code."""

    node: Any  # cst.FunctionDef | cst.Lambda | cst.Module
    name: str
    parent: Optional["FunctionInfo"]
    cls: Optional["ClassInfo"] = None
    params: list = field(default_factory=list)
    is_method: bool = False
    decorator_kinds: tuple = ()  # 'staticmethod', 'classmethod', 'property'
    roles: dict = field(default_factory=dict)  # (kind, id(node)) -> Role
    seeds: dict = field(default_factory=dict)  # param name -> Value (from call sites)
    defaults: dict = field(default_factory=dict)  # param name -> Value
    # param name -> ((label, expression), ...): the values a test parameterization decorator
    # binds to it, one per test case (cases.py); a parameter not bound by a call has them.
    cases: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)  # name -> joined Value of every binding
    closure_refs: dict = field(default_factory=dict)  # free name -> (RefVal, first load node)
    returns: list = field(default_factory=list)  # ReturnFact
    return_value: Optional[Value] = None
    callers: list = field(default_factory=list)  # (caller FunctionInfo, call node)
    custom_vjp: Optional[dict] = None  # for a custom_vjp primal: {'fwd': info, 'bwd': info}
    custom_vjp_primal: Optional["FunctionInfo"] = None  # for fwd/bwd rules
    # Runs with Flax NNX refs on: a call of it is made with refs on (every known call, for a
    # function that is not traced itself), or it is decorated `@nnx.var_defaults(ref=True)`.
    refs_mode: bool = False
    # For a function defined at module level: the module's names when its def ran (a name
    # defined several times, one def per notebook cell, resolves to the def before it).
    def_env: Optional[dict] = None
    # The enclosing scope's names at each call of this function made from that scope (this
    # round): a free name the scope binds several times takes the values reaching the calls.
    call_envs: list = field(default_factory=list)
    # Every name spelled in this function (nested scopes included): a superset of the free
    # names a call-time value is asked for; ``call_envs`` keep only these (see calls.py).
    read_names: Optional[frozenset] = None
    local_only: Optional[bool] = None  # only called from its scope's own code (see _local_only)

    @property
    def is_module(self) -> bool:
        return type(self.node) is cst.Module

    @property
    def is_lambda(self) -> bool:
        return type(self.node) is cst.Lambda

    def role_kinds(self) -> set:
        return {r.kind for r in self.roles.values()}

    def has_role(self, *kinds: str) -> bool:
        return any(r.kind in kinds for r in self.roles.values())

    def param(self, name: str) -> Optional[Param]:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def encloses(self, other: Optional["FunctionInfo"]) -> bool:
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<FunctionInfo {self.name}>"


@record(eq=False)
class ClassInfo:
    """What the analysis knows of one class definition."""

    node: cst.ClassDef
    name: str
    attrs: dict = field(default_factory=dict)  # self.<attr> -> joined Value
    methods: dict = field(default_factory=dict)  # name -> FuncVal
    # A Flax NNX class (a base is one, api.Result.NNX_OBJECT): "variable" (a Variable
    # subclass) or "module" (Module, Pytree); "" for any other class.
    nnx: str = ""
    # A subclass of a Pallas BlockSpec (api.Family.BLOCK_SPEC; `class PatchBlockSpec(
    # pl.BlockSpec)`): the functions its constructor is given are index maps.
    block_spec: bool = False
    bases: list = field(default_factory=list)  # ClassInfo of the bases defined in the module
    # How its instances are built (api.Api.record): "dataclass" / "namedtuple" (from the
    # fields, by position or keyword), "pytree" or "" (by its __init__). See objects.py.
    record: str = ""
    fields: list = field(default_factory=list)  # [(name, default expression or None)]

    def method(self, name: str, _depth: int = 0):
        """The method ``name`` of the class or, when it has none, of its bases (in order)."""
        if name in self.methods:
            return self.methods[name]
        if _depth < 8:
            for b in self.bases:
                m = b.method(name, _depth + 1)
                if m is not None:
                    return m
        return None


@record(eq=False)
class ReturnFact:
    """A ``return`` (or a lambda's body) and the value it returns."""

    func: FunctionInfo
    node: cst.CSTNode  # the Return statement, or the lambda
    expr: Optional[cst.BaseExpression]  # the returned expression (lambda body)
    value: Optional[Value]


@record(eq=False)
class RefUse:
    """A Ref used as an Array: ``kind`` in 'binop', 'unary', 'compare', 'call_arg', 'attr',
    'builtin', 'augassign'."""

    kind: str
    expr: cst.BaseExpression  # the ref expression
    ref: RefVal
    context: cst.CSTNode  # the enclosing operation
    detail: str  # operator, function or attribute name
    func: FunctionInfo


@record(eq=False)
class RefAccess:
    """A read or write of a ref: ``kind`` in 'read', 'setitem', 'augitem', 'set', 'swap',
    'addupdate', 'get'."""

    kind: str
    node: cst.CSTNode  # the statement or call
    ref_expr: cst.BaseExpression
    ref: RefVal
    value_expr: Optional[cst.BaseExpression]
    func: FunctionInfo

    @property
    def is_write(self) -> bool:
        return self.kind not in ("read", "get")


@record(eq=False)
class VjpCall:
    """``jax.vjp(f, *primals)``: the primal values, and the calls of the VJP function it
    returns (``applications``)."""

    node: cst.Call
    func: "FunctionInfo"
    target: "FunctionInfo"
    primals: list  # (Value, expr) per primal argument


@record(eq=False)
class VjpApplication:
    """A call of a VJP function: directly (``with_refs`` None) or after
    ``vjp_fn.with_refs(...)`` (the with_refs call, and how many entries it was given, None if
    unknown)."""

    node: cst.Call
    vjp: VjpCall
    func: "FunctionInfo"
    with_refs: Optional[cst.Call] = None
    entries: Optional[int] = None


@record(eq=False)
class WithRefs:
    """``vjp_fn.with_refs(*entries)``: the entries as (cst.Arg, Value), None when some are
    starred or given by keyword."""

    node: cst.Call
    vjp: VjpCall
    func: "FunctionInfo"
    entries: Optional[list]


@record(eq=False)
class Creation:
    """A ref created by a call (``jax.new_ref(x)``, ``jax.empty_ref(...)`` ...)."""

    node: cst.Call
    func: FunctionInfo
    ref: RefVal
    init_expr: Optional[cst.BaseExpression]
    init_value: Optional[Value]
    api_name: str


@record(eq=False)
class Freeze:
    """A ``jax.freeze(ref)`` call."""

    node: cst.Call
    func: FunctionInfo
    ref_expr: cst.BaseExpression
    ref: RefVal


@record(eq=False)
class UseAfterFreeze:
    """A use of a ref after it was frozen (``kind``: what the use does)."""

    node: cst.CSTNode  # the use
    kind: str  # 'read', 'write', 'freeze', 'pass'
    ref: RefVal
    freeze_node: cst.Call
    func: FunctionInfo


@record(eq=False)
class Binding:
    """What one argument of a call binds: the parameter it reaches and its value."""

    param: Optional[str]  # None when the argument reaches no known parameter (e.g. *args)
    value: Optional[Value]
    expr: Optional[cst.BaseExpression]
    partial: bool = False  # bound by functools.partial, not passed at this call


@record(eq=False)
class TracedCall:
    """A call that traces ``target`` (or several targets, e.g. cond branches).

    ``kind`` is the outermost transform's or the control-flow API's canonical name;
    ``bindings`` the argument values that reach the traced function's parameters;
    ``operands`` every traced-operand value in the call (for aliasing checks).
    """

    kind: str
    node: cst.Call
    func: FunctionInfo  # the caller
    targets: list  # FunctionInfo
    transforms: tuple
    operands: list  # (Value, expr)
    bindings: dict  # id(target info) -> {param: Binding}


@record(eq=False)
class ItemWrite:
    """``base[...] = value`` (or ``base[...] += value``) on something that is not a Ref."""

    stmt: cst.CSTNode  # the assignment statement
    base: Optional[Value]  # the value of ``target.value``
    value_expr: Optional[cst.BaseExpression]
    func: "FunctionInfo"
    target: cst.Subscript


@record(eq=False)
class AttributeWrite:
    """``base.attr = value`` (``value`` None for ``+=`` and the like)."""

    stmt: cst.CSTNode
    base: Optional[Value]
    attr: str
    value: Optional[Value]
    func: "FunctionInfo"


@record(eq=False)
class MutatingCall:
    """``receiver.append(...)`` and the other in-place methods of Python containers."""

    call: cst.Call
    receiver: Optional[Value]
    method: str
    func: "FunctionInfo"


@record(eq=False)
class AotCall:
    """``wrapped.lower(...)``, ``.trace(...)``, ``.eval_shape(...)`` (api.AOT_METHODS): a
    transformed function traced ahead of time; ``receiver`` is the expression before the
    method (``jax.jit(f)``)."""

    call: cst.Call
    receiver: cst.CSTNode


@record(eq=False)
class KernelEntry:
    """A local function given to a Pallas entry point as its kernel / body (``callee`` is the
    registry's description of how the API calls it)."""

    func: FunctionInfo
    api_name: str
    callee: "api.Callee"
    node: cst.CSTNode  # the decorator, call or partial applying the API


@record(eq=False)
class TracedConstructor:
    """A ref constructor itself given to a transform and called: ``jax.jit(jax.new_ref)(x)``
    traces a function whose output is the new ref."""

    node: cst.Call  # the call of the transformed constructor
    func: FunctionInfo  # where the call is
    transform: str  # the transform's API name (its role says whether outputs may be refs)
    constructor: str  # the constructor's API name
    transform_node: cst.CSTNode  # the transform call (`jax.jit(jax.new_ref)`)


@record(eq=False)
class KernelLaunch:
    """A kernel launcher called with its operands: ``pallas_call(kernel, ...)(x, y)``."""

    targets: list  # FunctionInfo of the kernel (several for ``kernel = a if c else b``)
    api_name: str
    node: cst.Call  # the call with the operands
    operands: Optional[int]  # how many positional operands (None: a starred argument)
    kwargs: dict  # the API's keyword arguments (name -> expression)
    scope: Optional[FunctionInfo] = None  # the function (or module) calling the launcher


@record(eq=False)
class PlainCall:
    """A direct call of a function of the module (not through a transform)."""

    node: cst.Call
    caller: FunctionInfo
    callee: FunctionInfo
    bindings: dict


@record(eq=False)
class DependentWrite:
    """A write of a value that depends on differentiated inputs into a non-differentiated ref
    (REF008): JAX rejects it when tracing."""

    access: object  # RefAccess
    root: object  # FunctionInfo of the differentiated function
    transform: str  # canonical transform name (api.GRAD, ...)
    transform_node: cst.CSTNode
    inputs: frozenset  # names of the differentiated parameters the value depends on
    ref_kind: str  # 'closed-over' or 'argument'


# --------------------------------------------------------------------------------------------
# The fact sink
# --------------------------------------------------------------------------------------------


class Facts:
    """The fact sink: every fact the evaluation records goes through :meth:`add`, into the list
    of its kind; rules read the lists (``analysis.accesses`` is ``analysis.facts.accesses``).

    To record a new kind of fact: a dataclass above, an entry in ``KINDS`` (its list's name),
    ``self._sink.add(TheFact(...))`` where the evaluator sees it, and a query or the list for
    the rules."""

    KINDS = {
        ReturnFact: "returns",
        RefUse: "ref_uses",
        RefAccess: "accesses",
        Creation: "creations",
        Freeze: "freezes",
        VjpCall: "vjp_calls",
        VjpApplication: "vjp_applications",
        WithRefs: "with_refs_calls",
        UseAfterFreeze: "after_freeze",
        TracedCall: "traced_calls",
        PlainCall: "plain_calls",
        AttributeWrite: "attribute_writes",
        ItemWrite: "item_writes",
        MutatingCall: "mutating_calls",
        AotCall: "aot_calls",
        KernelEntry: "kernel_entries",
        KernelLaunch: "kernel_launches",
        TracedConstructor: "traced_constructors",
    }
    __slots__ = tuple(KINDS.values())

    def __init__(self):
        for name in self.KINDS.values():
            setattr(self, name, [])

    def add(self, fact) -> None:
        getattr(self, self.KINDS[type(fact)]).append(fact)


class DiscardFacts(Facts):
    """A sink that keeps nothing: the dependence evaluation (REF008) runs the evaluator again,
    and what it sees again is not a new fact."""

    __slots__ = ()

    def add(self, fact) -> None:
        pass
