"""Dependency (taint) analysis: which values depend on the inputs of a differentiated function.

Built on top of :class:`reflint.analysis.ModuleAnalysis` and computed lazily, once per module
(``differentiation(analysis)``). For every function traced by ``jax.grad`` / ``value_and_grad``
/ ``jacrev`` / ``jacfwd`` / ``hessian`` (the ``argnums`` inputs, default 0) or ``jax.jvp`` /
``vjp`` / ``linearize`` (every primal), it walks the function's statements in order and tracks
which local names depend on the differentiated inputs, through assignments, arithmetic and
calls: a call with a dependent argument gives a dependent result, except
``jax.lax.stop_gradient``, metadata queries (``.shape``, ``jnp.shape``, ``len``...), comparisons
and integer-valued functions (``argmax``...). Local helpers, control-flow bodies and nested
transforms called with dependent arguments are walked with their parameters marked, and names
a nested function reads from an enclosing differentiated scope carry their dependence.

Refs are classified as *internal* (created while the differentiated function runs: JAX
differentiates them), *external* (closed over from outside, or a non-differentiated argument)
or *differentiated* (a differentiated argument that is a ref); reads of an internal ref that
received a dependent value are dependent. The result lists every write of a dependent value
into an external ref (:class:`DiffWrite`), which JAX rejects when tracing.

Everything unresolved counts as independent, so the analysis under-reports rather than
over-reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from . import api
from .analysis import slice_exprs, walk_nodes
from .values import QN, FuncVal, RefVal, iter_refs

EMPTY: frozenset = frozenset()
MAX_DEPTH = 8

# Functions whose result carries no derivative, whatever their arguments.
_NO_TANGENT_FUNCTIONS = api.NO_TANGENT_FUNCTIONS
_NO_TANGENT_BUILTINS = frozenset({
    "len", "isinstance", "type", "hasattr", "id", "callable", "range", "print", "repr", "str",
    "bool", "issubclass", "enumerate_len",
})
_METADATA_ATTRIBUTES = frozenset({
    "shape", "ndim", "size", "dtype", "sharding", "aval", "weak_type", "itemsize", "nbytes",
})


@dataclass(eq=False)
class DiffWrite:
    """A write of a value that depends on differentiated inputs into a non-differentiated ref."""

    access: object  # analysis.RefAccess
    root: object  # FunctionInfo of the differentiated function
    transform: str  # canonical transform name (api.GRAD, ...)
    transform_node: cst.CSTNode
    inputs: frozenset  # names of the differentiated parameters the value depends on
    ref_kind: str  # 'closed-over' or 'argument'


@dataclass(eq=False)
class _Frame:
    info: object  # FunctionInfo
    env: dict = field(default_factory=dict)  # local name -> frozenset of root inputs
    param_refs: dict = field(default_factory=dict)  # param name -> (status, base key)
    returns: frozenset = EMPTY


@dataclass(eq=False)
class Differentiation:
    writes: list  # DiffWrite
    roots: dict  # id(FunctionInfo) -> (params, transform, node)


def differentiation(analysis) -> Differentiation:
    """The module's differentiated functions and the dependent writes into outside refs."""
    return analysis.cached("differentiation", lambda: _Walker(analysis).run())


def differentiated_params(analysis, info) -> Optional[tuple]:
    """(param names, transform kind, transform node) of a function differentiated by a JAX
    transform, or None if it is not differentiated or its inputs cannot be determined."""
    best = None
    names: set = set()
    for role in info.roles.values():
        if role.kind not in api.GRAD_TRANSFORMS:
            continue
        got = _role_params(analysis, info, role)
        if got is None:
            return None
        names |= got
        if best is None:
            best = role
    if best is None:
        return None
    return frozenset(names), best.kind, best.node


def differentiated_param_names(analysis, info, role) -> Optional[set]:
    """The names of ``info``'s parameters that ``role`` (a grad-like transform applied to it)
    differentiates, or None when they cannot be determined."""
    return _role_params(analysis, info, role)


