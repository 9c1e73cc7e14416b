"""``ModuleAnalysis``: the facade over the evaluator's parts, and the fixpoint driver."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from ..values import (
    QN,
    ArrayVal,
    CaseVal,
    ClassVal,
    DictVal,
    InstanceVal,
    ObjVal,
    RefPoolVal,
    RefSeqVal,
    RefVal,
    SeqVal,
    Value,
    signature,
)
from .arrayness import ArraynessMixin
from .calls import CallsMixin
from .constants import (
    MAX_ROUNDS,
)
from .dependence import DependenceMixin
from .dtypes import DtypesMixin
from .expressions import ExpressionsMixin
from .facts import (
    ClassInfo,
    Facts,
    FunctionInfo,
    Param,
    ReturnFact,
)
from .kernels import KernelsMixin
from .objects import ObjectsMixin
from .project import ProjectMixin
from .queries import QueriesMixin
from .state import (
    _State,
)
from .statements import StatementsMixin
from .syntax import (
    _params_of,
)


class ModuleAnalysis(ProjectMixin, QueriesMixin, StatementsMixin, ExpressionsMixin, CallsMixin,
                     KernelsMixin, DependenceMixin, ObjectsMixin, DtypesMixin,
                     ArraynessMixin):
    """Analysis of one module. Build with ``ModuleAnalysis(module)``; rules read the facts."""

    def __init__(self, module: cst.Module, path: str = "<string>", settings=None,
                 source: Optional[str] = None, gate_verdict=None, positions=None,
                 project=None):
        if not isinstance(module, cst.CSTNode):  # libcst's own tree (an API caller's)
            from ..cstbridge import to_nodes

            module = to_nodes(module)
        self.module = module
        # What the other modules of the project say (reflint.project.ProjectView; None: this
        # module alone) and, per function, where a fact it gave comes from (messages).
        self.project = project
        self._provenance: dict = {}
        self._project_names: dict = {}  # qualified name -> reflint.project.Values or None
        self._project_inert: set = set()  # qualified names the project says nothing of
        self.path = path
        if settings is None:
            from ..settings import Settings

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
        # The nodes' positions: ``get(node)`` gives a libcst CodeRange (reflint.positions, the
        # fast tree's ast positions); None: libcst's provider over the module, when first asked.
        self._positions = positions
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

    # -- driver ------------------------------------------------------------------------------

    def _run(self) -> None:
        prev_sig = None
        for n in range(MAX_ROUNDS):
            self._reset_round()
            self._eval_function(self.module_info)
            # The first round evaluates the module's functions that a kernel entry point is
            # called with after the others: their launches (in a wrapper defined after them)
            # then make their parameters refs before they are read, and the round can be the
            # last (below). A scheduling guess from the text: a wrong one costs a round.
            defer = n == 0 and EARLY_STOP
            later: list = []
            while self._queue or later:
                if not self._queue:
                    self._queue, later, defer = later, [], False
                info = self._queue.pop(0)
                if defer and info.parent is self.module_info and \
                        info.name in self._launched_names() and \
                        id(info) not in self._pallas_kernels:
                    later.append(info)
                    continue
                self._eval_function(info)
            self.rounds = n + 1
            sig = self._round_signature()
            if sig == prev_sig or not self._interprocedural:
                break
            if n == 0 and sig == NOTHING_LEARNT and not self._stale and EARLY_STOP:
                # The first round learnt no value for the next to start from (only Pallas
                # kernels' parameters, which it had when it read them): the next round
                # would read what this one read, and find what it found.
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

    def _launched_names(self) -> frozenset:
        """Names the source passes first to a Pallas entry point (``pl.pallas_call(kernel,
        ...``, ``functools.partial(kernel, ...)`` inside one)."""
        def build() -> frozenset:
            source = self.source or ""
            return frozenset(m.group(1) for m in _launch_pattern().finditer(source)
                             if not api.word_char(source[m.start() - 1:m.start()]))
        return self.cached("launched names", build)

    def _reset_round(self) -> None:
        # The last round's plain calls: an object's fields read the calls its __init__ makes
        # (`super().__init__(r)`), which this round evaluates after the object is made.
        self._last_plain_calls = getattr(self, "plain_calls", [])
        self._values: dict[int, Value] = {}
        self._queue: list[FunctionInfo] = []
        self._queued: set = set()
        self._interprocedural = False
        self.facts = Facts()  # what the rules read
        self._sink = self.facts  # where the evaluator records (DiscardFacts while replaying)
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
        # What makes a round's reads differ from the next one's although the signature is the
        # same (_run): the functions whose def ran, and those evaluated, this round; whether
        # something read this round (a Pallas kernel's parameters, a def's values, the last
        # round's calls, the builtins' names) changed or was missing then.
        self._defined: set = set()
        self._evaluated: set = set()
        self._stale = False
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
        self._evaluated.add(id(info))
        if id(info) not in self._defined and type(info.node) is cst.FunctionDef:
            self._stale = True  # before its def ran: its defaults, cases ... not set yet
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
            self._sink.add(fact)
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
            seed = info.seeds.get(p.name)
            if isinstance(seed, (ObjVal, RefVal)) and seed.cls is not None and \
                    (not isinstance(seed, RefVal) or seed.tree == "module") and \
                    info.cls in self._class_chain(seed.cls):
                # A method called on an object holding refs: `self` is that object, whose
                # refs the caller passed (objects.py).
                return self._rebase(seed, info, p)
            return InstanceVal(info.cls)
        if id(info) in self._pallas_kernels and p.kind in ("pos", "posonly") and \
                p.name not in self._pallas_kernels[id(info)]:
            return RefVal(key=("param", id(info.node), p.name), origin="pallas", node=p.node,
                          scope=info, name=p.name, maybe_tree=True)
        if id(info) in self._pallas_kernels and p.kind == "vararg" and \
                p.name not in self._pallas_kernels[id(info)]:
            # `def kernel(*refs)`: a tuple of refs (unless partial binds more positional
            # arguments than the named parameters take: they come first in it).
            return RefSeqVal(RefVal(key=("param", id(info.node), p.name), origin="pallas",
                                        node=p.node, scope=info, name=p.name))
        seed = info.seeds.get(p.name)
        if seed is not None:
            return self._rebase(seed, info, p)
        if p.name in info.cases:  # a test parameter: one value per test case
            return CaseVal(p.name, info.cases[p.name])
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
                          tree=value.tree, cls=value.cls,
                          maybe_tree=value.maybe_tree or value.origin == "pallas")
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
        if isinstance(value, ObjVal):
            if path.count(".") + path.count("[") > 6:
                return None
            fields = {k: self._rebase(v, info, p, f"{path}.{k}") for k, v in value.fields.items()}
            return ObjVal(value.cls, value.node, fields, value.seq,
                          ("param", id(info.node), p.name, path), value.name)
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
                from ..cstbridge import parse_expression

                expr = parse_expression(text)
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


_LAUNCH = None


def _launch_pattern():
    global _LAUNCH
    if _LAUNCH is None:
        import re

        # The words without `\b` before them (checked on the match: `api.word_char`), so that the
        # search runs on their letters: twice as fast on a 100 KB file.
        words = sorted(api.spelled_names(api.family(api.Family.KERNEL)), key=len, reverse=True)
        _LAUNCH = re.compile(r"(?:" + "|".join(map(re.escape, words)) + r")\b\s*\(\s*"
                             r"(?:(?:functools\.)?partial\(\s*)?([A-Za-z_]\w*)")
    return _LAUNCH


# The fixpoint's first round stops early where it can (_run); off: every round runs as before
# (tests/test_analysis_rounds.py compares the two).
EARLY_STOP = True
# The signature of a round that learnt nothing: no seed, return, attribute or NNX mode.
NOTHING_LEARNT = ((), (), (), ())


def _fact_list(name: str) -> property:
    return property(lambda self: getattr(self.facts, name),
                    doc=f"The recorded facts of one kind (``facts.{name}``).")


for _name in Facts.KINDS.values():  # analysis.accesses, analysis.returns, ...
    setattr(ModuleAnalysis, _name, _fact_list(_name))
del _name
