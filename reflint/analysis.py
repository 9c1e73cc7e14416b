"""The shared analysis of one module: computed once, queried by every rule.

It answers, for a libcst module and without importing anything:

1. which JAX API an expression names (imports and aliases resolved to qualified names,
   see :mod:`reflint.api`);
2. which expressions are Refs (abstract values flow through assignments, unpacking, containers,
   attributes of ``self``, parameters bound at call sites, return values of local functions);
3. which functions are traced, and by what (decorators, call forms, ``functools.partial``,
   the function arguments of ``lax.scan``/``cond``/``switch``/``while_loop``/``fori_loop``/``map``,
   ``custom_vjp`` rules, Pallas kernels), directly or through helpers they call;
4. call-site bindings (argument -> parameter, through pytrees) and closures (refs a function
   reads from enclosing scopes, module globals included);
5. which values depend on the inputs of a differentiated function, and which of them are
   written into refs JAX does not differentiate (``dependence``: the same evaluation, run again
   for each differentiated function with a ``deps`` component in its state, per call context).

The evaluation is an abstract interpretation over the statements of each function in program
order (branches merged), repeated until parameter and return summaries reach a fixpoint.
Anything it cannot resolve is ``None`` (unknown), and rules stay silent on unknowns.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import libcst as cst

from . import api
from .values import (
    QN, ArrayVal, Choice, ClassVal, DictVal, FuncPoolVal, FuncVal, InstanceVal, NamespaceVal,
    NnxVal, OneOf, RefPoolVal,
    RefSeqVal, RefVal,
    SeqVal, as_view, SpecialVal, Transform, TransformVal, Value, contains_ref, is_interesting, iter_refs,
    join, signature, tree_attribute, MAX_ALTERNATIVES,
)

_BUILTIN_NAMES = frozenset(dir(builtins))
# Methods that mutate Python containers in place (recorded in ``mutating_calls``).
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "update", "add", "setdefault", "appendleft", "extendleft",
    "pop", "popitem", "remove", "discard", "clear",
})
MAX_ROUNDS = 4
# How deep the dependence on differentiated inputs follows calls of local functions.
MAX_DEPENDENCE_DEPTH = 8
# How often a loop body runs while the dependence around it grows.
DEPENDENCE_LOOP_RUNS = 3
EMPTY: frozenset = frozenset()
# Python builtins and array attributes whose result carries no derivative (REF008).
_NO_TANGENT_BUILTINS = frozenset({
    "len", "isinstance", "type", "hasattr", "id", "callable", "range", "print", "repr", "str",
    "bool", "issubclass", "enumerate_len",
})
_METADATA_ATTRIBUTES = frozenset({
    "shape", "ndim", "size", "dtype", "sharding", "aval", "weak_type", "itemsize", "nbytes",
})
_CONTAINER_CONSTRUCTORS = api.CONTAINER_CONSTRUCTORS


# --------------------------------------------------------------------------------------------
# Facts recorded by the evaluation
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Param:
    name: str
    node: cst.Param
    kind: str  # 'pos' (positional or keyword), 'posonly', 'kwonly', 'vararg', 'kwarg'
    annotation_qn: Optional[str] = None


@dataclass(eq=False)
class Role:
    """One way a function is traced: ``kind`` is a transform or a control-flow role."""

    kind: api.Role  # how it is traced (the registry's roles: api.ROLES)
    node: cst.CSTNode  # decorator, transform call or control-flow call
    transform: Optional[Transform] = None


@dataclass(eq=False)
class FunctionInfo:
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


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    attrs: dict = field(default_factory=dict)  # self.<attr> -> joined Value
    methods: dict = field(default_factory=dict)  # name -> FuncVal
    # A Flax NNX class (a base is one, api.Result.NNX_OBJECT): "variable" (a Variable
    # subclass) or "module" (Module, Pytree); "" for any other class.
    nnx: str = ""
    bases: list = field(default_factory=list)  # ClassInfo of the bases defined in the module

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


@dataclass(eq=False)
class ReturnFact:
    func: FunctionInfo
    node: cst.CSTNode  # the Return statement, or the lambda
    expr: Optional[cst.BaseExpression]  # the returned expression (lambda body)
    value: Optional[Value]


@dataclass(eq=False)
class RefUse:
    """A Ref used as an Array: ``kind`` in 'binop', 'unary', 'compare', 'call_arg', 'attr',
    'builtin', 'augassign'."""

    kind: str
    expr: cst.BaseExpression  # the ref expression
    ref: RefVal
    context: cst.CSTNode  # the enclosing operation
    detail: str  # operator, function or attribute name
    func: FunctionInfo


@dataclass(eq=False)
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


@dataclass(eq=False)
class VjpCall:
    """``jax.vjp(f, *primals)``: the primal values, and the calls of the VJP function it
    returns (``applications``)."""

    node: cst.Call
    func: "FunctionInfo"
    target: "FunctionInfo"
    primals: list  # (Value, expr) per primal argument


@dataclass(eq=False)
class VjpApplication:
    """A call of a VJP function: directly (``with_refs`` None) or after
    ``vjp_fn.with_refs(...)`` (the with_refs call, and how many entries it was given, None if
    unknown)."""

    node: cst.Call
    vjp: VjpCall
    func: "FunctionInfo"
    with_refs: Optional[cst.Call] = None
    entries: Optional[int] = None


@dataclass(eq=False)
class WithRefs:
    """``vjp_fn.with_refs(*entries)``: the entries as (cst.Arg, Value), None when some are
    starred or given by keyword."""

    node: cst.Call
    vjp: VjpCall
    func: "FunctionInfo"
    entries: Optional[list]


@dataclass(eq=False)
class Creation:
    node: cst.Call
    func: FunctionInfo
    ref: RefVal
    init_expr: Optional[cst.BaseExpression]
    init_value: Optional[Value]
    api_name: str


@dataclass(eq=False)
class Freeze:
    node: cst.Call
    func: FunctionInfo
    ref_expr: cst.BaseExpression
    ref: RefVal


@dataclass(eq=False)
class UseAfterFreeze:
    node: cst.CSTNode  # the use
    kind: str  # 'read', 'write', 'freeze', 'pass'
    ref: RefVal
    freeze_node: cst.Call
    func: FunctionInfo


@dataclass(eq=False)
class Binding:
    param: Optional[str]  # None when the argument reaches no known parameter (e.g. *args)
    value: Optional[Value]
    expr: Optional[cst.BaseExpression]
    partial: bool = False  # bound by functools.partial, not passed at this call


@dataclass(eq=False)
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


@dataclass(eq=False)
class ItemWrite:
    """``base[...] = value`` (or ``base[...] += value``) on something that is not a Ref."""

    stmt: cst.CSTNode  # the assignment statement
    base: Optional[Value]  # the value of ``target.value``
    value_expr: Optional[cst.BaseExpression]
    func: "FunctionInfo"
    target: cst.Subscript


@dataclass(eq=False)
class AttributeWrite:
    """``base.attr = value`` (``value`` None for ``+=`` and the like)."""

    stmt: cst.CSTNode
    base: Optional[Value]
    attr: str
    value: Optional[Value]
    func: "FunctionInfo"


@dataclass(eq=False)
class MutatingCall:
    """``receiver.append(...)`` and the other in-place methods of Python containers."""

    call: cst.Call
    receiver: Optional[Value]
    method: str
    func: "FunctionInfo"


@dataclass(eq=False)
class KernelEntry:
    """A local function given to a Pallas entry point as its kernel / body (``callee`` is the
    registry's description of how the API calls it)."""

    func: FunctionInfo
    api_name: str
    callee: "api.Callee"
    node: cst.CSTNode  # the decorator, call or partial applying the API


@dataclass(eq=False)
class TracedConstructor:
    """A ref constructor itself given to a transform and called: ``jax.jit(jax.new_ref)(x)``
    traces a function whose output is the new ref."""

    node: cst.Call  # the call of the transformed constructor
    func: FunctionInfo  # where the call is
    transform: str  # the transform's API name (its role says whether outputs may be refs)
    constructor: str  # the constructor's API name
    transform_node: cst.CSTNode  # the transform call (`jax.jit(jax.new_ref)`)


@dataclass(eq=False)
class KernelLaunch:
    """A kernel launcher called with its operands: ``pallas_call(kernel, ...)(x, y)``."""

    targets: list  # FunctionInfo of the kernel (several for ``kernel = a if c else b``)
    api_name: str
    node: cst.Call  # the call with the operands
    operands: Optional[int]  # how many positional operands (None: a starred argument)
    kwargs: dict  # the API's keyword arguments (name -> expression)


@dataclass(eq=False)
class PlainCall:
    node: cst.Call
    caller: FunctionInfo
    callee: FunctionInfo
    bindings: dict


# --------------------------------------------------------------------------------------------
# Flow state
# --------------------------------------------------------------------------------------------


class _State:
    __slots__ = ("env", "frozen", "dead", "deps")

    def __init__(self, env=None, frozen=None, deps=None):
        self.env: dict = env if env is not None else {}
        self.frozen: dict = frozen if frozen is not None else {}  # ref key -> freeze call
        self.dead = False  # after return/raise/continue/break
        # name -> the differentiated inputs its value depends on (non-empty sets only), while
        # the dependence on differentiated inputs is evaluated (ModuleAnalysis.dependence);
        # None otherwise: the module's own evaluation does not track it.
        self.deps: Optional[dict] = deps

    def copy(self) -> "_State":
        s = _State(dict(self.env), dict(self.frozen),
                   dict(self.deps) if self.deps is not None else None)
        s.dead = self.dead
        return s

    def take(self, other: "_State") -> None:
        """Become ``other`` (the merge of this state's branches)."""
        self.env, self.frozen, self.dead, self.deps = other.env, other.frozen, other.dead, \
            other.deps

    @staticmethod
    def merge(a: "_State", b: "_State") -> "_State":
        if a.dead:
            return b.copy() if not b.dead else b
        if b.dead:
            return a
        env = {}
        for k in a.env.keys() | b.env.keys():
            env[k] = join(a.env.get(k), b.env.get(k)) if (k in a.env and k in b.env) else None
        frozen = {k: v for k, v in a.frozen.items() if k in b.frozen}
        deps = None
        if a.deps is not None or b.deps is not None:
            deps = dict(a.deps or ())
            _join_deps(deps, b.deps or {})
        return _State(env, frozen, deps)


def _join_deps(into: dict, deps: dict) -> None:
    """Add ``deps`` (name -> inputs) to ``into``."""
    for k, v in deps.items():
        into[k] = into[k] | v if k in into else v


@dataclass(eq=False)
class DependentWrite:
    """A write of a value that depends on differentiated inputs into a non-differentiated ref
    (REF008): JAX rejects it when tracing."""

    access: object  # RefAccess
    root: object  # FunctionInfo of the differentiated function
    transform: str  # canonical transform name (api.GRAD, ...)
    transform_node: cst.CSTNode
    inputs: frozenset  # names of the differentiated parameters the value depends on
    ref_kind: str  # 'closed-over' or 'argument'


class _DepFrame:
    """A function being evaluated for the dependence: how its parameters' refs relate to
    the differentiated function, and the dependence of what it returns."""

    __slots__ = ("info", "param_refs", "returns")

    def __init__(self, info, param_refs: dict):
        self.info = info
        self.param_refs = param_refs  # param name -> (status, base key): see _Dependence.status
        self.returns = EMPTY


class _Dependence:
    """What the evaluator keeps while it evaluates the dependence on differentiated inputs
    (ModuleAnalysis.dependence): the module's facts it reads (accesses, calls, creations), per
    root the functions entered and their contexts, and the refs' relation to the root."""

    def __init__(self, analysis: "ModuleAnalysis", roots: dict):
        self.a = analysis
        self.roots = roots
        self.writes_by_node: dict = {}
        for acc in analysis.accesses:
            self.writes_by_node.setdefault(id(acc.node), []).append(acc)
        self.calls: dict = {}  # id(call node) -> [(target info, bindings)]
        for c in analysis.plain_calls:
            self.calls.setdefault(id(c.node), []).append((c.callee, c.bindings))
        self.traced: dict = {}
        for c in analysis.traced_calls:
            for t in c.targets:
                self.traced.setdefault(id(c.node), []).append((t, c.bindings.get(id(t), {}), c))
        self.creation_scope = {id(c.node): c.func for c in analysis.creations}
        self.functions = dict(analysis.functions)
        self.writes: list = []  # DependentWrite
        self.reported: set = set()
        self.last: dict = {}  # id(expr) -> its dependence at its latest evaluation
        self.quiet = False
        # Per loop being evaluated: (is a break, dependence) at each `continue` / `break`.
        self.jumps: list = []

    def start(self, root, kind, node) -> None:
        self.root = root
        self.kind, self.node = kind, node
        self.scopes: set = set()  # ids of functions entered under this root
        self.ever: dict = {}  # id(info) -> {name: inputs} ever bound in that function
        self.tainted_refs: dict = {}  # base key -> inputs
        self.memo: dict = {}
        self.stack: list = []  # _DepFrame
        self.hit_limit = False
        self.names_used = None

    @property
    def frame(self) -> _DepFrame:
        return self.stack[-1]

    # -- refs: 'internal' (created while the root runs), 'external' (closed over from outside,
    # or a non-differentiated argument), 'diff' (a differentiated argument) --------------------

    def status(self, ref: RefVal):
        """('internal' | 'external' | 'diff' | None, base key) of a ref seen in this root."""
        return self._status_key(ref.key, ref.scope)

    def _status_key(self, key, scope):
        if not isinstance(key, tuple) or not key:
            return None, None
        if key[0] == "new":
            scope = self.creation_scope.get(key[1], scope)
            if scope is None:
                return None, None
            if id(scope) in self.scopes or self.root.encloses(scope):
                return "internal", key
            if scope.encloses(self.root) or scope.is_module:
                return "external", key
            if not self.hit_limit and scope.name not in self._names_used():
                # Created by a function the differentiated code never calls nor mentions
                # (e.g. an __init__ run before): the ref comes from outside.
                return "external", key
            return None, None
        if key[0] == "param" and len(key) >= 3:
            info = self.functions.get(key[1])
            if info is None:
                return None, None
            for frame in reversed(self.stack):
                if frame.info is info:
                    status, base = frame.param_refs.get(key[2], (None, None))
                    if status in ("external", "diff"):
                        return status, base or key
                    if status == "internal" and base is not None:
                        return "internal", base
                    return None, None
            if info.encloses(self.root) and info is not self.root:
                return "external", key
            return None, None
        if key[0] == "slice" and len(key) == 2:
            return self._status_key(key[1], scope)
        if key[0] == "merged" and len(key) == 3:
            s1, _ = self._status_key(key[1], scope)
            s2, _ = self._status_key(key[2], scope)
            if s1 == s2 and s1 == "external":
                return "external", key
            return None, None
        return None, None

    def _names_used(self) -> set:
        """Every identifier spelled in the root and the functions entered under it."""
        if self.names_used is None or self.names_used[0] != len(self.scopes):
            names: set = set()
            for info in self.functions.values():
                if id(info) not in self.scopes and not self.root.encloses(info):
                    continue
                for node in walk_nodes([info.node]):
                    if isinstance(node, cst.Name):
                        names.add(node.value)
                    elif isinstance(node, cst.Attribute):
                        names.add(node.attr.value)
            self.names_used = (len(self.scopes), names)
        return self.names_used[1]

    def read(self, ref) -> frozenset:
        if not isinstance(ref, RefVal):
            return EMPTY
        status, base = self.status(ref)
        if status == "internal":
            return self.tainted_refs.get(base, EMPTY)
        if status == "diff":
            return frozenset({ref.name or "ref"})
        return EMPTY

    def write(self, acc, deps: frozenset) -> None:
        if not deps:
            return
        status, base = self.status(acc.ref)
        if status == "internal":
            self.tainted_refs[base] = self.tainted_refs.get(base, EMPTY) | deps
            return
        if status != "external" or self.quiet:
            return
        if acc.value_expr is None or id(acc.node) in self.reported:
            return
        self.reported.add(id(acc.node))
        kind = "argument" if isinstance(base, tuple) and base[0] == "rootarg" else "closed-over"
        self.writes.append(DependentWrite(acc, self.root, self.kind, self.node, deps, kind))


class _Unbound:
    """Marker for a name deleted or not yet bound in a function."""


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


class ModuleAnalysis:
    """Analysis of one module. Build with ``ModuleAnalysis(module)``; rules read the facts."""

    def __init__(self, module: cst.Module, path: str = "<string>", settings=None,
                 source: Optional[str] = None, gate_verdict=None):
        self.module = module
        self.path = path
        if settings is None:
            from .settings import Settings

            settings = Settings()
        self.settings = settings  # what the rules are run with (target JAX version ...)
        self.source = source if source is not None else module.code
        self.gate_verdict = gate_verdict  # the pre-filter gate's answers, when it ran
        self._cache: dict = {}
        self.module_info = FunctionInfo(node=module, name="<module>", parent=None)
        self.functions: dict[int, FunctionInfo] = {}  # id(node) -> FunctionInfo
        self.classes: dict[int, ClassInfo] = {}
        self.has_star_import = False
        self._pallas_kernels: dict[int, set] = {}  # id(kernel info) -> non-ref param names
        self._run()

    def release(self) -> None:
        """Drop every fact, so the syntax tree is freed as soon as its last user lets go.

        The facts form cycles (a function's callers and scope summaries point back at it), and
        they hold the tree's nodes: left alone, the whole tree would wait for the cyclic garbage
        collector, whose pass over it costs about a fifth of the parse. The analysis is not
        usable afterwards."""
        for info in [self.module_info, *self.functions.values(), *self.classes.values()]:
            info.__dict__.clear()
        self.__dict__.clear()

    # -- public queries ------------------------------------------------------------------

    def cached(self, key, fn):
        """``fn()``, computed once per analysis under ``key`` (for rule helpers: a rule keeps
        its derived facts here rather than in attributes of its own on the analysis)."""
        cache = self._cache
        if key not in cache:
            cache[key] = fn()
        return cache[key]

    def function_of(self, node: cst.CSTNode) -> Optional[FunctionInfo]:
        return self.functions.get(id(node))

    def all_functions(self) -> list[FunctionInfo]:
        return list(self.functions.values())

    def traced_functions(self) -> list[FunctionInfo]:
        return [f for f in self.functions.values() if f.roles]

    def value_of(self, node: cst.CSTNode) -> Optional[Value]:
        return self._values.get(id(node))

    def static_value(self, expr, info: Optional[FunctionInfo] = None) -> Optional[Value]:
        """The value of a name or dotted name read where the analysis does not evaluate it (an
        annotation), from the bindings of ``info``'s scopes (default: the module's)."""
        return self._lookup_static(expr, info or self.module_info)

    def ref_of(self, node: cst.CSTNode) -> Optional[RefVal]:
        v = self._values.get(id(node))
        return v if isinstance(v, RefVal) else None

    def is_traced(self, info: Optional[FunctionInfo]) -> bool:
        """True if ``info`` runs under a trace: it has a role, is called from (or nested in
        and called by) a traced function."""
        return info is not None and id(info) in self._traced

    def trace_kinds(self, info: FunctionInfo) -> set:
        """Every role kind under which ``info`` runs, its own and its traced callers'."""
        return self._traced.get(id(info), set())

    def unchecked_trace(self, info: FunctionInfo) -> bool:
        """``info`` runs inside a trace that JAX makes with mutable-array checks off (a Pallas
        kernel: api.RoleInfo.unchecked)."""
        return any(api.role_info(k).unchecked for k in self.trace_kinds(info))

    # -- Pallas kernels ----------------------------------------------------------------------

    def kernel_outputs(self, info: FunctionInfo) -> Optional[tuple]:
        """The parameters of a Pallas kernel that receive its output refs, when every launch
        of it says the same: the refs come in the order operands, outputs, scratch buffers
        (api.Callee.outputs_after_operands), so they are those after the launch's operands and
        before the scratch buffers its keywords list. None when unknown."""
        return self.cached(("kernel outputs", id(info)), lambda: self._kernel_outputs(info))

    def _kernel_outputs(self, info: FunctionInfo) -> Optional[tuple]:
        entries = [e for e in self.kernel_entries if e.func is info]
        if not entries or not all(e.callee.outputs_after_operands for e in entries):
            return None
        bound = self._pallas_kernels.get(id(info), set())
        if any(p.kind == "vararg" for p in info.params):
            return None
        params = [p.name for p in info.params
                  if p.kind in ("pos", "posonly") and p.name not in bound]
        found = None
        for launch in self.kernel_launches:
            if info not in launch.targets:
                continue
            if launch.operands is None:
                return None
            callee = next(e.callee for e in entries)
            scratch = 0
            for kw in callee.scratch:
                n = _count_scratch(launch.kwargs.get(kw), kw)
                if n is None:
                    return None
                scratch += n
            outs = tuple(params[launch.operands:len(params) - scratch])
            if found is not None and outs != found:
                return None
            found = outs
        return found or None

    # -- trace scopes and ref origins (REF004, REF005, REF006) ---------------------------------

    def trace_scopes(self, info: FunctionInfo) -> tuple:
        """The traces ``info`` runs in: functions with roles (itself, if it has one) and the
        module (eager code), reached through plain calls. Empty when no caller is known."""
        if self._scopes is None:
            scopes: dict[int, set] = {id(self.module_info): {id(self.module_info)}}
            for f in self.functions.values():
                scopes[id(f)] = {id(f)} if f.roles else set()
            changed = True
            while changed:
                changed = False
                for pc in self.plain_calls:
                    src = scopes.get(id(pc.caller), set())
                    dst = scopes.setdefault(id(pc.callee), set())
                    if not src <= dst:
                        dst |= src
                        changed = True
            self._scopes = scopes
        by_id = {id(self.module_info): self.module_info}
        by_id.update((id(f), f) for f in self.functions.values())
        # In the order the functions were found (ids are addresses: sorting by them made the
        # reported scope vary from run to run; found by the fuzz campaign).
        order = {i: k for k, i in enumerate(by_id)}
        return tuple(by_id[i] for i in sorted(self._scopes.get(id(info), ()),
                                              key=lambda i: order.get(i, -1)) if i in by_id)

    def trace_extent(self, info: FunctionInfo) -> frozenset:
        """ids of the functions that run inside ``info``'s trace: ``info`` and every local
        function it calls, plainly or through a transform / control flow, transitively."""
        cache = self._extents
        if id(info) in cache:
            return cache[id(info)]
        callees: dict[int, list] = self._callees
        if not callees:
            for pc in self.plain_calls:
                callees.setdefault(id(pc.caller), []).append(pc.callee)
            for tc in self.traced_calls:
                callees.setdefault(id(tc.func), []).extend(tc.targets)
            callees.setdefault(None, [])
        seen = {id(info)}
        work = [info]
        while work:
            f = work.pop()
            for c in callees.get(id(f), ()):
                if id(c) not in seen:
                    seen.add(id(c))
                    work.append(c)
        cache[id(info)] = frozenset(seen)
        return cache[id(info)]

    def ref_origins(self, ref: RefVal, scope: FunctionInfo, _depth: int = 0) -> list:
        """Where a ref used inside ``scope``'s trace comes from, relative to that trace.

        A list of ``(status, root)`` pairs, one per source found through call sites:
        'inside' (created by code running in the trace), 'argument' (a parameter of ``scope``
        itself), 'outside' (created outside the trace, or a parameter of an enclosing function:
        closed over) or 'unknown'. ``root`` is the creation RefVal or the parameter RefVal."""
        if _depth > 8:
            return [("unknown", ref)]
        if ref.root is not None:  # `model.bias`: where the NNX module comes from
            return self.ref_origins(ref.root, scope, _depth + 1)
        extent = self.trace_extent(scope)
        if ref.origin == "created":
            if ref.scope is None:
                return [("unknown", ref)]
            return [("inside" if id(ref.scope) in extent else "outside", ref)]
        if ref.origin != "param" or ref.scope is None:
            return [("unknown", ref)]
        owner = ref.scope
        if owner is scope:
            return [("argument", ref)]
        if id(owner) not in extent:
            return [("outside", ref)] if owner.encloses(scope) else [("unknown", ref)]
        name = ref.key[2] if len(ref.key) > 2 else ref.name
        path = ref.key[3] if len(ref.key) > 3 else ""
        out: list = []
        for caller, bindings in self._call_sites(owner):
            if id(caller) not in extent:
                continue
            b = bindings.get(name)
            arg = None
            if b is not None:
                arg = next((r for r, p in iter_refs(b.value) if p == path), None)
            if arg is None:
                out.append(("unknown", ref))
            else:
                out.extend(self.ref_origins(arg, scope, _depth + 1))
        return out or [("unknown", ref)]

    def _call_sites(self, info: FunctionInfo) -> list:
        """(caller, {param: Binding}) for every known call of ``info`` (plain or traced)."""
        if self._sites is None:
            sites: dict[int, list] = {}
            for pc in self.plain_calls:
                sites.setdefault(id(pc.callee), []).append((pc.caller, pc.bindings))
            for tc in self.traced_calls:
                for t in tc.targets:
                    sites.setdefault(id(t), []).append((tc.func, tc.bindings.get(id(t), {})))
            self._sites = sites
        return self._sites.get(id(info), [])

    def creations_of(self, ref: RefVal, _depth: int = 0) -> Optional[list]:
        """The constructor RefVals a ref can come from, following parameters back through every
        call site; None when some source is unknown."""
        if ref.root is not None and _depth <= 8:
            return self.creations_of(ref.root, _depth + 1)
        if ref.origin == "created":
            return [ref]
        if ref.origin != "param" or ref.scope is None or _depth > 8:
            return None
        owner = ref.scope
        name = ref.key[2] if len(ref.key) > 2 else ref.name
        path = ref.key[3] if len(ref.key) > 3 else ""
        out: list = []
        for _caller, bindings in self._call_sites(owner):
            b = bindings.get(name)
            arg = next((r for r, p in iter_refs(b.value) if p == path), None) if b else None
            found = self.creations_of(arg, _depth + 1) if arg is not None else None
            if found is None:
                return None
            out.extend(found)
        return out or None

    def free_name_scope(self, name: str, info: FunctionInfo) -> Optional[FunctionInfo]:
        """The scope (module or enclosing function) that a name used in ``info`` resolves to
        when it is not local to ``info``: None when it is local (a parameter or bound in
        ``info`` without ``global``/``nonlocal``) or unresolved (a builtin, a star import)."""
        if info.is_module:
            return None
        decl = self._declarations(info)
        if name in decl:
            if decl[name] == "global":
                return self.module_info
            scope = info.parent
        else:
            if name in info.summary or info.param(name) is not None:
                return None
            scope = info.parent
        while scope is not None:
            if scope.is_module:
                return scope if name in scope.summary else None
            if name in scope.summary and self._declarations(scope).get(name) is None:
                return scope
            scope = scope.parent
        return None

    def is_python_container(self, name: str, scope: FunctionInfo) -> bool:
        """True if every binding of ``name`` directly in ``scope`` binds a new Python list,
        dict or set (a display, a comprehension, ``list()``/``dict()``/``set()`` or a
        ``collections`` constructor), and there is at least one."""
        key = (id(scope), name)
        cache = self.cached("containers", dict)
        if key not in cache:
            cache[key] = self._container_check(name, scope)
        return cache[key]

    def _container_check(self, name: str, scope: FunctionInfo) -> bool:
        if scope.param(name) is not None:
            return False
        values = self._scope_bindings(scope).get(name)
        return bool(values) and all(self._is_container_expr(v) for v in values)

    def _scope_bindings(self, scope: FunctionInfo) -> dict:
        """name -> the values bound to it by plain assignments directly in ``scope`` (not in
        nested functions, classes or lambdas), or None if it is also bound another way (a
        def, an unpacking, ``+=``, a loop or ``with`` target, an import, ``global``). One walk
        per scope, cached."""
        cache = self.cached("scope bindings", dict)
        out = cache.get(id(scope))
        if out is not None:
            return out
        out = cache[id(scope)] = {}
        body = scope.node.body if scope.is_module else getattr(scope.node.body, "body", None)
        if not isinstance(body, (list, tuple)):
            return out

        def bind(name, value) -> None:  # value None: bound other than by a plain assignment
            if value is None:
                out[name] = None
            elif name not in out:
                out[name] = [value]
            elif out[name] is not None:
                out[name].append(value)

        for node in walk_nodes(body, into=_in_own_scope):
            t = type(node)
            if t is cst.FunctionDef or t is cst.ClassDef:
                bind(node.name.value, None)
            elif t is cst.Assign:
                for tg in node.targets:
                    if type(tg.target) is cst.Name:
                        bind(tg.target.value, node.value)
                    else:
                        for n in _target_names(tg.target):
                            bind(n, None)
            elif t is cst.AnnAssign:
                if type(node.target) is cst.Name and node.value is not None:
                    bind(node.target.value, node.value)
            elif t is cst.AugAssign:
                if type(node.target) is cst.Name:
                    bind(node.target.value, None)
            elif t is cst.For:
                for n in _target_names(node.target):
                    bind(n, None)
            elif t is cst.WithItem:
                if node.asname is not None:
                    for n in _target_names(node.asname.name):
                        bind(n, None)
            elif t is cst.NamedExpr:
                for n in _target_names(node.target):
                    bind(n, None)
            elif t is cst.ImportAlias:
                bound = _as_name(node.asname) if node.asname else dotted_name(node.name)
                if bound:
                    bind(bound.split(".")[0], None)
            elif t is cst.Global or t is cst.Nonlocal:
                for n in node.names:
                    bind(n.name.value, None)
        return out

    def _is_container_expr(self, expr) -> bool:
        if isinstance(expr, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp,
                             cst.SetComp)):
            return True
        if isinstance(expr, cst.Call):
            fv = self._values.get(id(expr.func))
            if isinstance(fv, QN):
                return fv.qualname in _CONTAINER_CONSTRUCTORS
        return False

    def _declarations(self, info: FunctionInfo) -> dict:
        """Names declared ``global`` / ``nonlocal`` directly in a function (cached)."""
        cache = self.cached("declarations", dict)
        out = cache.get(id(info))
        if out is None:
            out = {}
            if isinstance(info.node, cst.FunctionDef):
                # The function's own statements, not nested functions, classes or lambdas.
                for node in walk_nodes(child_nodes(info.node), into=_in_own_scope):
                    t = type(node)
                    if t is cst.Global or t is cst.Nonlocal:
                        for n in node.names:
                            out[n.name.value] = "global" if t is cst.Global else "nonlocal"
            cache[id(info)] = out
        return out

    def description(self, ref: RefVal) -> str:
        """Where a ref comes from, for messages."""
        name = ref.name or "the ref"
        if ref.tree:
            base = ref
            while base.root is not None:
                base = base.root
            what = "a Variable" if ref.tree == "variable" else \
                "an NNX module" if ref.tree == "module" else "NNX state"
            if base.origin == "created" and base.node is not None:
                line = self.line_of(base.node)
                if line:
                    return f"{name} is {what} holding refs, created on line {line}"
            if base.origin == "param":
                owner = base.scope.name if base.scope else "the function"
                return f"{name} is {what} holding refs, passed to {owner}"
            return f"{name} is {what} holding refs"
        if ref.origin == "created" and ref.node is not None:
            line = self.line_of(ref.node)
            if line:
                return f"{name} was created on line {line}"
        if ref.origin in ("param", "pallas"):
            owner = ref.scope.name if ref.scope else "the function"
            return f"{name} is a ref parameter of {owner}"
        return ""

    def line_of(self, node: cst.CSTNode) -> Optional[int]:
        pos = self.position(node)
        return pos[0] if pos else None

    def position(self, node: cst.CSTNode):
        """(line, column, end_line, end_column), 1-based columns; computed lazily."""
        if self._positions is None:
            self._positions = _positions_of(self.module)
        rng = self._positions.get(node)
        if rng is None:
            return None
        return (rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)

    # -- driver ------------------------------------------------------------------------------

    def _run(self) -> None:
        self._positions = None
        prev_sig = None
        for _ in range(MAX_ROUNDS):
            self._reset_round()
            self._eval_function(self.module_info)
            while self._queue:
                info = self._queue.pop(0)
                self._eval_function(info)
            sig = self._round_signature()
            if sig == prev_sig or not self._interprocedural:
                break
            prev_sig = sig
            self._carry_over()
        for cls in self.classes.values():  # the last round's, for the rules (iter_refs)
            cls.attrs = self._new_attrs.get(id(cls), {})
        self._compute_traced()
        self._scopes = None  # trace_scopes, lazily
        self._extents: dict = {}  # trace_extent cache
        self._callees: dict = {}
        self._sites = None  # _call_sites index, lazily

    def _reset_round(self) -> None:
        self._values: dict[int, Value] = {}
        self._queue: list[FunctionInfo] = []
        self._queued: set = set()
        self._interprocedural = False
        self.returns: list[ReturnFact] = []
        self.ref_uses: list[RefUse] = []
        self.accesses: list[RefAccess] = []
        self.creations: list[Creation] = []
        self.freezes: list[Freeze] = []
        self.vjp_calls: list[VjpCall] = []
        self.vjp_applications: list[VjpApplication] = []
        self.with_refs_calls: list[WithRefs] = []
        self.after_freeze: list[UseAfterFreeze] = []
        self.traced_calls: list[TracedCall] = []
        self.plain_calls: list[PlainCall] = []
        self.attribute_writes: list[AttributeWrite] = []
        self.item_writes: list[ItemWrite] = []
        self.mutating_calls: list[MutatingCall] = []
        self.kernel_entries: list[KernelEntry] = []
        self.kernel_launches: list[KernelLaunch] = []
        self.traced_constructors: list[TracedConstructor] = []
        self._new_seeds: dict = {}  # id(info) -> {param: Value}
        self._new_returns: dict = {}  # id(info) -> Value
        self._new_attrs: dict = {}  # id(cls) -> {attr: Value}
        # id(info) -> whether every call of the function seen this round has NNX refs on
        # (True for `@nnx.var_defaults(ref=True)`).
        self._new_refs_mode: dict = {}
        self._forced_refs_mode: set = set()
        self._refs_mode = False  # NNX objects created now hold refs
        self._rebound: dict = {}  # id(scope) -> names the scope binds more than once
        self._cur_state: Optional[_State] = None  # the state of the statement being executed
        for info in self.functions.values():
            info.roles = {}
            info.returns = []
            info.closure_refs = {}
            info.summary = {}
            info.callers = []
            info.call_envs = []
        self.module_info.summary = {}
        self.module_info.roles = {}

    def _round_signature(self):
        seeds = tuple(sorted(
            (k, tuple(sorted((p, signature(v)) for p, v in d.items())))
            for k, d in self._new_seeds.items()))
        rets = tuple(sorted((k, signature(v)) for k, v in self._new_returns.items()))
        attrs = tuple(sorted(
            (k, tuple(sorted((a, signature(v)) for a, v in d.items())))
            for k, d in self._new_attrs.items()))
        modes = tuple(sorted(k for k, on in self._new_refs_mode.items() if on))
        return seeds, rets, attrs, modes

    def _carry_over(self) -> None:
        for info in self.functions.values():
            info.seeds = self._new_seeds.get(id(info), {})
            info.return_value = self._new_returns.get(id(info))
            info.refs_mode = self._new_refs_mode.get(id(info), False)
        for cls in self.classes.values():
            cls.attrs = self._new_attrs.get(id(cls), {})

    def _compute_traced(self) -> None:
        """Propagate tracing from traced functions to the local functions they call."""
        traced: dict[int, set] = {}
        work = []
        for info in self.functions.values():
            if info.roles:
                traced[id(info)] = set(info.role_kinds())
                work.append(info)
        callees: dict[int, list] = {}
        for call in self.plain_calls:
            callees.setdefault(id(call.caller), []).append(call.callee)
        for call in self.traced_calls:
            for t in call.targets:
                callees.setdefault(id(call.func), []).append(t)
        while work:
            info = work.pop()
            kinds = traced[id(info)]
            for callee in callees.get(id(info), ()):
                have = traced.setdefault(id(callee), set())
                if not kinds <= have:
                    have |= kinds
                    work.append(callee)
        self._traced = traced

    # -- functions ---------------------------------------------------------------------------

    def _get_function(self, node, parent: FunctionInfo, cls: Optional[ClassInfo]) -> FunctionInfo:
        info = self.functions.get(id(node))
        if info is None:
            if isinstance(node, cst.Lambda):
                name = "<lambda>"
            else:
                name = node.name.value
            info = FunctionInfo(node=node, name=name, parent=parent, cls=cls)
            info.params = _params_of(node.params)
            info.is_method = cls is not None
            self.functions[id(node)] = info
        return info

    def _enqueue(self, info: FunctionInfo) -> None:
        if id(info) not in self._queued:
            self._queued.add(id(info))
            self._queue.append(info)

    def _eval_function(self, info: FunctionInfo, deps: Optional[dict] = None) -> None:
        state = _State(deps=deps)
        self._func = info
        self._cur_state = state
        self._refs_mode = info.refs_mode  # the last round's: every call site seen
        if info.is_module:
            self._exec_block(info.node.body, state)
            self._record_summary(info, state)
            return
        for p in info.params:
            state.env[p.name] = self._param_value(info, p)
            info.summary[p.name] = state.env[p.name]
        if info.is_lambda:
            value = self._eval(info.node.body, state)
            fact = ReturnFact(info, info.node, info.node.body, value)
            info.returns.append(fact)
            self.returns.append(fact)
            self._note_return(info, value)
            if deps is not None:
                self._dep.frame.returns |= self._dep_of(info.node.body)
        else:
            self._exec_block(info.node.body.body if isinstance(info.node.body, cst.IndentedBlock)
                             else info.node.body.body, state)
        self._record_summary(info, state)

    def _record_summary(self, info: FunctionInfo, state: _State) -> None:
        for name, value in state.env.items():
            if name in info.summary:
                continue
            info.summary[name] = value

    def _param_value(self, info: FunctionInfo, p: Param) -> Optional[Value]:
        if p.annotation_qn is None and p.node.annotation is not None:
            p.annotation_qn = self._annotation_qn(p.node.annotation.annotation, info)
        if p.annotation_qn and api.canonical(p.annotation_qn) == api.REF_TYPE:
            return RefVal(key=("param", id(info.node), p.name), origin="param", node=p.node,
                          scope=info, name=p.name)
        if p.node.annotation is not None and isinstance(p.node.annotation.annotation, cst.Name):
            # `s: State` with State a class of this module: its instances' attributes.
            cls = self._lookup_static(p.node.annotation.annotation, info)
            if isinstance(cls, ClassVal):
                return InstanceVal(cls.cls)
        if info.is_method and p is info.params[0] and p.kind in ("pos", "posonly") and \
                "staticmethod" not in info.decorator_kinds:
            if "classmethod" in info.decorator_kinds:
                return ClassVal(info.cls)
            return InstanceVal(info.cls)
        if id(info) in self._pallas_kernels and p.kind in ("pos", "posonly") and \
                p.name not in self._pallas_kernels[id(info)]:
            return RefVal(key=("param", id(info.node), p.name), origin="pallas", node=p.node,
                          scope=info, name=p.name)
        if id(info) in self._pallas_kernels and p.kind == "vararg" and \
                p.name not in self._pallas_kernels[id(info)]:
            # `def kernel(*refs)`: a tuple of refs (unless partial binds more positional
            # arguments than the named parameters take: they come first in it).
            return RefSeqVal(RefVal(key=("param", id(info.node), p.name), origin="pallas",
                                        node=p.node, scope=info, name=p.name))
        seed = info.seeds.get(p.name)
        if seed is not None:
            return self._rebase(seed, info, p)
        if p.annotation_qn in api.ARRAY_TYPES and p.kind in ("pos", "posonly", "kwonly") \
                and "ref" not in p.name.lower():
            # `x: jax.Array` (no call passes it a ref): an Array; the parameter's node. JAX's
            # own code annotates refs `jax.Array` too (`o_ref: jax.Array` in a kernel helper):
            # a parameter named like a ref is left unknown.
            return ArrayVal(p.node)
        return None

    def _rebase(self, value: Optional[Value], info: FunctionInfo, p: Param, path: str = ""):
        """A call-site value seen from inside the callee: refs become the parameter's refs."""
        if isinstance(value, RefVal):
            return RefVal(key=("param", id(info.node), p.name, path), origin="param", node=p.node,
                          scope=info, name=p.name if not path else f"{p.name}{path}",
                          tree=value.tree, cls=value.cls)
        if isinstance(value, SeqVal):
            return SeqVal(tuple(self._rebase(v, info, p, f"{path}[{i}]")
                                for i, v in enumerate(value.items)), value.kind)
        if isinstance(value, DictVal):
            return DictVal({k: self._rebase(v, info, p, f"{path}[{k!r}]")
                            for k, v in value.items.items()})
        if isinstance(value, RefPoolVal):
            base = RefVal(key=("param", id(info.node), p.name, path), origin="param",
                          node=p.node, scope=info, name=p.name if not path else f"{p.name}{path}")
            return RefPoolVal(base, value.kind)
        if isinstance(value, RefSeqVal) and not path:
            base = RefVal(key=("param", id(info.node), p.name), origin=value.base.origin,
                          node=p.node, scope=info, name=p.name)
            return RefSeqVal(base, 0, True) if value.exact and not value.offset else \
                RefSeqVal(base, 0, False)
        return value

    def _annotation_qn(self, expr, info) -> Optional[str]:
        if isinstance(expr, cst.Subscript):  # Ref[...] / Optional[Ref]
            expr = expr.value
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            try:
                text = expr.evaluated_value  # type: ignore[union-attr]
                expr = cst.parse_expression(text)
            except Exception:
                return None
        v = self._lookup_static(expr, info)
        return v.qualname if isinstance(v, QN) else None

    def _lookup_static(self, expr, info) -> Optional[Value]:
        if isinstance(expr, cst.Name):
            return self._lookup_enclosing(expr.value, info, None)
        if isinstance(expr, cst.Attribute):
            base = self._lookup_static(expr.value, info)
            if isinstance(base, QN):
                return QN(f"{base.qualname}.{expr.attr.value}")
        return None

    # -- statements --------------------------------------------------------------------------

    def _exec_block(self, stmts: Iterable, state: _State) -> None:
        for stmt in stmts:
            if state.dead:
                return
            self._exec(stmt, state)

    def _exec(self, stmt, state: _State) -> None:
        self._cur_state = state
        t = type(stmt)
        if t is cst.SimpleStatementLine:
            for small in stmt.body:
                self._exec_small(small, state)
            return
        if t is cst.FunctionDef:
            self._exec_def(stmt, state)
        elif t is cst.ClassDef:
            self._exec_class(stmt, state)
        elif t is cst.If:
            self._exec_if(stmt, state)
        elif t is cst.For:
            it = self._eval(stmt.iter, state)
            entry = state.copy()
            self._bind_target(stmt.target, _element_of(it), state, stmt)
            if state.deps is not None:
                self._dep_bind(stmt.target, self._dep_of(stmt.iter), state, None)
            self._exec_loop_rest(stmt, entry, state)
        elif t is cst.While:
            self._eval(stmt.test, state)
            self._exec_loop_rest(stmt, state.copy(), state)
        elif t in (cst.With,):
            saved = self._refs_mode
            for item in stmt.items:
                v = self._eval(item.item, state)
                if isinstance(v, SpecialVal) and v.kind == "ref_switch":
                    self._refs_mode = bool(v.target)  # `with nnx.var_defaults(ref=True):`
                if item.asname is not None:
                    self._bind_target(item.asname.name, None if not isinstance(v, RefVal) else v,
                                      state, stmt)
                    if state.deps is not None:
                        self._dep_bind(item.asname.name, self._dep_of(item.item), state, None)
            self._exec_block(_body(stmt.body), state)
            self._refs_mode = saved
        elif t in (cst.Try, getattr(cst, "TryStar", cst.Try)):
            entry = state.copy()
            self._exec_block(_body(stmt.body), state)
            after_body = state.copy()
            results = [after_body]
            for h in stmt.handlers:
                hs = entry.copy()
                if h.type is not None:
                    self._eval(h.type, hs)
                if h.name is not None:
                    self._bind_target(h.name.name, None, hs, stmt)
                self._exec_block(_body(h.body), hs)
                results.append(hs)
            if stmt.orelse is not None:
                self._exec_block(_body(stmt.orelse.body), after_body)
            merged = results[0]
            for r in results[1:]:
                merged = _State.merge(merged, r)
            state.take(merged)
            if stmt.finalbody is not None:
                was_dead = state.dead
                state.dead = False
                self._exec_block(_body(stmt.finalbody.body), state)
                state.dead = state.dead or was_dead
        elif t is cst.Match:
            self._eval(stmt.subject, state)
            results = []
            for case in stmt.cases:
                cs = state.copy()
                self._exec_block(_body(case.body), cs)
                results.append(cs)
            merged = state.copy()
            for r in results:
                merged = _State.merge(merged, r)
            state.take(merged)
        elif isinstance(stmt, cst.BaseSmallStatement):
            self._exec_small(stmt, state)
        elif hasattr(stmt, "body"):  # unknown compound statement: be conservative
            body = getattr(stmt.body, "body", None)
            if isinstance(body, (list, tuple)):
                self._exec_block(body, state)

    def _exec_loop_rest(self, stmt, entry: _State, state: _State) -> None:
        """A loop body runs once and merges with the entry state (it may run zero times);
        then the `else:` block.

        The dependence on differentiated inputs grows around a loop (`y = x` after `x = w`
        in the body): while it changes, the body runs again, up to ``DEPENDENCE_LOOP_RUNS``
        times in all, from the entry's values and the dependence the last run reached; the
        dependence at a `continue` joins the body's end, at a `break` the loop's exit."""
        out = state
        jumps = self._dep.jumps if state.deps is not None else None
        if jumps is not None:
            jumps.append([])
        self._exec_block(_body(stmt.body), state)
        state.dead = False
        merged = _State.merge(entry, state)
        runs = 1
        breaks: dict = {}
        while jumps is not None:
            for is_break, deps in jumps[-1]:
                _join_deps(breaks if is_break else merged.deps, deps)
            jumps[-1].clear()
            if merged.deps == entry.deps or runs >= DEPENDENCE_LOOP_RUNS:
                jumps.pop()
                break
            runs += 1
            entry = _State(entry.env, entry.frozen, merged.deps)
            state = entry.copy()
            if type(stmt) is cst.For:
                self._bind_target(stmt.target, _element_of(self._values.get(id(stmt.iter))),
                                  state, stmt)
                self._dep_bind(stmt.target, self._dep_of(stmt.iter), state, None)
            self._exec_block(_body(stmt.body), state)
            state.dead = False
            merged = _State.merge(entry, state)
        state = out
        if stmt.orelse is not None:
            self._exec_block(_body(stmt.orelse.body), merged)
        if breaks and not merged.dead:
            _join_deps(merged.deps, breaks)
        state.take(merged)

    def _exec_if(self, stmt: cst.If, state: _State) -> None:
        self._eval(stmt.test, state)
        then = state.copy()
        self._exec_block(_body(stmt.body), then)
        other = state.copy()
        if isinstance(stmt.orelse, cst.If):
            self._exec_if(stmt.orelse, other)
        elif isinstance(stmt.orelse, cst.Else):
            self._exec_block(_body(stmt.orelse.body), other)
        merged = _State.merge(then, other)
        state.take(merged)

    def _exec_small(self, stmt, state: _State) -> None:
        t = type(stmt)
        if t is cst.Expr:
            v = self._eval(stmt.value, state)
            if isinstance(v, SpecialVal) and v.kind == "ref_switch":
                self._refs_mode = bool(v.target)  # `nnx.use_refs(True)` as a global switch
        elif t is cst.Assign:
            value = self._eval(stmt.value, state)
            if state.frozen and isinstance(stmt.value, cst.Call):
                # A call returns a fresh ref even when its creation site (key) was frozen.
                for ref, _ in iter_refs(value):
                    state.frozen.pop(ref.key, None)
            for target in stmt.targets:
                self._bind_target(target.target, value, state, stmt, value_expr=stmt.value)
            if state.deps is not None:
                deps = self._dep_of(stmt.value)
                for target in stmt.targets:
                    self._dep_bind(target.target, deps, state, stmt, stmt.value)
        elif t is cst.AnnAssign:
            value = self._eval(stmt.value, state) if stmt.value is not None else None
            ann = self._annotation_qn(stmt.annotation.annotation, self._func)
            cls = self._current_class
            if cls is not None and isinstance(stmt.target, cst.Name) and ann and \
                    api.canonical(ann) == api.REF_TYPE:
                # A class field annotated `jax.Ref` (dataclasses, flax structs): every
                # instance's attribute is a ref — not one ref, so never compared for aliasing.
                field_name = stmt.target.value
                self._new_attrs.setdefault(id(cls), {})[field_name] = RefVal(
                    key=("field", id(cls.node), field_name), origin="field", node=stmt,
                    scope=None, name=field_name, unique=False)
            if stmt.value is not None:
                self._bind_target(stmt.target, value, state, stmt, value_expr=stmt.value)
                if state.deps is not None:
                    self._dep_bind(stmt.target, self._dep_of(stmt.value), state, stmt,
                                   stmt.value)
        elif t is cst.AugAssign:
            self._exec_augassign(stmt, state)
        elif t is cst.Return:
            value = self._eval(stmt.value, state) if stmt.value is not None else None
            fact = ReturnFact(self._func, stmt, stmt.value, value)
            self._func.returns.append(fact)
            self.returns.append(fact)
            self._note_return(self._func, value)
            if state.deps is not None and stmt.value is not None:
                self._dep.frame.returns |= self._dep_of(stmt.value)
            state.dead = True
        elif t is cst.Raise:
            if stmt.exc is not None:
                self._eval(stmt.exc, state)
            state.dead = True
        elif t in (cst.Continue, cst.Break):
            if state.deps is not None and self._dep.jumps:
                # The dependence goes on to the loop's next run or past the loop.
                self._dep.jumps[-1].append((t is cst.Break, dict(state.deps)))
            state.dead = True
        elif t is cst.Import:
            for alias in stmt.names:
                full = dotted_name(alias.name)
                if full is None:
                    continue
                if alias.asname is not None:
                    self._bind_name(_as_name(alias.asname), QN(full), state)
                else:
                    top = full.split(".")[0]
                    self._bind_name(top, QN(top), state)
        elif t is cst.ImportFrom:
            self._exec_import_from(stmt, state)
        elif t is cst.Assert:
            self._eval(stmt.test, state)
        elif t is cst.Del:
            self._del_target(stmt.target, state)
        elif t in (cst.Global, cst.Nonlocal):
            for n in stmt.names:
                state.env.pop(n.name.value, None)
                self._func.summary.setdefault(n.name.value, None)

    def _exec_import_from(self, stmt: cst.ImportFrom, state: _State) -> None:
        if stmt.relative:
            module = None
        else:
            module = dotted_name(stmt.module) if stmt.module is not None else None
        if isinstance(stmt.names, cst.ImportStar):
            self.has_star_import = True
            return
        for alias in stmt.names:
            name = dotted_name(alias.name)
            local = _as_name(alias.asname) if alias.asname is not None else name
            if local is None:
                continue
            self._bind_name(local, QN(f"{module}.{name}") if module else None, state)

    def _exec_augassign(self, stmt: cst.AugAssign, state: _State) -> None:
        target = stmt.target
        self._eval(stmt.value, state)
        if isinstance(target, cst.Subscript):
            base = self._eval(target.value, state)
            self._eval_slices(target, state)
            if isinstance(base, RefVal):
                self._record_access("augitem", stmt, target.value, base, stmt.value, state)
            else:
                self.item_writes.append(ItemWrite(stmt, base, stmt.value, self._func, target))
        elif isinstance(target, cst.Name):
            v = self._lookup(target.value, target, state)
            if isinstance(v, RefVal):
                self._ref_use("augassign", target, v, stmt, _op_text(stmt.operator))
        elif isinstance(target, cst.Attribute):
            base = self._eval(target.value, state)
            cur = self._attribute_value(base, target.attr.value)
            if isinstance(cur, RefVal):
                self._ref_use("augassign", target, cur, stmt, _op_text(stmt.operator))
            self.attribute_writes.append(AttributeWrite(stmt, base, target.attr.value, None,
                                                        self._func))
        if state.deps is not None:
            deps = self._dep_of(stmt.value)
            if isinstance(target, cst.Name):
                self._dep_set(state, target.value, state.deps.get(target.value, EMPTY) | deps)
            elif isinstance(target, cst.Subscript):
                self._dep_subscript(target, deps, state, stmt)

    def _exec_def(self, node: cst.FunctionDef, state: _State) -> None:
        outer = self._func
        cls = self._current_class
        info = self._get_function(node, outer if not cls else self._class_parent, cls)
        kinds = []
        for d in node.decorators:
            dn = d.decorator
            if isinstance(dn, cst.Name) and dn.value in ("staticmethod", "classmethod", "property"):
                kinds.append(dn.value)
        info.decorator_kinds = tuple(kinds)
        for p in info.params:
            if p.node.default is not None:
                info.defaults[p.name] = self._eval(p.node.default, state)
        value: Optional[Value] = FuncVal(info)
        for d in reversed(node.decorators):
            dv = self._eval(d.decorator, state)
            if cls is not None and isinstance(dv, QN) and \
                    dv.qualname in ("builtins.staticmethod", "builtins.classmethod"):
                continue  # the builtin: still the function, called without (or with) a receiver
            value = self._apply_decorator(dv, value, d.decorator, state)
        self._enqueue(info)
        if outer.is_module and cls is None:
            # Only the names the module binds more than once can differ from their final
            # value (a full copy per top-level def made many-function modules quadratic).
            rebound = self._module_rebound()
            env = state.env
            info.def_env = {k: env[k] for k in rebound if k in env}
        if cls is not None and isinstance(value, FuncVal) and value.info is info:
            cls.methods[node.name.value] = value
        self._bind_name(node.name.value, value, state)

    _current_class: Optional[ClassInfo] = None
    _class_parent: Optional[FunctionInfo] = None

    def _module_rebound(self) -> frozenset:
        """The names bound more than once at module level (defs, classes, assignments,
        imports, loop and ``with`` targets; not inside functions or classes)."""
        out = self._cache.get("module_rebound")
        if out is None:
            counts: dict = {}

            def bind(target) -> None:
                t = type(target)
                if t is cst.Name:
                    counts[target.value] = counts.get(target.value, 0) + 1
                elif t in (cst.Tuple, cst.List):
                    for e in target.elements:
                        bind(e.value)
                elif t is cst.StarredElement:
                    bind(target.value)

            stack = list(self.module.body)
            while stack:
                node = stack.pop()
                t = type(node)
                if t in (cst.FunctionDef, cst.ClassDef):
                    bind(node.name)
                    continue
                if t is cst.SimpleStatementLine:
                    for small in node.body:
                        ts = type(small)
                        if ts is cst.Assign:
                            for tgt in small.targets:
                                bind(tgt.target)
                        elif ts in (cst.AnnAssign, cst.AugAssign):
                            bind(small.target)
                        elif ts in (cst.Import, cst.ImportFrom) and \
                                not isinstance(small.names, cst.ImportStar):
                            for alias in small.names:
                                if alias.asname is not None:
                                    bind(alias.asname.name)
                                else:
                                    name = alias.name
                                    while isinstance(name, cst.Attribute):
                                        name = name.value
                                    bind(name)
                    continue
                if t is cst.For:
                    bind(node.target)
                elif t is cst.With:
                    for item in node.items:
                        if item.asname is not None:
                            bind(item.asname.name)
                stack.extend(c for c in child_nodes(node)
                             if isinstance(c, (cst.BaseSuite, cst.BaseStatement, cst.Else,
                                               cst.ExceptHandler, cst.Finally,
                                               cst.MatchCase, cst.If))
                             or type(c).__name__ in ("ExceptStarHandler", "IndentedBlock"))
            out = self._cache["module_rebound"] = frozenset(k for k, n in counts.items()
                                                            if n > 1)
        return out

    def _exec_class(self, node: cst.ClassDef, state: _State) -> None:
        bases = [self._eval(b.value, state) for b in node.bases]
        for d in node.decorators:
            self._eval(d.decorator, state)
        cls = self.classes.get(id(node))
        if cls is None:
            cls = ClassInfo(node=node, name=node.name.value)
            self.classes[id(node)] = cls
        for b in node.bases:
            bv = self._values.get(id(b.value))
            if isinstance(bv, QN):
                a = api.lookup(bv.qualname)
                if a is not None and a.result is api.Result.NNX_OBJECT:
                    cls.nnx = cls.nnx or ("variable" if a.ref_keywords else "module")
            elif isinstance(bv, ClassVal):
                cls.nnx = cls.nnx or bv.cls.nnx
        cls.bases = [b.cls for b in bases if isinstance(b, ClassVal) and b.cls is not cls]
        saved = (self._current_class, self._class_parent)
        self._current_class, self._class_parent = cls, self._func
        class_state = _State(dict(state.env), dict(state.frozen))
        self._exec_block(_body(node.body), class_state)
        self._current_class, self._class_parent = saved
        self._bind_name(node.name.value, ClassVal(cls), state)

    def _apply_decorator(self, dv, fv, node, state) -> Optional[Value]:
        if not isinstance(fv, FuncVal):
            return None
        if isinstance(dv, Choice):
            # `@transform` with `transform = {"jit": jax.jit, "vmap": jax.vmap}[name]`.
            return _one_of(_tag_via(self._apply_decorator(v, fv, node, state), fv, node, v,
                                    self.module)
                           for _, v in dv.alts)
        if isinstance(dv, OneOf):
            return _one_of(self._apply_decorator(v, fv, node, state) for v in dv.alts)
        if isinstance(dv, FuncVal):
            dv = self._forwarded_api(dv) or dv
        if isinstance(dv, QN):
            a = api.lookup(dv.qualname)
            if a is not None and a.name in api.DECORATOR_APIS:
                return self._apply_api(a, fv, node, {}, (), state)
            return None
        if isinstance(dv, TransformVal):
            return self._apply_api(api.API[dv.kind], fv, node, dv.kwargs, dv.args, state,
                                   dv.node)
        if isinstance(dv, SpecialVal) and dv.kind == "defjvp":
            self._add_role(fv.info, api.Role.CUSTOM_JVP_RULE, node)
            return dv.target
        if isinstance(dv, SpecialVal) and dv.kind in ("defvjp_fwd", "defvjp_bwd"):
            return dv.target
        if isinstance(dv, SpecialVal) and dv.kind == "ref_switch":
            # `@nnx.var_defaults(ref=True)`: the function runs with refs on.
            if dv.target:
                self._forced_refs_mode.add(id(fv.info))
                self._note_refs_mode(fv.info, True)
            return fv
        if isinstance(dv, FuncVal) and not dv.transforms:
            # A local decorator (e.g. the docs' `foreach`): a plain call with the function.
            self._bind_call(node, dv, [(None, fv, None)], {}, "plain")
            return dv.info.return_value
        return None

    def _apply_api(self, a: "api.Api", fv: FuncVal, node, kwargs: dict, args: tuple, state,
                   transform_node=None) -> Optional[Value]:
        """``fv`` given to the API ``a`` as its function (a decorator, a call, a factory's
        result, a partial): what the application evaluates to."""
        if a.family is api.Family.TRANSFORM:
            return self._wrap(fv, Transform(a.name, transform_node or node, kwargs, args), node)
        if a.family is api.Family.WRAPPER:
            return fv
        if not a.callees:
            return None
        callee = a.callees[0]
        if a.family is api.Family.INLINE:
            # pl.when / pl.loop: the body runs here, once, as part of the enclosing trace.
            self._bind_call(node, FuncVal(fv.info, (), fv.bound_args, fv.bound_kwargs, None,
                                          fv.bound_kw_values),
                            [(None, None, None) for _ in callee.receives], {}, "plain")
            return None
        self._mark_kernel(fv, node, callee, kwargs)
        self.kernel_entries.append(KernelEntry(fv.info, a.name, callee, node))
        if a.result is api.Result.LAUNCHER:
            return SpecialVal("launcher", fv, node, a.name, dict(kwargs))
        # run_scoped / core_map: the body runs now, inside the enclosing kernel's trace.
        self.traced_calls.append(TracedCall(kind=a.name, node=node, func=self._func,
                                            targets=[fv.info], transforms=(), operands=[],
                                            bindings={}))
        fv.info.callers.append((self._func, node))
        return None

    def _wrap(self, fv: FuncVal, transform: Transform, node) -> FuncVal:
        self._add_role(fv.info, api.API[transform.kind].role, node, transform)
        if transform.kind == api.CUSTOM_VJP and fv.info.custom_vjp is None:
            fv.info.custom_vjp = {}
        return FuncVal(fv.info, fv.transforms + (transform,), fv.bound_args, fv.bound_kwargs,
                       fv.self_value, fv.bound_kw_values)

    def _add_role(self, info: FunctionInfo, kind: str, node, transform=None) -> None:
        info.roles[(kind, id(node))] = Role(kind, node, transform)

    # -- binding -----------------------------------------------------------------------------

    def _bind_name(self, name: str, value: Optional[Value], state: _State) -> None:
        state.env[name] = value
        summary = self._func.summary if self._current_class is None else None
        if summary is not None:
            if name in summary:
                self._rebound.setdefault(id(self._func), set()).add(name)
                summary[name] = join(summary[name], value)
            else:
                summary[name] = value

    def _bind_target(self, target, value, state: _State, stmt, value_expr=None) -> None:
        t = type(target)
        if t is cst.Name:
            if isinstance(value, RefVal) and not value.name:
                value.name = target.value
            self._bind_name(target.value, value, state)
        elif t in (cst.Tuple, cst.List):
            elements = target.elements
            starred = any(isinstance(e, cst.StarredElement) for e in elements)
            items = value.items if isinstance(value, SeqVal) and not starred and \
                len(value.items) == len(elements) else None
            refs = _unpacked_refs(value, len(elements))
            star_at = next((i for i, e in enumerate(elements)
                            if isinstance(e, cst.StarredElement)), None)
            for i, e in enumerate(elements):
                sub = e.value
                if refs is not None:
                    # A tuple of refs (`x_ref, o_ref = refs`, `*ins, out = refs`): refs.
                    if i == star_at:
                        v = refs.rest(i) if i == len(elements) - 1 else RefSeqVal(
                            refs.base, refs.offset, False)
                    else:
                        v = refs.item(i if star_at is None or i < star_at else None)
                    self._bind_target(sub, v, state, stmt)
                elif isinstance(e, cst.StarredElement):
                    self._bind_target(sub, None, state, stmt)
                else:
                    self._bind_target(sub, items[i] if items is not None else None, state, stmt)
        elif t is cst.Subscript:
            base = self._eval(target.value, state)
            self._eval_slices(target, state)
            if isinstance(base, RefVal):
                self._record_access("setitem", stmt, target.value, base, value_expr, state)
            else:
                self.item_writes.append(ItemWrite(stmt, base, value_expr, self._func, target))
        elif t is cst.Attribute:
            base = self._eval(target.value, state)
            attr = target.attr.value
            if isinstance(base, NamespaceVal):
                d = base.attrs
                d[attr] = join(d[attr], value) if attr in d else value
            if isinstance(base, InstanceVal):
                d = self._new_attrs.setdefault(id(base.cls), {})
                if isinstance(value, RefVal) and not value.name:
                    value.name = f"self.{attr}"
                d[attr] = join(d[attr], value) if attr in d else value
                if is_interesting(value):
                    # Read elsewhere (module code after `h = Holder()`) next round.
                    self._interprocedural = True
            self.attribute_writes.append(AttributeWrite(stmt, base, attr, value, self._func))
        elif t is cst.StarredElement:
            self._bind_target(target.value, None, state, stmt)

    def _del_target(self, target, state: _State) -> None:
        if isinstance(target, cst.Name):
            state.env[target.value] = None
        elif isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                self._del_target(e.value, state)
        else:
            self._eval(target, state)

    def _lookup(self, name: str, node, state: _State) -> Optional[Value]:
        if name in state.env:
            return state.env[name]
        return self._lookup_enclosing(name, self._func, node)

    def _lookup_enclosing(self, name: str, info: FunctionInfo, node) -> Optional[Value]:
        """A free variable: the joined value of its bindings in the nearest enclosing scope."""
        scope = info.parent if not info.is_module else None
        if info.is_module:
            if name in info.summary:
                return info.summary[name]
        while scope is not None:
            if name in scope.summary:
                value = scope.summary[name]
                if name in self._rebound.get(id(scope), ()):
                    value = self._call_time_value(name, info, scope, value)
                if node is not None and contains_ref(value):
                    # Every function between here and the defining scope closes over it.
                    f = info
                    while f is not None and f is not scope:
                        f.closure_refs.setdefault(name, (value, node))
                        f = f.parent
                return value
            scope = scope.parent
        if name in _BUILTIN_NAMES and not self.has_star_import:
            return QN(f"builtins.{name}")
        return None

    def _call_time_value(self, name: str, info: FunctionInfo, scope: FunctionInfo, value):
        """A free name that ``scope`` binds several times (a notebook's cells, a test that
        rebinds ``x_ref``, ``if jit: f = jax.jit(f)``), read in ``info``: the values that reach
        the calls of the function of ``scope`` that holds ``info``, when that function is only
        called from the scope's own code; otherwise, for a module-level name bound to functions,
        the function it was bound to when that def ran (one kernel per notebook cell); otherwise
        ``value``, the join of every binding."""
        f = info
        while f.parent is not None and f.parent is not scope:
            f = f.parent
        if f.parent is not scope:
            return value
        if f.call_envs and self._local_only(f, scope):
            out = "none"
            for env in f.call_envs:
                if name not in env:
                    out = "none"
                    break
                out = env[name] if out == "none" else join(out, env[name])
            if out != "none":
                return out
        if scope.is_module and not isinstance(value, FuncVal) and f.def_env is not None:
            at_def = f.def_env.get(name)
            if isinstance(at_def, (FuncVal, OneOf)):
                return at_def
        return value

    @staticmethod
    def _local_only(f: FunctionInfo, scope: FunctionInfo) -> bool:
        """Whether ``f``, a def of ``scope``, is used only by ``scope``'s own statements, as a
        call or as an argument (``jax.jit(f)``, ``lax.cond(p, f, g)``), and so runs only at
        the calls the analysis sees there: the name ``f`` (and the names bound to expressions
        that mention it, ``g = jax.jit(f)``) is not read in a nested function, returned,
        yielded, stored in a container, an attribute or an item."""
        if f.local_only is not None:
            return f.local_only
        ok = not f.is_lambda
        if ok:
            body = scope.node.body if scope.is_module else _body(scope.node.body)
            names = {f.name}
            changed = True
            while changed:  # aliases: `g = jax.jit(f)`
                changed = False
                for node in walk_nodes(list(body), _in_own_scope):
                    if type(node) is cst.Assign and len(node.targets) == 1 and \
                            type(node.targets[0].target) is cst.Name and \
                            node.targets[0].target.value not in names and any(
                                type(n) is cst.Name and n.value in names
                                for n in walk_nodes([node.value], _in_own_scope)):
                        names.add(node.targets[0].target.value)
                        changed = True
            escaping = (cst.Return, cst.Yield, cst.List, cst.Tuple, cst.Set, cst.Dict,
                        cst.Lambda, cst.FunctionDef, cst.ClassDef, cst.Global, cst.Nonlocal)
            stack = [(n, False) for n in body]
            while stack and ok:
                node, bad = stack.pop()
                t = type(node)
                if t is cst.Name:
                    if bad and node.value in names:
                        ok = False
                    continue
                if t is cst.FunctionDef and node is not f.node:
                    for d in node.decorators:
                        stack.append((d, bad))
                    stack.append((node.body, True))
                    stack.append((node.params, True))
                    continue
                if t is cst.FunctionDef:  # f's own def: its decorators run in the scope
                    for d in node.decorators:
                        stack.append((d, bad))
                    continue
                if t in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                    targets = [tg.target for tg in node.targets] if t is cst.Assign else \
                        [node.target]
                    if any(type(tg) is not cst.Name for tg in targets):
                        bad = True  # stored in an item or an attribute
                    if node.value is not None:
                        stack.append((node.value, bad))
                    continue
                bad = bad or t in escaping
                stack.extend((c, bad) for c in child_nodes(node))
        f.local_only = ok
        return ok

    def _note_closure(self, name: str, label: str, value: Value, node) -> None:
        """Record ``value`` as closed over by every function between here and the scope that
        binds ``name``."""
        scope = self._func.parent
        while scope is not None and name not in scope.summary:
            scope = scope.parent
        if scope is None:
            return
        f = self._func
        while f is not None and f is not scope:
            f.closure_refs.setdefault(label, (value, node))
            f = f.parent

    # -- expressions -------------------------------------------------------------------------

    def _eval(self, node, state: _State) -> Optional[Value]:
        value = self._eval_inner(node, state)
        if value is not None:
            self._values[id(node)] = value
        return value

    def _eval_inner(self, node, state: _State) -> Optional[Value]:
        t = type(node)
        if t is cst.Name:
            value = self._lookup(node.value, node, state)
            if isinstance(value, RefVal) and value.key in state.frozen:
                self.after_freeze.append(UseAfterFreeze(node, "use", value,
                                                        state.frozen[value.key], self._func))
            return value
        if t is cst.Attribute:
            base = self._eval(node.value, state)
            attr = node.attr.value
            if isinstance(base, QN):
                return QN(f"{base.qualname}.{attr}")
            if isinstance(base, RefVal) and base.tree:
                # An NNX object holding refs: its Variables and sub-modules hold refs too.
                if base.cls is None:
                    return None
                value = tree_attribute(base, attr, self._class_attrs(base.cls, attr))
                if value is not None and isinstance(node.value, cst.Name) and \
                        node.value.value not in state.env:
                    # `model.bias` read through a closed-over `model`: a closed-over ref.
                    self._note_closure(node.value.value, f"{node.value.value}.{attr}", value,
                                       node)
                return value
            if isinstance(base, RefVal):
                if attr in api.REF_VIEW_ATTRIBUTES and (
                        not self._func.is_module or base.origin == "pallas"):
                    # A view of the ref (jax/_src/state/types.py), valid on a traced ref: still
                    # a ref. At top level a concrete Ref has none of them but `.at`.
                    if attr == "at":
                        return SpecialVal("ref_at", base)
                    return base if attr in api.REF_VIEW_PROPERTIES else \
                        SpecialVal("ref_view", base)
                if attr in api.ARRAY_ONLY_ATTRIBUTES:
                    self._ref_use("attr", node.value, base, node, attr)
                if attr == "at":
                    return SpecialVal("ref_at", base)
                return None
            value = self._attribute_value(base, attr)
            if value is None and attr in api.INHERITED_WRAPPERS and \
                    type(node.value) is cst.Name and node.value.value in ("self", "cls") and \
                    not self._func.is_module:
                # `self.pallas_call(...)` inherited from an imported test base class (in a
                # method, or a function nested in one).
                return QN(api.INHERITED_WRAPPERS[attr])
            if isinstance(value, RefVal) and isinstance(node.value, cst.Name) and \
                    node.value.value not in state.env:
                # `self.buf` read through a closed-over `self`: a closed-over ref.
                self._note_closure(node.value.value, f"{node.value.value}.{attr}", value, node)
            return value
        if t is cst.Call:
            return self._eval_call(node, state)
        if t is cst.Subscript:
            base = self._eval(node.value, state)
            self._eval_slices(node, state)
            if isinstance(base, RefVal):
                if _is_pallas_param(base) and isinstance(_const_index(node), int):
                    # `in_refs[0]`: a row of a ref, or a ref of a pytree of refs (a kernel
                    # parameter may be either): unknown, unless it is unpacked.
                    return SpecialVal("pallas_item", base, node)
                self._record_access("read", node, node.value, base, None, state)
                return ArrayVal(node)
            if isinstance(base, RefSeqVal):
                return _seq_item(base, node)
            if isinstance(base, FuncPoolVal):
                return base.elt if base.kind in ("list", "dict") else None
            if isinstance(base, RefPoolVal):
                item = base.item(_const_index(node))
                if type(node.value) is cst.Name and node.value.value not in state.env:
                    # `pool[0]` read through a closed-over `pool`: a closed-over ref.
                    self._note_closure(node.value.value,
                                       self.module.code_for_node(node).strip(), item, node)
                return item
            if isinstance(base, SpecialVal) and base.kind == "ref_at":
                return as_view(base.target, ".at[...]")
            if isinstance(base, (SeqVal, DictVal)):
                key = _const_index(node)
                if key is not None:
                    try:
                        return base.items[key]
                    except (KeyError, IndexError, TypeError):
                        return None
                return _choice(base)
            if isinstance(base, ArrayVal):
                return ArrayVal(node)
            return None
        if t in (cst.Tuple, cst.List):
            items = []
            starred = False
            for e in node.elements:
                v = self._eval(e.value, state)
                if isinstance(e, cst.StarredElement):
                    starred = True
                items.append(v)
            if starred:
                return None
            return SeqVal(tuple(items), "tuple" if t is cst.Tuple else "list")
        if t is cst.Dict:
            items = {}
            ok = True
            for e in node.elements:
                if isinstance(e, cst.StarredDictElement):
                    self._eval(e.value, state)
                    ok = False
                    continue
                self._eval(e.key, state)
                v = self._eval(e.value, state)
                k = _const_key(e.key)
                if k is None:
                    ok = False
                else:
                    items[k] = v
            return DictVal(items) if ok else None
        if t is cst.BinaryOperation:
            lv = self._eval(node.left, state)
            rv = self._eval(node.right, state)
            op = _op_text(node.operator)
            if isinstance(lv, RefVal):
                self._ref_use("binop", node.left, lv, node, op)
            if isinstance(rv, RefVal):
                self._ref_use("binop", node.right, rv, node, op)
            if isinstance(lv, ArrayVal) or isinstance(rv, ArrayVal):
                return ArrayVal(node)
            return None
        if t is cst.UnaryOperation:
            v = self._eval(node.expression, state)
            if isinstance(v, RefVal) and not isinstance(node.operator, cst.Not):
                self._ref_use("unary", node.expression, v, node, _op_text(node.operator))
            return ArrayVal(node) if isinstance(v, ArrayVal) else None
        if t is cst.Comparison:
            left = node.left
            lv = self._eval(left, state)
            for ct in node.comparisons:
                rv = self._eval(ct.comparator, state)
                if not isinstance(ct.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                    op = _op_text(ct.operator)
                    if isinstance(lv, RefVal):
                        self._ref_use("compare", left, lv, node, op)
                    if isinstance(rv, RefVal):
                        self._ref_use("compare", ct.comparator, rv, node, op)
                left, lv = ct.comparator, rv
            return None
        if t is cst.BooleanOperation:
            self._eval(node.left, state)
            self._eval(node.right, state)
            return None
        if t is cst.IfExp:
            self._eval(node.test, state)
            a = self._eval(node.body, state)
            b = self._eval(node.orelse, state)
            return join(a, b)
        if t is cst.Lambda:
            info = self._get_function(node, self._func, None)
            for p in info.params:
                if p.node.default is not None:
                    info.defaults[p.name] = self._eval(p.node.default, state)
            self._enqueue(info)
            return FuncVal(info)
        if t is cst.NamedExpr:
            v = self._eval(node.value, state)
            self._bind_target(node.target, v, state, node)
            if state.deps is not None:
                self._dep_bind(node.target, self._dep_of(node.value), state, None)
            return v
        if t in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            elt = self._eval_comprehension(node, state)
            if isinstance(elt, RefVal) and elt.origin == "created" and not elt.tree and \
                    elt.node is (node.value if t is cst.DictComp else node.elt):
                # A fresh ref per element: `[jax.new_ref(x) for x in xs]`.
                return RefPoolVal(elt, _COMPREHENSION_KINDS[t])
            if isinstance(elt, (FuncVal, OneOf)):
                # Functions: `[jax.jit(k) for k in (k1, k2)]`; each item is one of them.
                return FuncPoolVal(elt, _COMPREHENSION_KINDS[t])
            return None
        if t in (cst.Await,):
            return self._eval(node.expression, state)
        if t in (cst.Yield,):
            if node.value is not None and not isinstance(node.value, cst.From):
                self._eval(node.value, state)
            elif isinstance(node.value, cst.From):
                self._eval(node.value.item, state)
            return None
        if t is cst.FormattedString:
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    self._eval(part.expression, state)
            return None
        if t is cst.Set:
            for e in node.elements:
                self._eval(e.value, state)
            return None
        if t is cst.StarredElement:
            self._eval(node.value, state)
            return None
        if t is cst.ConcatenatedString:
            self._eval(node.left, state)
            self._eval(node.right, state)
            return None
        return None

    def _eval_slices(self, node: cst.Subscript, state: _State) -> None:
        for expr in slice_exprs(node):
            self._eval(expr, state)

    def _eval_comprehension(self, node, state: _State) -> Optional[Value]:
        """Evaluate a comprehension in a scope of its own; the value of its element."""
        cs = state.copy()
        f = node.for_in
        while f is not None:
            it = self._eval(f.iter, cs)
            self._bind_comp_target(f.target, _element_of(it), cs)
            if cs.deps is not None:
                self._dep_bind(f.target, self._dep_of(f.iter), cs, None)
            for cond in f.ifs:
                self._eval(cond.test, cs)
            f = f.inner_for_in
        if isinstance(node, cst.DictComp):
            self._eval(node.key, cs)
            return self._eval(node.value, cs)
        return self._eval(node.elt, cs)

    def _bind_comp_target(self, target, value, state: _State) -> None:
        if isinstance(target, cst.Name):
            state.env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            items = value.items if isinstance(value, SeqVal) and \
                len(value.items) == len(target.elements) else None
            for i, e in enumerate(target.elements):
                self._bind_comp_target(e.value, items[i] if items else None, state)

    def _class_attrs(self, cls: ClassInfo, attr: str) -> dict:
        """The attributes of ``cls``: the last round's, or this round's for one it lacks."""
        return cls.attrs if attr in cls.attrs else self._new_attrs.get(id(cls), {})

    def _attribute_value(self, base, attr: str) -> Optional[Value]:
        if isinstance(base, InstanceVal):
            cls = base.cls
            m = cls.method(attr)
            if m is not None:
                if "staticmethod" in m.info.decorator_kinds:
                    return m  # `self.step` of a staticmethod: no receiver is bound
                return FuncVal(m.info, m.transforms, m.bound_args, m.bound_kwargs, base,
                               m.bound_kw_values)
            value = cls.attrs.get(attr)
            if value is None:
                value = self._new_attrs.get(id(cls), {}).get(attr)
            if isinstance(value, RefVal) and value.tree and value.kwargs.get("ref"):
                # A Variable created with `ref=True` holds a ref in every instance: one per
                # instance, so never compared for aliasing.
                return dataclasses.replace(value, unique=False)
            if isinstance(value, RefVal) and value.tree:
                # An NNX object's attribute holds refs only in instances created with refs
                # on, which are RefVals themselves; this instance is not known to be one
                # (`self` in a method): the same object, not known to hold refs.
                return NnxVal("variable" if value.tree == "variable" else "module",
                              value.node if value.origin == "created" else None,
                              cls=value.cls)
            return value
        if isinstance(base, NamespaceVal):
            return base.attrs.get(attr)
        if isinstance(base, ClassVal):
            m = base.cls.method(attr)
            if m is not None and "classmethod" in m.info.decorator_kinds:
                # `Cls.make` of a classmethod: the class is bound as its first argument.
                return FuncVal(m.info, m.transforms, m.bound_args, m.bound_kwargs, base,
                               m.bound_kw_values)
            return m

        if isinstance(base, SpecialVal) and base.kind == "vjp_fn" and attr == "with_refs":
            return SpecialVal("vjp_with_refs", base.target, base.node, base.api_name)
        if isinstance(base, FuncVal):
            if attr == "defvjp":
                return SpecialVal("defvjp", base)
            if attr == "defjvp":
                return SpecialVal("defjvp", base)
            if attr == "defjvps":
                return SpecialVal("defjvps", base)
            if attr in ("defvjp_fwd", "fwd"):
                return None
            return None
        return None

    # -- calls -------------------------------------------------------------------------------

    def _eval_args(self, call: cst.Call, state: _State) -> list:
        out = []
        for a in call.args:
            out.append((a, self._eval(a.value, state)))
        return out

    def _eval_call(self, node: cst.Call, state: _State) -> Optional[Value]:
        fv = self._eval(node.func, state)
        args = self._eval_args(node, state)
        if type(node.func) is cst.Attribute and node.func.attr.value in MUTATING_METHODS:
            receiver = self._values.get(id(node.func.value))
            if not isinstance(receiver, (QN, RefVal, FuncVal, ClassVal)):
                self.mutating_calls.append(MutatingCall(node, receiver, node.func.attr.value,
                                                        self._func))
        if isinstance(fv, FuncVal):
            fv = self._forwarded_api(fv) or fv
        if isinstance(fv, FuncVal) and args and not args[0][0].keyword and \
                not args[0][0].star and self._applies_first(fv):
            # `def call(f, *args): return f(*args)`: `call(g, a, b)` calls `g(a, b)` here.
            fv, args = args[0][1], args[1:]
            if not isinstance(fv, (FuncVal, OneOf, QN)):
                return None
            if isinstance(fv, FuncVal):
                fv = self._forwarded_api(fv) or fv
        if isinstance(fv, QN):
            return self._call_qn(node, fv.qualname, args, state)
        if isinstance(fv, FuncVal):
            return self._call_func(node, fv, args, state)
        if isinstance(fv, Choice):
            # `{"jit": jax.jit, "vmap": jax.vmap}[name](f)`: each may be the one called.
            target = _first_positional(args)
            return _one_of(_tag_via(self._call_alternative(node, v, args, state), target,
                                    node.func, v, self.module)
                           for _, v in fv.alts)
        if isinstance(fv, OneOf):
            # `kernel = a if c else b; kernel(...)`, `if jit: f = jax.jit(f)`: each runs.
            return _one_of(self._call_alternative(node, f, args, state) for f in fv.alts)
        if isinstance(fv, TransformVal):
            target = _first_positional(args)
            if isinstance(target, FuncVal):
                return self._apply_api(api.API[fv.kind], target, node, fv.kwargs, fv.args,
                                       state, fv.node)
            a = api.API[fv.kind]
            if isinstance(target, OneOf) and a.family is api.Family.TRANSFORM:
                return _one_of(self._apply_api(a, f, node, fv.kwargs, fv.args, state, fv.node)
                               for f in target.alts)
            if isinstance(target, OneOf) and a.family is api.Family.KERNEL:
                for f in target.alts:
                    self._apply_api(a, f, node, fv.kwargs, fv.args, state, fv.node)
                if a.result is api.Result.LAUNCHER:
                    return SpecialVal("launcher", target, node, a.name, dict(fv.kwargs))
            return None
        if isinstance(fv, ClassVal):
            init = fv.cls.methods.get("__init__")
            inst = InstanceVal(fv.cls, node)
            if init is not None:
                self._call_func(node, FuncVal(init.info, init.transforms, (), (), inst), args,
                                state)
            if fv.cls.nnx and self._refs_mode:
                # An NNX Module/Pytree created with refs on: its Variables hold refs.
                return RefVal(key=("new", id(node)), origin="created", node=node,
                              scope=self._func, tree=fv.cls.nnx,
                              cls=fv.cls if fv.cls.nnx == "module" else None)
            return inst
        if isinstance(fv, SpecialVal):
            return self._call_special(node, fv, args, state)
        return None

    def _call_alternative(self, node: cst.Call, fv: Value, args: list, state: _State):
        """One alternative of a OneOf or a Choice called with ``args``."""
        if isinstance(fv, QN):
            return self._call_qn(node, fv.qualname, args, state)
        if isinstance(fv, FuncVal):
            fv = self._forwarded_api(fv) or fv
            if isinstance(fv, QN):
                return self._call_qn(node, fv.qualname, args, state)
            return self._call_func(node, fv, args, state)
        if isinstance(fv, OneOf):
            return _one_of(self._call_alternative(node, f, args, state) for f in fv.alts)
        if isinstance(fv, TransformVal):
            target = _first_positional(args)
            if isinstance(target, FuncVal):
                return self._apply_api(api.API[fv.kind], target, node, fv.kwargs, fv.args,
                                       state, fv.node)
        return None

    def _call_qn(self, node: cst.Call, qn: str, args: list, state: _State) -> Optional[Value]:
        if qn in api.NAMESPACE_CONSTRUCTORS:
            if any(arg.star for arg, _ in args):
                return None
            return NamespaceVal(node, {arg.keyword.value: v for arg, v in args if arg.keyword})
        a = api.lookup(qn)
        if a is None:
            if qn.startswith("builtins."):
                name = qn[len("builtins."):]
                if name in api.BUILTINS_NEEDING_ARRAY:
                    for arg, v in args:
                        if isinstance(v, RefVal) and not arg.keyword:
                            self._ref_use("builtin", arg.value, v, node, name)
                if name in ("tuple", "list") and len(args) == 1:
                    v = args[0][1]
                    if isinstance(v, SeqVal):
                        return SeqVal(v.items, name)
                return None
            if api.is_array_function(qn):
                self._array_function_args(node, qn, args)
                if api.returns_jax_array(qn):
                    return ArrayVal(node)
            return None
        fam = a.family
        F = api.Family
        if fam is F.REF_CONSTRUCTOR:
            init_arg = _first_positional_arg(args)
            init_value = init_arg[1] if init_arg else None
            ref = RefVal(key=("new", id(node)), origin="created", node=node, scope=self._func,
                         kwargs={arg.keyword.value: arg.value for arg, _ in args if arg.keyword})
            self.creations.append(Creation(node, self._func, ref,
                                           init_arg[0].value if init_arg else None,
                                           init_value, a.name))
            return ref
        if fam is F.NNX:
            return self._call_nnx(node, a, args)
        if fam is F.FREEZE:
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                ref = target[1]
                self.freezes.append(Freeze(node, self._func, target[0].value, ref))
                state.frozen.setdefault(ref.key, node)  # the first freeze ends the ref
            return ArrayVal(node)
        if fam is F.FREE:  # jax.free_ref(ref) ends the ref, as a freeze does
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                state.frozen.setdefault(target[1].key, node)
            return None
        if fam is F.REF_READ:
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                self._record_access("get", node, target[0].value, target[1], None, state)
            return ArrayVal(node)
        if fam is F.REF_WRITE:
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                pos = [arg for arg, _ in args if not arg.keyword and not arg.star]
                val = pos[2].value if len(pos) > 2 else None
                if val is None:
                    for arg, _ in args:
                        if arg.keyword and arg.keyword.value in ("value", "val", "x"):
                            val = arg.value
                self._record_access(a.name[len("ref_"):], node, target[0].value, target[1],
                                    val, state)
            return ArrayVal(node) if a.result is api.Result.ARRAY else None
        if fam is F.TRANSFORM:
            target = _first_positional(args)
            kwargs = {arg.keyword.value: arg.value for arg, _ in args if arg.keyword}
            rest = tuple(arg.value for arg, _ in args[1:] if not arg.keyword)
            if isinstance(target, FuncVal):
                if a.primals:
                    return self._call_jvp_like(node, a, target, args, state)
                return self._wrap(target, Transform(a.name, node, kwargs, rest), node)
            if isinstance(target, OneOf):  # each of the functions a name may hold
                if a.primals:
                    for f in target.alts:
                        self._call_jvp_like(node, a, f, args, state)
                    return None
                return _one_of(self._wrap(f, Transform(a.name, node, kwargs, rest), node)
                               for f in target.alts)
            if target is None and not any(not arg.keyword for arg, _ in args):
                return TransformVal(a.name, node, kwargs)
            if isinstance(target, QN) and a.role is not None:
                ctor = api.lookup(target.qualname)
                if ctor is not None and ctor.family is F.REF_CONSTRUCTOR:
                    # `jax.jit(jax.new_ref)`: the traced function returns the ref it makes.
                    return SpecialVal("traced_constructor", ctor.name, node, a.name)
            return None
        if fam is F.PARTIAL:
            return self._call_partial(node, args)
        if fam is F.CONTROL_FLOW:
            return self._call_control_flow(node, a, args, state)
        if fam in (F.KERNEL, F.INLINE, F.WRAPPER):
            kwargs = {arg.keyword.value: arg.value for arg, _ in args if arg.keyword}
            positional = [(arg, v) for arg, v in args if not arg.keyword and not arg.star]
            if a.factory == "always" or (a.factory and not positional):
                return TransformVal(a.name, node, kwargs,
                                    tuple(arg.value for arg, _ in positional))
            target = positional[0][1] if positional else None
            if isinstance(target, FuncVal):
                return self._apply_api(a, target, node, kwargs, (), state)
            if isinstance(target, OneOf):  # `kernel = k1 if c else k2`: each may run
                for f in target.alts:
                    self._apply_api(a, f, node, kwargs, (), state)
                if a.result is api.Result.LAUNCHER:
                    return SpecialVal("launcher", target, node, a.name, dict(kwargs))
                return None
            return None
        if fam is F.ARRAY:
            self._array_function_args(node, qn, args)
            first = _first_positional(args)
            if a.result is api.Result.PASS_THROUGH:
                return first
            return ArrayVal(node) if isinstance(first, ArrayVal) else None
        return None

    def _call_nnx(self, node: cst.Call, a: "api.Api", args: list) -> Optional[Value]:
        """Flax NNX: which objects hold refs (docs/flax-nnx.md)."""
        R = api.Result
        kw = {arg.keyword.value: (arg, v) for arg, v in args if arg.keyword}
        pos = [(arg, v) for arg, v in args if not arg.keyword and not arg.star]
        first = pos[0][1] if pos else None

        def tree(kind="state", cls=None, explicit=False) -> RefVal:
            return RefVal(key=("new", id(node)), origin="created", node=node, scope=self._func,
                          tree=kind, cls=cls, kwargs={"ref": True} if explicit else {})

        def converted() -> RefVal:  # a copy of ``first`` whose Variables are refs
            cls = first.cls if isinstance(first, (RefVal, InstanceVal)) else None
            return tree("module" if cls is not None else "state", cls)

        if a.result is R.REF_SWITCH:
            # use_refs(True) / var_defaults(ref=True) (off unless a literal True); nothing
            # without a ref argument (`var_defaults(hijax=True)`, `var_defaults()`).
            given = kw["ref"][0].value if "ref" in kw else pos[0][0].value if pos and \
                a.name == "use_refs" else None
            if given is None:
                return None
            return SpecialVal("ref_switch", _bool_constant(given))
        if a.result is R.REF_TREE:
            return converted()
        if a.result is R.NNX_WITH_VARS:
            on = _bool_constant(kw["ref"][0].value) if "ref" in kw else None
            return converted() if on else None
        if a.result is R.NNX_SPLIT:
            if not (isinstance(first, RefVal) and first.tree) or \
                    any(arg.star for arg, _ in args):
                return None
            states = tuple(RefVal(key=("split", id(node), i), origin="created", node=node,
                                  scope=self._func, tree="state")
                           for i in range(max(1, len(pos) - 1)))
            return SeqVal((None,) + states)
        if a.result is R.NNX_MERGE:
            if any(isinstance(v, RefVal) and v.tree for _, v in pos[1:]):
                return tree("module")
            return None
        if a.result is R.NNX_OBJECT:
            on, explicit = self._refs_mode, False
            for k in a.ref_keywords:
                if k in kw:
                    on = explicit = _bool_constant(kw[k][0].value)
                    if on is None:
                        return None
                    if not on:
                        return NnxVal("variable", node, arrays=True)
            kind = "variable" if a.ref_keywords else "module"
            return tree(kind, explicit=explicit) if on else NnxVal(kind, node)
        return None

    def _note_refs_mode(self, info: FunctionInfo, on: bool) -> None:
        """A call of ``info`` made with NNX refs ``on`` (or off)."""
        modes = self._new_refs_mode
        before = modes.get(id(info))
        if id(info) in self._forced_refs_mode:
            now = True
        elif info.roles:
            # A traced function (jax.jit ...) is traced anew by a call with refs on: what that
            # trace does (REF001 ...) fails then, whatever its other calls do.
            now = bool(before) or on
        else:
            now = on and before is not False  # a plain helper: only if every call has refs on
        modes[id(info)] = now
        if now and before is None:
            self._interprocedural = True

    def _array_function_args(self, node: cst.Call, qn: str, args: list) -> None:
        """Refs given to an array function: each is a use as an Array (REF007)."""
        for arg, v in args:
            if isinstance(v, RefVal):
                self._ref_use("call_arg", arg.value, v, node, qn)
            elif isinstance(arg.value, (cst.List, cst.Tuple)):
                # jnp.stack([a_ref, b]): refs listed directly in a sequence argument.
                for el in arg.value.elements:
                    ev = self._values.get(id(el.value))
                    if isinstance(ev, RefVal) and not isinstance(el, cst.StarredElement):
                        self._ref_use("call_arg", el.value, ev, node, qn)

    def _call_partial(self, node: cst.Call, args: list) -> Optional[Value]:
        target = _first_positional(args)
        if isinstance(target, FuncVal):
            target = self._forwarded_api(target) or target
        kwargs = {arg.keyword.value: arg.value for arg, _ in args if arg.keyword}
        extra = tuple(v for arg, v in args[1:] if not arg.keyword and not arg.star)
        if isinstance(target, QN):
            t = api.lookup(target.qualname)
            if t is not None and (t.family is api.Family.TRANSFORM or t.factory or
                                  t.family is api.Family.KERNEL):
                return TransformVal(t.name, node, kwargs,
                                    tuple(arg.value for arg, _ in args[1:] if not arg.keyword))
            return None
        if isinstance(target, TransformVal):
            merged = dict(target.kwargs)
            merged.update(kwargs)
            return TransformVal(target.kind, node, merged, target.args)
        if isinstance(target, FuncVal):
            if any(arg.star for arg, _ in args[1:]):
                return None
            kw_values = tuple((arg.keyword.value, v) for arg, v in args[1:] if arg.keyword)
            return FuncVal(target.info, target.transforms, target.bound_args + extra,
                           target.bound_kwargs + tuple(kwargs), target.self_value,
                           target.bound_kw_values + kw_values)
        if isinstance(target, OneOf):
            alts = [self._call_partial(node, [(args[0][0], f)] + list(args[1:]))
                    for f in target.alts]
            if all(isinstance(f, FuncVal) for f in alts):
                return OneOf(tuple(alts))
        return None

    def _forwarded_api(self, fv: FuncVal) -> Optional[QN]:
        """A local function that only forwards its arguments to a JAX transform or Pallas entry
        point (``def pallas_call(self, *args, **kwargs): return pl.pallas_call(*args, **kwargs,
        interpret=True)``, as JAX's own tests do) stands for that API: its QN, else None."""
        if fv.transforms or fv.bound_args or fv.bound_kwargs:
            return None
        info = fv.info
        return self.cached(("forwards", id(info)), lambda: self._forwarding(info))

    def _applies_first(self, fv: FuncVal) -> bool:
        """``fv`` only calls its first parameter with the rest of its arguments
        (``def call(f, *args, **kw): return f(*args, **kw)``)."""
        if fv.transforms or fv.bound_args or fv.bound_kwargs or fv.self_value is not None:
            return False
        info = fv.info
        return self.cached(("applies", id(info)), lambda: self._applying(info))

    @staticmethod
    def _applying(info: FunctionInfo) -> bool:
        node = info.node
        if type(node) is not cst.FunctionDef or node.decorators or info.is_method:
            return False
        ps = info.params
        if len(ps) not in (2, 3) or ps[0].kind not in ("pos", "posonly") or \
                ps[1].kind != "vararg" or (len(ps) == 3 and ps[2].kind != "kwarg"):
            return False
        stmts = [st for st in getattr(node.body, "body", ())]
        if stmts and _is_docstring(stmts[0]):
            stmts = stmts[1:]
        if len(stmts) != 1 or type(stmts[0]) is not cst.SimpleStatementLine or \
                len(stmts[0].body) != 1 or type(stmts[0].body[0]) not in (cst.Return, cst.Expr):
            return False
        call = stmts[0].body[0].value
        if type(call) is not cst.Call or type(call.func) is not cst.Name or \
                call.func.value != ps[0].name:
            return False
        want = [("*", ps[1].name)] + ([("**", ps[2].name)] if len(ps) == 3 else [])
        got = [(a.star, a.value.value if type(a.value) is cst.Name else None)
               for a in call.args]
        return got == want

    def _forwarding(self, info: FunctionInfo) -> Optional[QN]:
        node = info.node
        if type(node) is not cst.FunctionDef or not all(
                type(d.decorator) is cst.Name and d.decorator.value in _METHOD_KINDS
                for d in node.decorators):
            return None
        vararg = next((p.name for p in info.params if p.kind == "vararg"), None)
        others = [p for p in info.params if p.kind not in ("vararg", "kwarg")]
        if vararg is None or len(others) > (1 if info.is_method else 0):
            return None
        stmts = [st for st in getattr(node.body, "body", ())]
        if stmts and _is_docstring(stmts[0]):
            stmts = stmts[1:]
        # The last statement returns the API's call on `*args`; statements before it may
        # adjust keyword arguments (JAX's ops_test sets `kwargs["compiler_params"]`), but not
        # rebind the positional ones.
        if not stmts or type(stmts[-1]) is not cst.SimpleStatementLine or \
                len(stmts[-1].body) != 1 or type(stmts[-1].body[0]) is not cst.Return or \
                any(_binds_name(st, vararg) for st in stmts[:-1]):
            return None
        call = stmts[-1].body[0].value
        if type(call) is not cst.Call:
            return None
        pos = [a for a in call.args if a.keyword is None and a.star != "**"]
        if not pos or pos[0].star != "*" or type(pos[0].value) is not cst.Name or \
                pos[0].value.value != vararg:
            return None
        target = self._lookup_static(call.func, info)
        if not isinstance(target, QN):
            return None
        a = api.lookup(target.qualname)
        if a is None or a.name not in api.DECORATOR_APIS:
            return None
        return target

    def _mark_kernel(self, kernel: FuncVal, node, callee: "api.Callee", kwargs=None) -> None:
        """``kernel`` is a Pallas kernel (or a run_state body): its parameters are refs, but
        for those bound with functools.partial and those the registry says are not (a
        pipeline body's indices and carry)."""
        info = kernel.info
        if callee.refs:
            bound = {p.name for p in info.params[:len(kernel.bound_args)]} | \
                set(kernel.bound_kwargs)
            # A parameter with a literal default (`scale=1.0`) is configuration the caller
            # leaves alone (a with_scoped body's), never a ref.
            bound |= {p.name for p in info.params if p.node.default is not None and
                      type(p.node.default) in _LITERALS}
            free = [p for p in info.params
                    if p.kind in ("pos", "posonly", "vararg") and p.name not in bound]
            bound |= {p.name for p in free[:callee.leading]}
            if free and any(k in (kwargs or {}) for k in callee.carry_if):
                bound.add(free[-1].name)
            # Arguments bound by functools.partial reach their parameters (a scratch ref
            # handed to a pipeline body: `partial(body, acc_ref)`).
            named = [p for p in info.params if p.kind in ("pos", "posonly")]
            for p, v in zip(named, kernel.bound_args):
                if is_interesting(v):
                    self._seed(info, p.name, v)
            for name, v in kernel.bound_kw_values:
                if is_interesting(v) and info.param(name) is not None:
                    self._seed(info, name, v)
            if self._pallas_kernels.get(id(info)) != bound:
                self._pallas_kernels[id(info)] = bound
                self._interprocedural = True
        self._add_role(info, callee.role, node)

    def _call_special(self, node, fv: SpecialVal, args, state) -> Optional[Value]:
        if fv.kind == "traced_constructor":
            self.traced_constructors.append(TracedConstructor(node, self._func, fv.api_name,
                                                              fv.target, fv.node))
            return None
        if fv.kind == "vjp_fn":  # the VJP function applied to cotangents
            self.vjp_applications.append(VjpApplication(node, fv.target, self._func))
            return None
        if fv.kind == "vjp_with_refs":  # vjp_fn.with_refs(*entries): a VJP function again
            plain = not any(arg.star or arg.keyword for arg, _ in args)
            self.with_refs_calls.append(WithRefs(node, fv.target, self._func,
                                                 list(args) if plain else None))
            entries = len(args) if plain else None
            return SpecialVal("vjp_bound", (fv.target, node, entries), node, fv.api_name)
        if fv.kind == "vjp_bound":
            vjp, with_refs, entries = fv.target
            self.vjp_applications.append(VjpApplication(node, vjp, self._func, with_refs,
                                                        entries))
            return None
        if fv.kind == "defvjp":
            primal: FuncVal = fv.target
            fns = [v for a, v in args if not a.keyword][:2]
            for a, v in args:
                if a.keyword and a.keyword.value in ("fwd", "bwd"):
                    fns.append(v)
            names = ("fwd", "bwd")
            rules = {}
            for role_name, v in zip(names, fns):
                if isinstance(v, FuncVal):
                    rules[role_name] = v.info
                    v.info.custom_vjp_primal = primal.info
                    self._add_role(v.info, api.Role(f"custom_vjp_{role_name}"), node)
            primal.info.custom_vjp = rules
            return None
        if fv.kind == "defjvp":
            rule = _first_positional(args)
            if isinstance(rule, FuncVal):
                self._add_role(rule.info, api.Role.CUSTOM_JVP_RULE, node)
            return None
        if fv.kind == "ref_view":  # x_ref.reshape(...), .bitcast(...), .transpose(...)
            attr = node.func.attr.value if isinstance(node.func, cst.Attribute) else "view"
            return as_view(fv.target, f".{attr}(...)")
        if fv.kind == "launcher":
            # Calling a kernel launcher (pallas_call(k), emit_pipeline(body), pl.kernel(body),
            # run_state(f)) with operands: the kernel runs on refs.
            kernel = fv.target
            kernels = kernel.alts if isinstance(kernel, OneOf) else (kernel,)
            targets = [k.info for k in kernels if isinstance(k, FuncVal)]
            if targets:
                self.traced_calls.append(TracedCall(
                    kind=fv.api_name, node=node, func=self._func, targets=targets,
                    transforms=(), operands=[(v, a.value) for a, v in args], bindings={}))
                n = None if any(a.star for a, _ in args) else \
                    sum(1 for a, _ in args if a.keyword is None)
                self.kernel_launches.append(KernelLaunch(targets, fv.api_name, node, n,
                                                         fv.kwargs or {}))
            return None
        return None

    def _call_jvp_like(self, node, a: "api.Api", target: FuncVal, args, state):
        """jvp(f, primals, tangents) / vjp(f, *primals) / linearize(f, *primals): the
        function is traced with the primals now."""
        rest = args[1:]
        wrapped = self._wrap(target, Transform(a.name, node, {}), node)
        if a.primals == "tuple":
            primals = rest[0][1] if rest else None
            values = list(primals.items) if isinstance(primals, SeqVal) else None
            exprs = None
            if values is not None and isinstance(rest[0][0].value, (cst.Tuple, cst.List)):
                exprs = [e.value for e in rest[0][0].value.elements]
            if values is not None:
                self._bind_call(node, wrapped, [(None, v, exprs[i] if exprs else None)
                                                for i, v in enumerate(values)], {}, "traced")
            return None
        positional = [(arg, v, arg.value) for arg, v in rest if not arg.keyword and not arg.star]
        self._bind_call(node, wrapped, positional, {}, "traced")
        if a.result is api.Result.VJP and not any(arg.star for arg, _ in rest):
            vjp = VjpCall(node, self._func, target.info, [(v, e) for _, v, e in positional])
            self.vjp_calls.append(vjp)
            fn = SpecialVal("vjp_fn", vjp, node, a.name)
            aux = next((arg.value for arg, _ in rest
                        if arg.keyword is not None and arg.keyword.value == "has_aux"), None)
            if aux is None or (isinstance(aux, cst.Name) and aux.value == "False"):
                return SeqVal((None, fn))
            if isinstance(aux, cst.Name) and aux.value == "True":
                return SeqVal((None, fn, None))  # (outputs, vjp function, aux)
            return None
        return None

    def _call_func(self, node: cst.Call, fv: FuncVal, args: list, state: _State):
        starred = [i for i, (a, _) in enumerate(args) if a.star == "*"]
        positional = [(a, v, a.value) for a, v in args if not a.star and a.keyword is None]
        if starred:
            last = max((i for i, (a, _) in enumerate(args) if not a.keyword and
                        a.star != "**"), default=-1)
            seq = args[starred[0]][1]
            if len(starred) == 1 and starred[0] == last and isinstance(seq, SeqVal):
                # `f(*args)` with `args` a tuple of known length (`def call(f, *args)`).
                a_star = args[starred[0]][0]
                positional += [(a_star, v, a_star.value) for v in seq.items]
            elif len(starred) == 1 and starred[0] == last and isinstance(seq, RefSeqVal) and \
                    seq.exact:
                # `f(a, *refs)`: the tuple of refs fills the parameters left (Pallas kernels
                # handing their `*refs` to a helper).
                a_star = args[starred[0]][0]
                n = sum(1 for p in fv.info.params if p.kind in ("pos", "posonly"))
                n -= len(positional) + len(fv.bound_args) + (fv.self_value is not None)
                positional += [(a_star, seq.item(i), None) for i in range(max(n, 0))]
            else:
                self._record_unbindable(node, fv, args)
                return self._result_of(fv)
        keywords = {a.keyword.value: (a, v, a.value) for a, v in args if a.keyword is not None}
        self._bind_call(node, fv, positional, keywords, "traced" if fv.transforms else "plain")
        return self._result_of(fv)

    def _record_unbindable(self, node, fv: FuncVal, args) -> None:
        if not fv.transforms:
            fv.info.callers.append((self._func, node))
            self.plain_calls.append(PlainCall(node, self._func, fv.info, {}))
        else:
            self.traced_calls.append(TracedCall(
                kind=fv.transforms[-1].kind, node=node, func=self._func, targets=[fv.info],
                transforms=fv.transforms, operands=[(v, a.value) for a, v in args],
                bindings={}))

    def _result_of(self, fv: FuncVal) -> Optional[Value]:
        """What calling ``fv`` returns: its function's return value, unless a transform makes
        something else of it (gradients, a batch)."""
        for t in fv.transforms:
            if api.API[t.kind].result is not api.Result.FUNCTION or \
                    t.kind in api.GRAD_TRANSFORMS or t.kind in api.MAP_TRANSFORMS:
                return None
        return fv.info.return_value

    def _bind_call(self, node, fv: FuncVal, positional, keywords, mode: str) -> dict:
        """Bind call arguments to ``fv``'s parameters; seed the parameters that get refs.

        ``mode``: 'traced' records a TracedCall, 'plain' a PlainCall, 'none' nothing."""
        info = fv.info
        params = list(info.params)
        if fv.self_value is not None and params and params[0].kind in ("pos", "posonly"):
            params = params[1:]
        # functools.partial: bound positionals consume the first parameters.
        bound_pos = list(fv.bound_args)
        pos_params = [p for p in params if p.kind in ("pos", "posonly")]
        vararg = next((p for p in params if p.kind == "vararg"), None)
        bindings: dict[str, Binding] = {}
        ordered = [(None, v, None) for v in bound_pos] + list(positional)
        for i, (a, v, e) in enumerate(ordered):
            if i < len(pos_params):
                bindings[pos_params[i].name] = Binding(pos_params[i].name, v, e,
                                                       partial=i < len(bound_pos))
            elif vararg is not None:
                bindings.setdefault(f"*{vararg.name}", Binding(None, None, None))
                bindings[f"*{vararg.name}[{i - len(pos_params)}]"] = Binding(None, v, e)
        for name, v in fv.bound_kw_values:
            if name not in keywords and info.param(name) is not None:
                bindings[name] = Binding(name, v, None, partial=True)
        for name, (a, v, e) in keywords.items():
            if info.param(name) is not None:
                bindings[name] = Binding(name, v, e)
            else:
                bindings[f"**{name}"] = Binding(None, v, e)
        for p in params:
            if p.name not in bindings and p.name in info.defaults and \
                    p.name not in fv.bound_kwargs:
                bindings[p.name] = Binding(p.name, info.defaults[p.name], None)
        # Seeds for the callee: parameters that receive refs.
        for name, b in bindings.items():
            if b.param is not None and is_interesting(b.value):
                self._seed(info, name, b.value)
        if vararg is not None and len(ordered) > len(pos_params):
            # `def call(f, *args)`: the extra positional arguments, a tuple of known length.
            extra = SeqVal(tuple(v for _, v, _ in ordered[len(pos_params):]))
            if is_interesting(extra):
                self._seed(info, vararg.name, extra)
        self._note_refs_mode(info, self._refs_mode)
        info.callers.append((self._func, node))
        if info.parent is self._func and self._cur_state is not None:
            info.call_envs.append(dict(self._cur_state.env))
        operands = [(b.value, b.expr) for b in bindings.values() if b.expr is not None]
        if mode == "traced":
            self.traced_calls.append(TracedCall(
                kind=fv.transforms[-1].kind, node=node, func=self._func, targets=[info],
                transforms=fv.transforms, operands=operands, bindings={id(info): bindings}))
        elif mode == "plain":
            self.plain_calls.append(PlainCall(node, self._func, info, bindings))
        return bindings

    def _seed(self, info: FunctionInfo, name: str, value: Value) -> None:
        self._interprocedural = True
        d = self._new_seeds.setdefault(id(info), {})
        d[name] = join(d[name], value) if name in d else value

    def _note_return(self, info: FunctionInfo, value: Optional[Value]) -> None:
        if is_interesting(value):
            self._interprocedural = True
            cur = self._new_returns.get(id(info), "missing")
            self._new_returns[id(info)] = value if cur == "missing" else join(cur, value)
        elif id(info) in self._new_returns:
            self._new_returns[id(info)] = None

    def _call_control_flow(self, node, a: "api.Api", args, state) -> Optional[Value]:
        """A control-flow call (scan, cond, while_loop ...): each function argument is called
        now, with the operands its Callee entry says it receives."""
        pos = [(arg, v) for arg, v in args if not arg.keyword and not arg.star]
        kw = {arg.keyword.value: (arg, v) for arg, v in args if arg.keyword}

        def given(s: "api.Src") -> list:
            """[(value, expr)] of the arguments ``s`` names (none when it is absent)."""
            if s.rest:
                return [(v, arg.value) for arg, v in pos[s.pos:]]
            got = pos[s.pos] if s.pos is not None and s.pos < len(pos) else kw.get(s.kw)
            return [(got[1], got[0].value)] if got is not None else []

        for s in a.array_args:  # a predicate, an index, loop bounds: Arrays
            for v, e in given(s):
                if isinstance(v, RefVal):
                    self._ref_use("call_arg", e, v, node, a.call_word or a.name)
        calls: list = []  # (FuncVal, [(value, expr)], role)
        for c in a.callees:
            got = pos[c.pos] if c.pos is not None and c.pos < len(pos) else kw.get(c.kw)
            if got is None:
                continue
            if c.sequence:
                fns = got[1].items if isinstance(got[1], SeqVal) else ()
            else:
                fns = (got[1],)
            values: list = []
            for s in c.receives:
                if s is None:
                    values.append((None, None))
                    continue
                found = given(s)
                if s.sliced:
                    found = [(_slice_of(v), e) for v, e in found]
                values.extend(found if (found or s.rest) else [(None, None)])
            for f in fns:
                for g in (f.alts if isinstance(f, OneOf) else (f,)):
                    if isinstance(g, FuncVal):
                        calls.append((g, values, c.role))
        operands = [item for s in a.operands for item in given(s)]
        targets = []
        all_bindings = {}
        for fv, values, role in calls:
            self._add_role(fv.info, role, node)
            positional = [(None, v, e) for v, e in values]
            b = self._bind_call(node, FuncVal(fv.info, (), fv.bound_args, fv.bound_kwargs,
                                              None, fv.bound_kw_values),
                                positional, {}, "none")
            targets.append(fv.info)
            all_bindings[id(fv.info)] = b
        if calls or operands:
            self.traced_calls.append(TracedCall(kind=a.name, node=node, func=self._func,
                                                targets=targets, transforms=(),
                                                operands=operands, bindings=all_bindings))
        if a.result is api.Result.PAIR:
            return SeqVal((None, None))
        return None

    # -- events ------------------------------------------------------------------------------

    def _ref_use(self, kind, expr, ref: RefVal, context, detail: str) -> None:
        self.ref_uses.append(RefUse(kind, expr, ref, context, detail, self._func))

    def _record_access(self, kind, node, ref_expr, ref: RefVal, value_expr, state) -> None:
        self.accesses.append(RefAccess(kind, node, ref_expr, ref, value_expr, self._func))

    # -- dependence on differentiated inputs (REF008) ----------------------------------------

    def dependence(self, roots: dict) -> list:
        """The writes of values that depend on differentiated inputs into refs JAX does not
        differentiate (:class:`DependentWrite`).

        ``roots``: ``id(info) -> (param names, transform, transform node)`` for every function
        a grad-like transform differentiates (``taint.differentiated_params``). The evaluator
        runs each root again with a ``deps`` component in its flow state (``_State.deps``:
        name -> the root's inputs it depends on) and a dependence per expression
        (``_dep_expr``, next to its value), and enters the local functions the root calls with
        their parameters' dependence, so each helper is evaluated in the context of each call
        (memoized per root, ``MAX_DEPENDENCE_DEPTH`` deep). These evaluations record no fact:
        the module's facts are kept aside and restored (``_replaying``)."""
        if not roots:
            return []
        dep = _Dependence(self, roots)
        with self._replaying(dep):
            for info in self.all_functions():
                got = roots.get(id(info))
                if got is None:
                    continue
                params, kind, node = got
                dep.start(info, kind, node)
                deps, param_refs = {}, {}
                for p in info.params:
                    if p.name in params:
                        deps[p.name] = frozenset({p.name})
                        param_refs[p.name] = ("diff", None)
                    else:
                        param_refs[p.name] = ("external", ("rootarg", p.name))
                self._dep_run(info, deps, param_refs)
        return dep.writes

    @contextlib.contextmanager
    def _replaying(self, dep: "_Dependence"):
        """Evaluate with ``dep`` tracking the dependence, then restore every fact: the lists,
        tables and per-function records the evaluation appends to or updates."""
        def fresh(v):
            t = type(v)
            if t is list:
                return list(v)
            if t is set:
                return set(v)
            if t is dict:
                return {k: (x.copy() if type(x) in (dict, list, set) else x)
                        for k, x in v.items()}
            return v

        saved = dict(self.__dict__)
        records = [(o, dict(o.__dict__)) for o in (self.module_info, *self.functions.values(),
                                                   *self.classes.values())]
        for k, v in saved.items():
            # The values (the largest table) hold no container the evaluation updates in place.
            self.__dict__[k] = dict(v) if k == "_values" else fresh(v)
        for o, d in records:
            for k, v in d.items():
                if type(v) in (dict, list, set):
                    o.__dict__[k] = v.copy()
        self._dep = dep
        self._eval = self._eval_dep  # the same evaluation, with the dependence of each value
        try:
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)
            for o, d in records:
                o.__dict__.clear()
                o.__dict__.update(d)

    _dep: Optional["_Dependence"] = None

    def _eval_dep(self, node, state: _State) -> Optional[Value]:
        value = self._eval_inner(node, state)
        if value is not None:
            self._values[id(node)] = value
        if state.deps is not None:
            self._dep.last[id(node)] = self._dep_expr(node, state)
        return value

    def _dep_of(self, expr) -> frozenset:
        """The dependence of an expression just evaluated."""
        return self._dep.last.get(id(expr), EMPTY)

    def _dep_quiet(self, expr, state: _State) -> frozenset:
        """The dependence of an expression evaluated before (a call argument), else of
        evaluating it now without reporting writes (an argument bound by a partial)."""
        last = self._dep.last
        if id(expr) in last:
            return last[id(expr)]
        dep = self._dep
        saved, dep.quiet = dep.quiet, True
        try:
            self._eval(expr, state)
        finally:
            dep.quiet = saved
        return last.get(id(expr), EMPTY)

    def _dep_run(self, info: FunctionInfo, deps: dict, param_refs: dict) -> frozenset:
        """Evaluate ``info`` with its parameters depending on ``deps``; the dependence of what
        it returns."""
        dep = self._dep
        frame = _DepFrame(info, param_refs)
        dep.scopes.add(id(info))
        ever = dep.ever.setdefault(id(info), {})
        for k, v in deps.items():
            ever[k] = ever.get(k, EMPTY) | v
        dep.stack.append(frame)
        saved = (self._func, self._cur_state, self._refs_mode, self._current_class,
                 self._class_parent)
        self._current_class = self._class_parent = None
        try:
            self._eval_function(info, dict(deps))
        finally:
            self._func, self._cur_state, self._refs_mode, self._current_class, \
                self._class_parent = saved
            dep.stack.pop()
        return frame.returns

    def _dep_enter(self, info: FunctionInfo, bindings: dict, state: _State,
                   extra=EMPTY) -> frozenset:
        """A local function called (plainly, through a transform or control flow) with
        dependent arguments: evaluated in that context (once per distinct context)."""
        dep = self._dep
        if len(dep.stack) >= MAX_DEPENDENCE_DEPTH:
            dep.hit_limit = True
            return EMPTY
        if any(f.info is info for f in dep.stack):
            return EMPTY
        deps: dict = {}
        param_refs: dict = {}
        for pname, b in bindings.items():
            if b.param is None:
                continue
            d = self._dep_quiet(b.expr, state) if b.expr is not None else EMPTY
            if d:
                deps[pname] = d
            statuses = {dep.status(r)[0] for r, _ in iter_refs(b.value)}
            if statuses:
                if len(statuses) == 1:
                    status = statuses.pop()
                    base = dep.status(b.value)[1] if isinstance(b.value, RefVal) else None
                    param_refs[pname] = (status, base)
                else:
                    param_refs[pname] = (None, None)
        for p in info.params:
            if p.name in extra and p.name not in deps:
                deps[p.name] = frozenset({p.name})
        key = (id(info), tuple(sorted(deps.items())),
               tuple(sorted((k, v[0], repr(v[1])) for k, v in param_refs.items())))
        if key in dep.memo:
            return dep.memo[key]
        dep.memo[key] = EMPTY
        out = self._dep_run(info, deps, param_refs)
        dep.memo[key] = out
        return out

    def _dep_set(self, state: _State, name: str, deps: frozenset) -> None:
        if deps:
            state.deps[name] = deps
            ever = self._dep.ever.setdefault(id(self._func), {})
            ever[name] = ever.get(name, EMPTY) | deps
        else:
            state.deps.pop(name, None)

    def _dep_bind(self, target, deps: frozenset, state: _State, stmt, value=None) -> None:
        """Bind the dependence of an assigned value (``value``: its expression, when a tuple
        display assigned element by element); a subscript target writes."""
        t = type(target)
        if t is cst.Name:
            self._dep_set(state, target.value, deps)
        elif t in (cst.Tuple, cst.List):
            els = target.elements
            if isinstance(value, (cst.Tuple, cst.List)) and \
                    len(value.elements) == len(els) and \
                    not any(isinstance(e, cst.StarredElement) for e in value.elements + els):
                for e, v in zip(els, value.elements):
                    self._dep_bind(e.value, self._dep_quiet(v.value, state), state, None)
            else:
                for e in els:
                    self._dep_bind(e.value, deps, state, None)
        elif t is cst.StarredElement:
            self._dep_bind(target.value, deps, state, None)
        elif t is cst.Subscript:
            self._dep_subscript(target, deps, state, stmt)

    def _dep_subscript(self, target: cst.Subscript, deps: frozenset, state: _State,
                       stmt) -> None:
        """``x[i] = v``: a write into a ref, or ``x`` (an array or a container) gets ``v``'s
        dependence."""
        dep = self._dep
        if stmt is not None:
            for acc in dep.writes_by_node.get(id(stmt), ()):
                if acc.ref_expr is target.value and acc.is_write:
                    dep.write(acc, deps)
                    return
        if isinstance(target.value, cst.Name) and deps:
            name = target.value.value
            self._dep_set(state, name, state.deps.get(name, EMPTY) | deps)

    def _dep_name(self, name: str, state: _State) -> frozenset:
        got = state.deps.get(name)
        if got is not None:
            return got
        info = self._func
        if name in info.summary:  # a local not (yet) dependent
            return EMPTY
        scope = info.parent
        while scope is not None and not scope.is_module:
            if name in scope.summary:  # every value the enclosing function gave the name
                return self._dep.ever.get(id(scope), {}).get(name, EMPTY)
            scope = scope.parent
        return EMPTY

    def _dep_expr(self, node, state: _State) -> frozenset:
        """The inputs an expression just evaluated depends on, from its parts'."""
        t = type(node)
        last = self._dep.last
        if t is cst.Name:
            return self._dep_name(node.value, state)
        if t is cst.Attribute:
            return EMPTY if node.attr.value in _METADATA_ATTRIBUTES else \
                last.get(id(node.value), EMPTY)
        if t is cst.Subscript:
            ref = self._values.get(id(node.value))
            if isinstance(ref, RefVal):
                return self._dep.read(ref)
            return last.get(id(node.value), EMPTY)
        if t is cst.Call:
            return self._dep_call(node, state)
        if t is cst.BinaryOperation or t is cst.BooleanOperation:
            return last.get(id(node.left), EMPTY) | last.get(id(node.right), EMPTY)
        if t is cst.UnaryOperation:
            return EMPTY if isinstance(node.operator, cst.Not) else \
                last.get(id(node.expression), EMPTY)
        if t is cst.IfExp:
            return last.get(id(node.body), EMPTY) | last.get(id(node.orelse), EMPTY)
        if t in (cst.Tuple, cst.List, cst.Set, cst.Dict):
            out = EMPTY
            for e in node.elements:
                out |= last.get(id(e.value), EMPTY)
            return out
        if t is cst.NamedExpr or t is cst.StarredElement:
            return last.get(id(node.value), EMPTY)
        if t is cst.DictComp:
            return last.get(id(node.value), EMPTY)
        if t in (cst.ListComp, cst.SetComp, cst.GeneratorExp):
            return last.get(id(node.elt), EMPTY)
        if t is cst.Await:
            return last.get(id(node.expression), EMPTY)
        return EMPTY  # comparisons, constants, strings, lambdas

    def _dep_call(self, node: cst.Call, state: _State) -> frozenset:
        dep = self._dep
        last = dep.last
        arg_deps = [last.get(id(a.value), EMPTY) for a in node.args]
        fv = self._values.get(id(node.func))
        if isinstance(fv, QN):
            qn = fv.qualname
            kind = api.canonical(qn)
            fam = api.API[kind].family if kind is not None else None
            pos = [i for i, a in enumerate(node.args) if a.keyword is None and not a.star]
            if kind == api.STOP_GRADIENT:
                return EMPTY
            if kind in api.REF_CONSTRUCTORS:
                if pos and arg_deps[pos[0]]:
                    dep.tainted_refs[("new", id(node))] = arg_deps[pos[0]]
                return EMPTY
            if fam in (api.Family.FREEZE, api.Family.REF_READ):
                return dep.read(self._values.get(id(node.args[pos[0]].value))) if pos else EMPTY
            if kind in api.REF_WRITERS:
                for acc in dep.writes_by_node.get(id(node), ()):
                    if acc.value_expr is not None:
                        value_deps = EMPTY
                        for a, d in zip(node.args, arg_deps):
                            if a.value is acc.value_expr:
                                value_deps = d
                        dep.write(acc, value_deps)
                if kind == api.REF_SWAP and pos:
                    return dep.read(self._values.get(id(node.args[pos[0]].value)))
                return EMPTY
            short = qn.rsplit(".", 1)[-1]
            if qn.startswith("builtins.") and short in _NO_TANGENT_BUILTINS:
                return EMPTY
            if short in api.NO_TANGENT_FUNCTIONS and qn.startswith(("jax.", "numpy.")):
                if short == "full" or short.endswith("_like"):
                    # full(shape, fill) / full_like(x, fill): the fill value carries tangents
                    out = EMPTY
                    for i, a in enumerate(node.args):
                        if (a.keyword is not None and a.keyword.value == "fill_value") or \
                                (a.keyword is None and i == 1):
                            out |= arg_deps[i]
                    return out
                return EMPTY
        result = last.get(id(node.func), EMPTY)
        for d in arg_deps:
            result |= d
        for info, bindings in dep.calls.get(id(node), ()):
            result |= self._dep_enter(info, bindings, state)
        for info, bindings, call in dep.traced.get(id(node), ()):
            extra = EMPTY
            if any(t.kind in api.GRAD_TRANSFORMS for t in call.transforms):
                got = dep.roots.get(id(info))
                if got is not None:
                    extra = got[0]
            result |= self._dep_enter(info, bindings, state, extra)
        return result
        # A use after freeze is reported on the Name by _eval; writes through statements whose
        # base expression was already evaluated are covered the same way.


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