def _role_params(analysis, info, role) -> Optional[set]:
    if info.is_method and not isinstance(role.node, cst.Call):
        return None
    bound = 0
    bound_kw: tuple = ()
    call = role.node if isinstance(role.node, cst.Call) else None
    fn_arg = None
    if call is not None:
        pos = [a for a in call.args if a.keyword is None]
        fn_arg = pos[0] if pos else None
        fv = analysis.value_of(fn_arg.value) if fn_arg is not None else None
        if isinstance(fv, FuncVal) and fv.info is info:
            bound = len(fv.bound_args) + (1 if fv.self_value is not None else 0)
            bound_kw = fv.bound_kwargs
        elif not _is_decorator(info, role.node):
            call = None  # a transform applied through a variable: argnums is in the Transform
    params = [p for p in info.params if p.kind in ("pos", "posonly")][bound:]
    params = [p for p in params if p.name not in bound_kw]
    primals = api.API[role.kind].primals if role.kind in api.API else ""
    if primals:
        count = None
        if call is not None and fn_arg is not None:
            rest = [a for a in call.args if a.keyword is None][1:]
            if primals == "tuple":
                if rest and isinstance(rest[0].value, (cst.Tuple, cst.List)):
                    els = rest[0].value.elements
                    if not any(isinstance(e, cst.StarredElement) for e in els):
                        count = len(els)
            elif not any(a.star for a in rest):
                count = len(rest)
        chosen = params if count is None else params[:count]
        return {p.name for p in chosen}
    transform = role.transform
    expr = None
    if transform is not None:
        expr = transform.kwargs.get("argnums")
        if expr is None and transform.args:
            expr = transform.args[0]
    nums = _int_set(expr) if expr is not None else {0}
    if nums is None:
        return None
    out = set()
    for n in nums:
        if n < 0 or n >= len(params):
            return None
        out.add(params[n].name)
    return out


def _is_decorator(info, node) -> bool:
    fn = info.node
    return isinstance(fn, cst.FunctionDef) and any(d.decorator is node for d in fn.decorators)


def _int_set(expr) -> Optional[set]:
    if isinstance(expr, cst.Integer):
        try:
            return {int(expr.value, 0)}
        except ValueError:
            return None
    if isinstance(expr, (cst.Tuple, cst.List)):
        out = set()
        for e in expr.elements:
            got = _int_set(e.value) if not isinstance(e, cst.StarredElement) else None
            if got is None:
                return None
            out |= got
        return out
    return None


