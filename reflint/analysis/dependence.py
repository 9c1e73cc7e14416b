"""Dependence on differentiated inputs (REF008, REF016).

Which functions JAX differentiates, with respect to which inputs (``differentiated_params``:
for a function traced by ``jax.grad`` / ``value_and_grad`` / ``jacrev`` / ``jacfwd`` /
``hessian``, the ``argnums`` inputs, default 0; for ``jax.jvp`` / ``vjp`` / ``linearize``, every
primal), and the writes of values that depend on those inputs into refs JAX does not
differentiate (``DependenceMixin.dependence``: the evaluator's own evaluation, run again for each
differentiated function with a ``deps`` component in its flow state, per call context; a call
with a dependent argument gives a dependent result, except ``jax.lax.stop_gradient``, metadata
queries, comparisons and integer-valued functions). ``differentiation(analysis)`` gives the
writes, computed once per module. Everything unresolved counts as independent, so the analysis
under-reports rather than over-reports.
"""

from __future__ import annotations

import contextlib
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from .._record import record
from ..values import (
    QN,
    FuncVal,
    RefVal,
    SpecialVal,
    Value,
    iter_refs,
)
from .constants import (
    _METADATA_ATTRIBUTES,
    _NO_TANGENT_BUILTINS,
    EMPTY,
    MAX_DEPENDENCE_DEPTH,
)
from .facts import (
    DiscardFacts,
    FunctionInfo,
)
from .state import (
    _Dependence,
    _DepFrame,
    _State,
)


class DependenceMixin:

    # -- dependence on differentiated inputs (REF008) ----------------------------------------

    def dependence(self, roots: dict) -> list:
        """The writes of values that depend on differentiated inputs into refs JAX does not
        differentiate (:class:`DependentWrite`).

        ``roots``: ``id(info) -> (param names, transform, transform node)`` for every function
        a grad-like transform differentiates (``differentiated_params``). The evaluator
        runs each root again with a ``deps`` component in its flow state (``_State.deps``:
        name -> the root's inputs it depends on) and a dependence per expression
        (``_dep_expr``, next to its value), and enters the local functions the root calls with
        their parameters' dependence, so each helper is evaluated in the context of each call
        (memoized per root, ``MAX_DEPENDENCE_DEPTH`` deep). These evaluations record no fact:
        they write to a discarding sink (``_replaying``)."""
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
        """Evaluate with ``dep`` tracking the dependence: facts go to a sink that keeps nothing
        (``DiscardFacts``), and the evaluator's own tables and per-function records (values,
        roles, summaries, seeds) are set aside and restored afterwards."""
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
        self._sink = DiscardFacts()
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
        if isinstance(fv, (RefVal, SpecialVal)):
            # A Flax layer writing its Variables when called (`bn(x)`, `opt.update(m, g)`).
            for acc in dep.writes_by_node.get(id(node), ()):
                for a, d in zip(node.args, arg_deps):
                    if a.value is acc.value_expr:
                        dep.write(acc, d)
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

    def differentiation(self) -> "Differentiation":
        """The module's differentiated functions and the dependent writes into outside refs
        (computed once)."""
        return differentiation(self)

    def differentiated_param_names(self, info, role) -> Optional[set]:
        """The names of ``info``'s parameters that ``role`` (a grad-like transform applied to
        it) differentiates, or None when they cannot be determined."""
        return _role_params(self, info, role)


# -- which functions are differentiated, with respect to which inputs ---------------------


@record(eq=False)
class Differentiation:
    """The module's differentiated functions (``roots``) and the writes of values depending
    on their differentiated inputs into refs from outside them."""

    writes: list  # DependentWrite
    roots: dict  # id(FunctionInfo) -> (params, transform, node)


def differentiation(analysis) -> Differentiation:
    """The module's differentiated functions and the dependent writes into outside refs."""
    return analysis.cached("differentiation", lambda: _differentiation(analysis))


def _differentiation(analysis) -> Differentiation:
    roots: dict = {}
    for info in analysis.all_functions():
        got = differentiated_params(analysis, info)
        if got is not None:
            roots[id(info)] = got
    return Differentiation(analysis.dependence(roots), roots)


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