_FIELDS: dict = {}
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def walk_nodes(roots, into=None):
    """Every node of the trees ``roots``, depth first in field order (fast field reads, see
    child_nodes); the children of a node for which ``into(node)`` is false are not visited."""
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        yield node
        if into is None or into(node):
            stack.extend(reversed(child_nodes(node)))


def _in_own_scope(node) -> bool:
    """Whether a walk of a scope's statements goes into ``node``: not into nested functions,
    classes or lambdas."""
    return type(node) not in _SCOPES


def _target_names(t):
    """The names an assignment target binds (``a``, ``a, (b, *c)``)."""
    if isinstance(t, cst.Name):
        yield t.value
    elif isinstance(t, (cst.Tuple, cst.List)):
        for e in t.elements:
            yield from _target_names(e.value)
    elif isinstance(t, cst.StarredElement):
        yield from _target_names(t.value)


def child_nodes(node) -> list:
    """The child nodes of ``node`` (the nodes of ``node.children``, in field order rather than
    source order). ``children`` runs libcst's visitor machinery for every call; reading the
    dataclass fields is about ten times faster, which matters on a whole-module walk."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    out = []
    is_node = _IS_NODE
    for name in fields:
        value = getattr(node, name)
        t = type(value)
        flag = is_node.get(t)
        if flag is None:
            flag = is_node[t] = isinstance(value, cst.CSTNode)
        if flag:
            out.append(value)
        elif t is list or t is tuple:
            for v in value:
                flag = is_node.get(type(v))
                if flag is None:
                    flag = is_node[type(v)] = isinstance(v, cst.CSTNode)
                if flag:
                    out.append(v)
    return out


# type -> whether it is a libcst node: ``isinstance(x, cst.CSTNode)`` goes through ABCMeta's
# __instancecheck__ (CSTNode is an ABC), several times slower than a dict lookup.
_IS_NODE: dict = {list: False, tuple: False, str: False, type(None): False}


def _positions_of(module: cst.Module):
    """PositionProvider's ranges for every node of ``module``: one code generation pass.

    (``MetadataWrapper.resolve`` gives the same mapping but also walks the whole tree once more,
    with an empty batch of visitors: about 40 % of the cost.)"""
    try:
        provider = cst.metadata.PositionProvider()
        provider._gen_impl(module)
        return provider._computed
    except AttributeError:  # pragma: no cover - libcst internals changed
        wrapper = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
        return wrapper.resolve(cst.metadata.PositionProvider)


def slice_exprs(node: cst.Subscript):
    """The expressions inside a subscript's index (``i``, ``a:b:c``, ``i, j``)."""
    for el in node.slice:
        s = el.slice
        if isinstance(s, cst.Index):
            yield s.value
        else:
            for part in (s.lower, s.upper, s.step):
                if part is not None:
                    yield part


