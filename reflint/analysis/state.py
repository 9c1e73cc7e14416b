"""The evaluator's flow state, and the dependence evaluation's bookkeeping."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

if TYPE_CHECKING:
    from .core import ModuleAnalysis

from ..values import (
    RefVal,
    join,
)
from .constants import (
    EMPTY,
)
from .facts import (
    DependentWrite,
)
from .syntax import (
    walk_nodes,
)


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
        if key[0] in ("attr", "leaves") and len(key) >= 2:
            # A Variable of an NNX module (`self.mean`), the leaves of a tree: the object's.
            status, _ = self._status_key(key[1], scope)
            return (status, key) if status is not None else (None, None)
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

