"""The evaluator's statements and bindings (``StatementsMixin``): program order, branches,
loops, defs, classes, imports, scopes and closures."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Iterable, Optional

from .. import nodes as cst

from .. import api
from ..values import (
    QN,
    ArrayVal,
    Choice,
    ClassVal,
    FuncVal,
    InstanceVal,
    NamespaceVal,
    ObjVal,
    OneOf,
    RefSeqVal,
    RefVal,
    SeqVal,
    SpecialVal,
    Transform,
    TransformVal,
    Value,
    contains_ref,
    is_interesting,
    iter_refs,
    join,
)
from .alternatives import (
    _element_of,
    _one_of,
    _tag_via,
    _unpacked_refs,
)
from .cases import decorator_cases
from .constants import (
    _BUILTIN_NAMES,
    DEPENDENCE_LOOP_RUNS,
    EMPTY,
)
from .facts import (
    AttributeWrite,
    ClassInfo,
    FunctionInfo,
    ItemWrite,
    KernelEntry,
    ReturnFact,
    Role,
    TracedCall,
)
from .state import (
    _join_deps,
    _State,
)
from .syntax import (
    _as_name,
    _bound_names,
    _body,
    _in_own_scope,
    child_nodes,
    dotted_name,
    op_text,
    walk_nodes,
)


class StatementsMixin:

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
        test = self._eval(stmt.test, state)
        then = state.copy()
        self._exec_block(_body(stmt.body), then)
        other = state.copy()
        if isinstance(stmt.orelse, cst.If):
            self._exec_if(stmt.orelse, other)
        elif isinstance(stmt.orelse, cst.Else):
            self._exec_block(_body(stmt.orelse.body), other)
        merged = _State.merge(then, other)
        if isinstance(test, QN) and test.qualname == api.TYPE_CHECKING and \
                not then.dead and not other.dead:
            # `if TYPE_CHECKING: plgpu = _plgpu else: plgpu = <a copy of the module>`: the
            # code tells the type checker what the name is; where the runtime branch gives
            # nothing the analysis knows, the name is what the checked branch says.
            for k, v in then.env.items():
                if v is not None and other.env.get(k) is None and merged.env.get(k) is None:
                    merged.env[k] = v
                    summary = self._func.summary if self._current_class is None else None
                    if summary is not None and summary.get(k) is None:
                        summary[k] = v
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
            self._sink.add(fact)
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
            module = self._project_module(stmt) if self.project is not None else None
        else:
            module = dotted_name(stmt.module) if stmt.module is not None else None
        if isinstance(stmt.names, cst.ImportStar):
            if not self.has_star_import:
                self._stale = True  # a builtin's name read before it may be the import's
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
        rhs = self._eval(stmt.value, state)
        if isinstance(rhs, RefVal) and not rhs.tree:
            # `x[...] += y_ref`: the unread ref is an operand, as in `x[...] = x[...] + y_ref`.
            self._ref_use("binop", stmt.value, rhs, stmt, op_text(stmt.operator))
        if isinstance(target, cst.Subscript):
            base = self._eval(target.value, state)
            self._eval_slices(target, state)
            if isinstance(base, RefVal):
                self._record_access("augitem", stmt, target.value, base, stmt.value, state)
                value = self._values.get(id(stmt.value))
                if isinstance(value, RefVal):
                    # `o_ref[...] += x_ref`: math on the unread ref.
                    self._ref_use("binop", stmt.value, value, stmt, op_text(stmt.operator))
            else:
                self._sink.add(ItemWrite(stmt, base, stmt.value, self._func, target))
        elif isinstance(target, cst.Name):
            v = self._lookup(target.value, target, state)
            if isinstance(v, RefVal):
                self._ref_use("augassign", target, v, stmt, op_text(stmt.operator))
        elif isinstance(target, cst.Attribute):
            base = self._eval(target.value, state)
            cur = self._attribute_value(base, target.attr.value)
            if isinstance(cur, RefVal):
                self._ref_use("augassign", target, cur, stmt, op_text(stmt.operator))
            self._sink.add(AttributeWrite(stmt, base, target.attr.value, None,
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
        self._defined.add(id(info))
        value: Optional[Value] = FuncVal(info)
        for d in reversed(node.decorators):
            dv = self._eval(d.decorator, state)
            if cls is not None and isinstance(dv, QN) and \
                    dv.qualname in ("builtins.staticmethod", "builtins.classmethod"):
                continue  # the builtin: still the function, called without (or with) a receiver
            value = self._apply_decorator(dv, value, d.decorator, state)
        if node.decorators:
            cases = decorator_cases(node.decorators, info.params,
                                    cls is not None and "staticmethod" not in kinds,
                                    self._qualname_of)
            if cases != info.cases and id(info) in self._evaluated:
                self._stale = True  # run by a decorator before its cases were known
            info.cases = cases
        if self.project is not None and outer.is_module and cls is None:
            self._project_roles(info, node)  # launched as a kernel (or traced) elsewhere
        self._enqueue(info)
        if outer.is_module and cls is None:
            # Only the names the module binds more than once can differ from their final
            # value (a full copy per top-level def made many-function modules quadratic).
            rebound = self._module_rebound()
            env = state.env
            if info.def_env is None and id(info) in self._evaluated:
                self._stale = True  # run by a decorator before its def's names were known
            info.def_env = {k: env[k] for k in rebound if k in env}
        if cls is not None and isinstance(value, FuncVal) and value.info is info:
            cls.methods[node.name.value] = value
        elif cls is not None and kinds == ["property"]:
            # `@property def flags(self)`: read as an attribute, it is what the method
            # returns (objects.py); the name itself is bound to nothing.
            cls.methods[node.name.value] = FuncVal(info)
        self._bind_name(node.name.value, value, state)

    def _qualname_of(self, expr) -> Optional[str]:
        """The qualified name an evaluated expression names (``pytest.mark.parametrize``)."""
        value = self._values.get(id(expr))
        return value.qualname if isinstance(value, QN) else None

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
            if bv is None and type(b.value) is cst.Subscript:
                # `class Count(nnx.Variable[nnx.A])`: a generic base.
                bv = self._values.get(id(b.value.value))
            if isinstance(bv, QN):
                a = api.lookup(bv.qualname)
                if a is not None and a.result is api.Result.NNX_OBJECT:
                    cls.nnx = cls.nnx or ("variable" if a.ref_keywords else "module")
                elif a is not None and a.family is api.Family.BLOCK_SPEC:
                    cls.block_spec = True
                elif a is None:  # a class of another module (analysis/project.py)
                    kind = self._project_class_kind(bv.qualname)
                    if kind == "block_spec":
                        cls.block_spec = True
                    elif kind:
                        cls.nnx = cls.nnx or kind
            elif isinstance(bv, ClassVal):
                cls.nnx = cls.nnx or bv.cls.nnx
                cls.block_spec = cls.block_spec or bv.cls.block_spec
        cls.bases = [b.cls for b in bases if isinstance(b, ClassVal) and b.cls is not cls]
        self._class_record(cls, node)
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
                                    self.text_of)
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
        self._sink.add(KernelEntry(fv.info, a.name, callee, node))
        if a.result is api.Result.LAUNCHER:
            return SpecialVal("launcher", fv, node, a.name, dict(kwargs))
        # run_scoped / core_map: the body runs now, inside the enclosing kernel's trace.
        self._sink.add(TracedCall(kind=a.name, node=node, func=self._func,
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
            if isinstance(value, ObjVal) and value.seq:  # `mu, nu = opt_state`
                value = value.as_seq()
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
                elif items is not None:
                    self._bind_target(sub, items[i], state, stmt)
                else:
                    # `lo, hi = jnp.split(x, 2)`, `a, b = x_ref[...]`: an Array unpacks into
                    # Arrays (its rows, or the parts a function returning several made),
                    # each made at its element of the target.
                    self._bind_target(sub, ArrayVal(e) if isinstance(value, ArrayVal) else None,
                                      state, stmt)
        elif t is cst.Subscript:
            base = self._eval(target.value, state)
            self._eval_slices(target, state)
            if isinstance(base, RefVal):
                self._record_access("setitem", stmt, target.value, base, value_expr, state)
                if isinstance(value, RefVal) and value_expr is not None and \
                        not isinstance(stmt, cst.For):
                    # `o_ref[...] = x_ref`: JAX rejects a Ref stored into a Ref.
                    self._ref_use("stored", value_expr, value, stmt,
                                  "")
            else:
                self._sink.add(ItemWrite(stmt, base, value_expr, self._func, target))
        elif t is cst.Attribute:
            base = self._eval(target.value, state)
            attr = target.attr.value
            if isinstance(base, NamespaceVal):
                d = base.attrs
                d[attr] = join(d[attr], value) if attr in d else value
            if isinstance(base, ObjVal):
                self._obj_set_attribute(base, attr, value)
            if isinstance(base, InstanceVal):
                d = self._new_attrs.setdefault(id(base.cls), {})
                if isinstance(value, RefVal) and not value.name:
                    value.name = f"self.{attr}"
                d[attr] = join(d[attr], value) if attr in d else value
                if is_interesting(value):
                    # Read elsewhere (module code after `h = Holder()`) next round.
                    self._interprocedural = True
            self._sink.add(AttributeWrite(stmt, base, attr, value, self._func))
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
            late = self._late_imports().get(name)
            if late is not None:
                return late
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

    def _late_imports(self) -> dict:
        """Names the module binds once, by an import at top level, read by module code before
        that import (a notebook or doc page whose `import functools` comes in a later cell):
        name -> QN."""
        def build() -> dict:
            body = list(getattr(self.module, "body", ()))
            found: dict = {}
            for st in body:
                if type(st) is not cst.SimpleStatementLine:
                    continue
                for small in st.body:
                    if type(small) is cst.Import:
                        for alias in small.names:
                            full = dotted_name(alias.name)
                            if full is None:
                                continue
                            if alias.asname is not None:
                                found.setdefault(_as_name(alias.asname), []).append(QN(full))
                            else:
                                top = full.split(".")[0]
                                found.setdefault(top, []).append(QN(top))
                    elif type(small) is cst.ImportFrom and not small.relative and \
                            small.module is not None and \
                            not isinstance(small.names, cst.ImportStar):
                        module = dotted_name(small.module)
                        for alias in small.names:
                            name = dotted_name(alias.name)
                            local = _as_name(alias.asname) if alias.asname is not None else name
                            if local and module:
                                found.setdefault(local, []).append(QN(f"{module}.{name}"))
            others = [st for st in body if not (
                type(st) is cst.SimpleStatementLine and
                any(type(x) in (cst.Import, cst.ImportFrom) for x in st.body))]
            defined = {st.name.value for st in body
                       if type(st) in (cst.FunctionDef, cst.ClassDef)}
            if not found:
                return {}
            bound = _bound_names(others)  # one walk, not one per imported name
            return {name: qns[0] for name, qns in found.items()
                    if len(qns) == 1 and name not in defined and name not in bound}
        return self.cached("late imports", build)

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

    def _local_only(self, f: FunctionInfo, scope: FunctionInfo) -> bool:
        """Whether ``f``, a def of ``scope``, is used only by ``scope``'s own statements, as a
        call or as an argument (``jax.jit(f)``, ``lax.cond(p, f, g)``), and so runs only at
        the calls the analysis sees there: the name ``f`` (and the names bound to expressions
        that mention it, ``g = jax.jit(f)``) is not read in a nested function, returned,
        yielded, stored in a container, an attribute or an item.

        The scope is walked once for all its defs (``_EscapeIndex``), not once per def: a
        notebook of N cells, each with a def, costs O(N), not O(N^2)."""
        if f.local_only is not None:
            return f.local_only
        ok = not f.is_lambda or id(f.node) in self._called_lambdas(scope)
        if ok and not f.is_lambda:
            cache = self.__dict__.setdefault("_escape_index", {})
            index = cache.get(id(scope))
            if index is None:
                index = cache[id(scope)] = _EscapeIndex(scope)
            ok = index.local_only(f)
        f.local_only = ok
        return ok

    def _called_lambdas(self, scope: FunctionInfo) -> frozenset:
        """ids of the lambdas of ``scope``'s own code that run where they are written and
        nowhere else: called at once (``(lambda: m)()``) or given as the first argument of a
        call whose result is called at once (``jax.jit(lambda a: f(a, m))(x)``)."""
        cache = self.__dict__.setdefault("_called_lambdas_cache", {})
        out = cache.get(id(scope))
        if out is None:
            body = list(scope.node.body if scope.is_module else _body(scope.node.body))
            found = set()
            for node in walk_nodes(body, _in_own_scope):
                if type(node) is not cst.Call:
                    continue
                func = node.func
                if type(func) is cst.Lambda:
                    found.add(id(func))
                elif type(func) is cst.Call and func.args and func.args[0].keyword is None \
                        and not func.args[0].star and type(func.args[0].value) is cst.Lambda:
                    found.add(id(func.args[0].value))
            out = cache[id(scope)] = frozenset(found)
        return out

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


class _EscapeIndex:
    """One walk of a scope's statements for ``_local_only``: the aliases (``g = jax.jit(f)``:
    an edge from each name the value mentions to ``g``), and where each name is read in an
    escaping position (returned, yielded, stored in a container, an attribute or an item, read
    in a nested function, lambda or class), with the innermost nested def holding that read
    (``owner``: the reads in ``f``'s own parameters and body do not count for ``f``)."""

    _ESCAPING = (cst.Return, cst.Yield, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.Lambda,
                 cst.FunctionDef, cst.ClassDef, cst.Global, cst.Nonlocal)

    def __init__(self, scope: FunctionInfo):
        body = list(scope.node.body if scope.is_module else _body(scope.node.body))
        self.scope = scope  # keeps id(scope), the cache key, valid
        self.aliases: dict = {}  # name -> names bound to values that mention it
        for node in walk_nodes(body, _in_own_scope):
            if type(node) is cst.Assign and len(node.targets) == 1 and \
                    type(node.targets[0].target) is cst.Name:
                target = node.targets[0].target.value
                for n in walk_nodes([node.value], _in_own_scope):
                    if type(n) is cst.Name:
                        self.aliases.setdefault(n.value, set()).add(target)
        self.escapes: dict = {}  # name -> [owner def node or None], one per escaping read
        self.parent: dict = {}  # id(def node) -> the def node holding it, or None
        escaping = self._ESCAPING
        stack = [(n, False, None) for n in body]
        while stack:
            node, bad, owner = stack.pop()
            t = type(node)
            if t is cst.Name:
                if bad:
                    self.escapes.setdefault(node.value, []).append(owner)
                continue
            if t is cst.FunctionDef:
                # Its decorators run in the enclosing code; its parameters' defaults and body
                # are "a nested function" for every def but itself.
                self.parent[id(node)] = owner
                for d in node.decorators:
                    stack.append((d, bad, owner))
                stack.append((node.body, True, node))
                stack.append((node.params, True, node))
                continue
            if t in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                targets = [tg.target for tg in node.targets] if t is cst.Assign else \
                    [node.target]
                if any(type(tg) is not cst.Name for tg in targets):
                    bad = True  # stored in an item or an attribute
                if node.value is not None:
                    stack.append((node.value, bad, owner))
                continue
            bad = bad or t in escaping
            stack.extend((c, bad, owner) for c in child_nodes(node))

    def local_only(self, f: FunctionInfo) -> bool:
        names = {f.name}
        todo = [f.name]
        while todo:  # every alias of f, transitively
            for target in self.aliases.get(todo.pop(), ()):
                if target not in names:
                    names.add(target)
                    todo.append(target)
        for name in names:
            for owner in self.escapes.get(name, ()):
                while owner is not None and owner is not f.node:
                    owner = self.parent[id(owner)]
                if owner is None:  # not inside f's own def: an escaping read
                    return False
        return True