def _body(block) -> list:
    return list(block.body) if hasattr(block, "body") else []


def _params_of(params: cst.Parameters) -> list:
    out = []
    for p in params.posonly_params:
        out.append(Param(p.name.value, p, "posonly"))
    for p in params.params:
        out.append(Param(p.name.value, p, "pos"))
    if isinstance(params.star_arg, cst.Param):
        out.append(Param(params.star_arg.name.value, params.star_arg, "vararg"))
    for p in params.kwonly_params:
        out.append(Param(p.name.value, p, "kwonly"))
    if params.star_kwarg is not None:
        out.append(Param(params.star_kwarg.name.value, params.star_kwarg, "kwarg"))
    return out


def dotted_name(node) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _as_name(asname: cst.AsName) -> Optional[str]:
    return asname.name.value if isinstance(asname.name, cst.Name) else None


_COMPREHENSION_KINDS = {cst.ListComp: "list", cst.SetComp: "set", cst.GeneratorExp: "generator",
                        cst.DictComp: "dict"}
_CALLABLES = (FuncVal, OneOf, QN, TransformVal)


def _tag_via(result, target, expr, alt, module) -> Optional[Value]:
    """``result`` of applying ``alt``, one of a Choice read at ``expr``, to ``target``: when it
    is ``target`` with one more transform, that transform is marked as applied through the
    Choice (`via`)."""
    if isinstance(result, FuncVal) and isinstance(target, FuncVal) and \
            len(result.transforms) == len(target.transforms) + 1 and \
            not result.transforms[-1].via:
        text = module.code_for_node(expr).strip()
        if isinstance(alt, QN):
            what = alt.qualname
        elif isinstance(alt, TransformVal):
            role = api.API[alt.kind].role
            what = (role is not None and api.role_info(role).spelled) or alt.kind
        elif isinstance(alt, FuncVal):
            what = alt.info.name
        else:
            what = ""
        if what and len(text) <= 40 and "\n" not in text:
            result.transforms[-1].via = f"when `{text}` is {what}"
    return result