class _Walker:
    def __init__(self, analysis):
        self.a = analysis
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
        self.result = Differentiation([], {})
        self.reported: set = set()
        self.last: dict = {}  # id(expr) -> taint at its latest walk
        self.quiet = False

    # -- driver ------------------------------------------------------------------------------

    def run(self) -> Differentiation:
        for info in self.a.all_functions():
            got = differentiated_params(self.a, info)
            if got is None:
                continue
            params, kind, node = got
            self.result.roots[id(info)] = got
            self.root = info
            self.kind, self.node = kind, node
            self.root_inputs = params
            self.scopes: set = set()  # ids of functions entered under this root
            self.ever: dict = {}  # id(info) -> {name: inputs} ever bound in that function
            self.tainted_refs: dict = {}  # base key -> inputs
            self.memo: dict = {}
            self.stack: list = []
            self.hit_limit = False
            self.names_used = None
            frame = _Frame(info)
            for p in info.params:
                if p.name in params:
                    frame.env[p.name] = frozenset({p.name})
                    frame.param_refs[p.name] = ("diff", None)
                else:
                    frame.param_refs[p.name] = ("external", ("rootarg", p.name))
            self._run_frame(frame)
        return self.result

    def _run_frame(self, frame: _Frame) -> frozenset:
        info = frame.info
        self.scopes.add(id(info))
        self.stack.append(frame)
        ever = self.ever.setdefault(id(info), {})
        for k, v in frame.env.items():
            ever[k] = ever.get(k, EMPTY) | v
        try:
            node = info.node
            if isinstance(node, cst.Lambda):
                frame.returns |= self._expr(node.body, frame)
            elif isinstance(node, cst.FunctionDef):
                self._block(_body(node.body), frame)
        finally:
            self.stack.pop()
        return frame.returns

    # -- statements --------------------------------------------------------------------------

    def _block(self, stmts, frame: _Frame) -> None:
        for stmt in stmts:
            self._stmt(stmt, frame)

    def _branches(self, frame: _Frame, blocks) -> None:
        entry = dict(frame.env)
        merged: dict = {}
        for block in blocks:
            frame.env = dict(entry)
            self._block(block, frame)
            for k, v in frame.env.items():
                merged[k] = merged.get(k, EMPTY) | v
        frame.env = merged

    def _loop(self, frame: _Frame, body, target=None, iter_taint=EMPTY, orelse=None) -> None:
        for _ in range(3):
            before = dict(frame.env)
            if target is not None:
                self._bind(target, iter_taint, frame, None)
            self._block(body, frame)
            for k, v in before.items():
                frame.env[k] = frame.env.get(k, EMPTY) | v
            if frame.env == before:
                break
        if orelse is not None:
            self._block(orelse, frame)

    def _stmt(self, stmt, frame: _Frame) -> None:
        t = type(stmt)
        if t is cst.SimpleStatementLine:
            for small in stmt.body:
                self._small(small, frame)
        elif t is cst.If:
            self._expr(stmt.test, frame)
            blocks = [_body(stmt.body)]
            other = stmt.orelse
            if isinstance(other, cst.If):
                blocks.append([other])
            elif isinstance(other, cst.Else):
                blocks.append(_body(other.body))
            else:
                blocks.append([])
            self._branches(frame, blocks)
        elif t is cst.For:
            it = self._expr(stmt.iter, frame)
            self._loop(frame, _body(stmt.body), stmt.target, it,
                       _body(stmt.orelse.body) if stmt.orelse else None)
        elif t is cst.While:
            self._expr(stmt.test, frame)
            self._loop(frame, _body(stmt.body),
                       orelse=_body(stmt.orelse.body) if stmt.orelse else None)
        elif t is cst.With:
            for item in stmt.items:
                v = self._expr(item.item, frame)
                if item.asname is not None:
                    self._bind(item.asname.name, v, frame, None)
            self._block(_body(stmt.body), frame)
        elif t in (cst.Try, getattr(cst, "TryStar", cst.Try)):
            blocks = [_body(stmt.body) + (_body(stmt.orelse.body) if stmt.orelse else [])]
            blocks += [_body(h.body) for h in stmt.handlers]
            self._branches(frame, blocks)
            if stmt.finalbody is not None:
                self._block(_body(stmt.finalbody.body), frame)
        elif t is cst.Match:
            self._expr(stmt.subject, frame)
            self._branches(frame, [_body(c.body) for c in stmt.cases] + [[]])
        # FunctionDef / ClassDef: nested functions are walked when they are called.

    def _small(self, stmt, frame: _Frame) -> None:
        t = type(stmt)
        if t is cst.Expr:
            self._expr(stmt.value, frame)
        elif t is cst.Assign:
            v = self._expr(stmt.value, frame)
            for target in stmt.targets:
                self._bind(target.target, v, frame, stmt, stmt.value)
        elif t is cst.AnnAssign and stmt.value is not None:
            v = self._expr(stmt.value, frame)
            self._bind(stmt.target, v, frame, stmt, stmt.value)
        elif t is cst.AugAssign:
            v = self._expr(stmt.value, frame)
            target = stmt.target
            if isinstance(target, cst.Name):
                self._set(frame, target.value, frame.env.get(target.value, EMPTY) | v)
            elif isinstance(target, cst.Subscript):
                self._subscript_target(target, v, frame, stmt)
        elif t is cst.Return and stmt.value is not None:
            frame.returns |= self._expr(stmt.value, frame)

    def _set(self, frame: _Frame, name: str, taint: frozenset) -> None:
        if taint:
            frame.env[name] = taint
            ever = self.ever.setdefault(id(frame.info), {})
            ever[name] = ever.get(name, EMPTY) | taint
        else:
            frame.env.pop(name, None)

    def _bind(self, target, taint: frozenset, frame: _Frame, stmt, value=None) -> None:
        t = type(target)
        if t is cst.Name:
            self._set(frame, target.value, taint)
        elif t in (cst.Tuple, cst.List):
            els = target.elements
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(els) and \
                    not any(isinstance(e, cst.StarredElement) for e in value.elements + els):
                for e, v in zip(els, value.elements):
                    self._bind(e.value, self._quiet(v.value, frame), frame, None)
            else:
                for e in els:
                    self._bind(e.value, taint, frame, None)
        elif t is cst.StarredElement:
            self._bind(target.value, taint, frame, None)
        elif t is cst.Subscript:
            self._subscript_target(target, taint, frame, stmt)

    def _subscript_target(self, target: cst.Subscript, taint, frame: _Frame, stmt) -> None:
        self._slices(target, frame)
        if stmt is not None:
            for acc in self.writes_by_node.get(id(stmt), ()):
                if acc.ref_expr is target.value and acc.is_write:
                    self._write(acc, taint, frame)
                    return
        if isinstance(target.value, cst.Name) and taint:  # x[i] = y on an array or container
            name = target.value.value
            self._set(frame, name, frame.env.get(name, EMPTY) | taint)

    def _quiet(self, expr, frame: _Frame) -> frozenset:
        """Taint of an expression already walked (call arguments, tuple elements)."""
        if id(expr) in self.last:
            return self.last[id(expr)]
        saved, self.quiet = self.quiet, True
        try:
            return self._expr(expr, frame)
        finally:
            self.quiet = saved

    # -- refs --------------------------------------------------------------------------------

    def _status(self, ref: RefVal):
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
            info = self.a.functions.get(key[1])
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
            status, base = self._status_key(key[1], scope)
            return status, base
        if key[0] == "merged" and len(key) == 3:
            s1, b1 = self._status_key(key[1], scope)
            s2, b2 = self._status_key(key[2], scope)
            if s1 == s2 and s1 == "external":
                return "external", key
            return None, None
        return None, None

    def _names_used(self) -> set:
        """Every identifier spelled in the root and the functions entered under it."""
        if self.names_used is None or self.names_used[0] != len(self.scopes):
            names: set = set()
            for info in self.a.all_functions():
                if id(info) not in self.scopes and not self.root.encloses(info):
                    continue
                for node in walk_nodes([info.node]):
                    if isinstance(node, cst.Name):
                        names.add(node.value)
                    elif isinstance(node, cst.Attribute):
                        names.add(node.attr.value)
            self.names_used = (len(self.scopes), names)
        return self.names_used[1]

    def _read(self, ref: Optional[RefVal]) -> frozenset:
        if ref is None:
            return EMPTY
        status, base = self._status(ref)
        if status == "internal":
            return self.tainted_refs.get(base, EMPTY)
        if status == "diff":
            return frozenset({ref.name or "ref"})
        return EMPTY

    def _write(self, acc, taint: frozenset, frame: _Frame) -> None:
        if not taint:
            return
        status, base = self._status(acc.ref)
        if status == "internal":
            self.tainted_refs[base] = self.tainted_refs.get(base, EMPTY) | taint
            return
        if status != "external" or self.quiet:
            return
        if acc.value_expr is None or id(acc.node) in self.reported:
            return
        self.reported.add(id(acc.node))
        kind = "argument" if isinstance(base, tuple) and base[0] == "rootarg" else "closed-over"
        self.result.writes.append(DiffWrite(acc, self.root, self.kind, self.node, taint, kind))

    # -- expressions -------------------------------------------------------------------------

    def _slices(self, node: cst.Subscript, frame: _Frame) -> None:
        for expr in slice_exprs(node):
            self._expr(expr, frame)

    def _name(self, name: str, frame: _Frame) -> frozenset:
        if name in frame.env:
            return frame.env[name]
        info = frame.info
        if name in info.summary:  # a local not (yet) dependent
            return EMPTY
        scope = info.parent
        while scope is not None and not scope.is_module:
            if name in scope.summary:
                return self.ever.get(id(scope), {}).get(name, EMPTY)
            scope = scope.parent
        return EMPTY

    def _expr(self, node, frame: _Frame) -> frozenset:
        if node is None:
            return EMPTY
        out = self._expr_inner(node, frame)
        self.last[id(node)] = out
        return out

    def _expr_inner(self, node, frame: _Frame) -> frozenset:
        t = type(node)
        if t is cst.Name:
            return self._name(node.value, frame)
        if t is cst.Attribute:
            base = self._expr(node.value, frame)
            return EMPTY if node.attr.value in _METADATA_ATTRIBUTES else base
        if t is cst.Subscript:
            ref = self.a.ref_of(node.value)
            base = self._expr(node.value, frame)
            self._slices(node, frame)
            if ref is not None:
                return self._read(ref)
            return base
        if t is cst.Call:
            return self._call(node, frame)
        if t in (cst.BinaryOperation,):
            return self._expr(node.left, frame) | self._expr(node.right, frame)
        if t is cst.UnaryOperation:
            v = self._expr(node.expression, frame)
            return EMPTY if isinstance(node.operator, cst.Not) else v
        if t is cst.Comparison:
            self._expr(node.left, frame)
            for c in node.comparisons:
                self._expr(c.comparator, frame)
            return EMPTY
        if t is cst.BooleanOperation:
            return self._expr(node.left, frame) | self._expr(node.right, frame)
        if t is cst.IfExp:
            self._expr(node.test, frame)
            return self._expr(node.body, frame) | self._expr(node.orelse, frame)
        if t in (cst.Tuple, cst.List, cst.Set):
            out = EMPTY
            for e in node.elements:
                out |= self._expr(e.value, frame)
            return out
        if t is cst.Dict:
            out = EMPTY
            for e in node.elements:
                if isinstance(e, cst.DictElement):
                    self._expr(e.key, frame)
                out |= self._expr(e.value, frame)
            return out
        if t is cst.NamedExpr:
            v = self._expr(node.value, frame)
            self._bind(node.target, v, frame, None)
            return v
        if t in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
            return self._comprehension(node, frame)
        if t is cst.StarredElement:
            return self._expr(node.value, frame)
        if t is cst.Await:
            return self._expr(node.expression, frame)
        return EMPTY

    def _comprehension(self, node, frame: _Frame) -> frozenset:
        saved = dict(frame.env)
        f = node.for_in
        while f is not None:
            it = self._expr(f.iter, frame)
            self._bind(f.target, it, frame, None)
            for cond in f.ifs:
                self._expr(cond.test, frame)
            f = f.inner_for_in
        if isinstance(node, cst.DictComp):
            self._expr(node.key, frame)
            out = self._expr(node.value, frame)
        else:
            out = self._expr(node.elt, frame)
        frame.env = saved
        return out

    def _call(self, node: cst.Call, frame: _Frame) -> frozenset:
        func_taint = self._expr(node.func, frame)
        arg_taints = [self._expr(a.value, frame) for a in node.args]
        any_arg = EMPTY
        for v in arg_taints:
            any_arg |= v
        fv = self.a.value_of(node.func)
        if isinstance(fv, QN):
            qn = fv.qualname
            kind = api.canonical(qn)
            fam = api.API[kind].family if kind is not None else None
            pos = [i for i, a in enumerate(node.args) if a.keyword is None and not a.star]
            if kind == api.STOP_GRADIENT:
                return EMPTY
            if kind in api.REF_CONSTRUCTORS:
                if pos and arg_taints[pos[0]]:
                    self.tainted_refs[("new", id(node))] = arg_taints[pos[0]]
                return EMPTY
            if fam in (api.Family.FREEZE, api.Family.REF_READ):
                return self._read(self.a.ref_of(node.args[pos[0]].value)) if pos else EMPTY
            if kind in api.REF_WRITERS:
                for acc in self.writes_by_node.get(id(node), ()):
                    if acc.value_expr is not None:
                        value_taint = EMPTY
                        for a, v in zip(node.args, arg_taints):
                            if a.value is acc.value_expr:
                                value_taint = v
                        self._write(acc, value_taint, frame)
                if kind == api.REF_SWAP and pos:
                    return self._read(self.a.ref_of(node.args[pos[0]].value))
                return EMPTY
            short = qn.rsplit(".", 1)[-1]
            if qn.startswith("builtins.") and short in _NO_TANGENT_BUILTINS:
                return EMPTY
            if short in _NO_TANGENT_FUNCTIONS and qn.startswith(("jax.", "numpy.")):
                if short == "full" or short.endswith("_like"):
                    # full(shape, fill) / full_like(x, fill): the fill value carries tangents
                    out = EMPTY
                    for i, a in enumerate(node.args):
                        if (a.keyword is not None and a.keyword.value == "fill_value") or \
                                (a.keyword is None and i == 1):
                            out |= arg_taints[i]
                    return out
                return EMPTY
        result = func_taint | any_arg
        for info, bindings in self.calls.get(id(node), ()):
            result |= self._enter(info, bindings, frame)
        for info, bindings, call in self.traced.get(id(node), ()):
            extra = EMPTY
            got = differentiated_params(self.a, info) if any(
                t.kind in api.GRAD_TRANSFORMS for t in call.transforms) else None
            if got is not None:
                extra = got[0]
            result |= self._enter(info, bindings, frame, extra)
        return result

    def _enter(self, info, bindings: dict, frame: _Frame, extra=EMPTY) -> frozenset:
        if len(self.stack) >= MAX_DEPTH:
            self.hit_limit = True
            return EMPTY
        if any(f.info is info for f in self.stack):
            return EMPTY
        callee = _Frame(info)
        for pname, b in bindings.items():
            if b.param is None:
                continue
            taint = self._quiet(b.expr, frame) if b.expr is not None else EMPTY
            if taint:
                callee.env[pname] = taint
            statuses = {self._status(r)[0] for r, _ in iter_refs(b.value)}
            if statuses:
                if len(statuses) == 1:
                    status = statuses.pop()
                    base = None
                    if isinstance(b.value, RefVal):
                        base = self._status(b.value)[1]
                    callee.param_refs[pname] = (status, base)
                else:
                    callee.param_refs[pname] = (None, None)
        for p in info.params:
            if p.name in extra and p.name not in callee.env:
                callee.env[p.name] = frozenset({p.name})
        key = (id(info), tuple(sorted((k, v) for k, v in callee.env.items())),
               tuple(sorted((k, v[0], repr(v[1])) for k, v in callee.param_refs.items())))
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = EMPTY
        out = self._run_frame(callee)
        self.memo[key] = out
        return out


def _body(block) -> list:
    return list(block.body) if hasattr(block, "body") else []