def _choice(container) -> Optional[Value]:
    """``container[key]`` with a key reflint does not know, for a container of callables
    (``{"jit": jax.jit, "vmap": jax.vmap}[transform]``): one of them. Unknown items are left
    out; None when no item is a callable reflint knows, or when one is something else."""
    items = container.items.items() if isinstance(container, DictVal) else \
        enumerate(container.items)
    items = list(items)
    if items and all(isinstance(v, RefVal) for _, v in items):
        # `refs[i]` of a list of refs: a ref, one of them.
        return _element_of(SeqVal(tuple(v for _, v in items)))
    alts = []
    for k, v in items:
        if v is None:
            continue
        if not isinstance(v, _CALLABLES):
            return None
        alts.append((k, v))
    if not alts or len(alts) > MAX_ALTERNATIVES:
        return None
    funcs = [v for _, v in alts if isinstance(v, (FuncVal, OneOf))]
    if funcs and all(isinstance(v, (FuncVal, OneOf)) or
                     (isinstance(v, QN) and api.lookup(v.qualname) is None) for _, v in alts):
        # Local functions and builtins (`{"f": f, "other": print}[key]`): the functions; a
        # builtin called or transformed gives the analysis nothing.
        return _one_of(funcs)
    return Choice(tuple(alts))


def _one_of(values) -> Optional[Value]:
    """The join of the values of several alternatives (a OneOf of functions)."""
    out: Optional[Value] = None
    first = True
    for v in values:
        out, first = (v if first else join(out, v)), False
    return out


def _first_positional(args) -> Optional[Value]:
    for a, v in args:
        if not a.keyword and not a.star:
            return v
    return None


def _first_positional_arg(args):
    for a, v in args:
        if not a.keyword and not a.star:
            return a, v
    return None


def _element_of(value: Optional[Value]) -> Optional[Value]:
    """The loop variable's value when iterating over ``value``."""
    if isinstance(value, RefSeqVal):
        return value.item(None)
    if isinstance(value, RefPoolVal) and value.kind != "dict":
        return value.item(None)
    if isinstance(value, FuncPoolVal) and value.kind != "dict":
        return value.elt
    if isinstance(value, SeqVal) and value.items:
        first = value.items[0]
        out = first
        for item in value.items[1:]:
            out = join(out, item)
        if isinstance(out, RefVal) and out is not first:
            out.unique = False
        return out
    return None


_METHOD_KINDS = frozenset({"classmethod", "staticmethod"})
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
             cst.UnaryOperation)


def _binds_name(stmt, name: str) -> bool:
    """``stmt`` (or a statement nested in it, not in a nested scope) binds ``name``."""
    for n in walk_nodes([stmt], into=_in_own_scope):
        t = type(n)
        if t is cst.AssignTarget:
            target = n.target
        elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
            target = n.target
        elif t is cst.AsName:
            target = n.name
        else:
            continue
        if name in _target_names(target):
            return True
    return False


def _is_docstring(stmt) -> bool:
    return type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and \
        type(stmt.body[0]) is cst.Expr and \
        isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _count_scratch(expr, kw: str) -> Optional[int]:
    """How many scratch buffers a launcher keyword gives: ``scratch_shapes=[a, b]`` -> 2,
    absent -> 0, a grid spec call -> its own ``scratch_shapes`` (0 without one); None when
    unknown."""
    if expr is None:
        return 0
    if isinstance(expr, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return None
        return len(expr.elements)
    if isinstance(expr, cst.Call) and kw != "scratch_shapes":
        for a in expr.args:
            if a.keyword is not None and a.keyword.value == "scratch_shapes":
                return _count_scratch(a.value, "scratch_shapes")
        if any(a.star or a.keyword is None for a in expr.args):
            return None  # scratch_shapes may be given by position
        return 0
    return None


def _is_pallas_param(ref: RefVal) -> bool:
    """A parameter of a Pallas kernel itself (not an element of one): a Ref or a pytree of
    refs, the analysis cannot tell."""
    return ref.origin == "pallas" and len(ref.key) == 3 and ref.key[0] == "param"


def _unpacked_refs(value, n: int) -> Optional[RefSeqVal]:
    """Unpacking ``value`` into names: the tuple of refs it is, when it is one (a ``*refs``
    parameter, a Pallas kernel parameter or an element of one: a Ref itself is not unpacked)."""
    if isinstance(value, RefSeqVal):
        return value
    if isinstance(value, RefVal) and _is_pallas_param(value):
        return RefSeqVal(value)
    if isinstance(value, SpecialVal) and value.kind == "pallas_item":
        base, node = value.target, value.node
        k = _const_index(node)
        return RefSeqVal(RefVal(key=base.key + (f"[{k}]",), origin="pallas", node=base.node,
                                scope=base.scope, name=f"{base.name}[{k}]"))
    return None


def _seq_item(seq: RefSeqVal, node: cst.Subscript) -> Optional[Value]:
    """``refs[i]`` (a ref) or ``refs[a:]`` (a tuple of refs) of a tuple of refs."""
    if len(node.slice) != 1:
        return None
    s = node.slice[0].slice
    if isinstance(s, cst.Index):
        k = _const_key(s.value)
        return seq.item(k if isinstance(k, int) else None)
    if s.step is not None or s.upper is not None:
        return RefSeqVal(seq.base, seq.offset, False)
    k = _const_key(s.lower) if s.lower is not None else 0
    return seq.rest(k if isinstance(k, int) else None)


def _slice_of(value: Optional[Value]) -> Optional[Value]:
    """What a scan/map body receives for ``xs``: slices of refs are refs (views)."""
    if isinstance(value, RefVal):
        return RefVal(key=("slice", value.key), origin="slice", node=value.node,
                      scope=value.scope, name=value.name, unique=False, tree=value.tree,
                      cls=value.cls)
    if isinstance(value, SeqVal):
        return SeqVal(tuple(_slice_of(v) for v in value.items), value.kind)
    if isinstance(value, DictVal):
        return DictVal({k: _slice_of(v) for k, v in value.items.items()})
    return None


def _bool_constant(expr) -> Optional[bool]:
    """True / False for the literal ``True`` / ``False``, else None."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _const_index(node: cst.Subscript):
    if len(node.slice) != 1:
        return None
    s = node.slice[0].slice
    if not isinstance(s, cst.Index):
        return None
    return _const_key(s.value)


def _const_key(expr):
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value, 0)
        except ValueError:
            return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and \
            isinstance(expr.expression, cst.Integer):
        k = _const_key(expr.expression)
        return -k if k is not None else None
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:
            return None
    return None


_OP_TEXT = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
    cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@", cst.LeftShift: "<<",
    cst.RightShift: ">>", cst.BitAnd: "&", cst.BitOr: "|", cst.BitXor: "^",
    cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=",
    cst.DivideAssign: "/=", cst.FloorDivideAssign: "//=", cst.ModuloAssign: "%=",
    cst.PowerAssign: "**=", cst.MatrixMultiplyAssign: "@=", cst.LeftShiftAssign: "<<=",
    cst.RightShiftAssign: ">>=", cst.BitAndAssign: "&=", cst.BitOrAssign: "|=",
    cst.BitXorAssign: "^=", cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~",
    cst.Equal: "==", cst.NotEqual: "!=", cst.LessThan: "<", cst.LessThanEqual: "<=",
    cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
}


def _op_text(op) -> str:
    return _OP_TEXT.get(type(op), type(op).__name__)
