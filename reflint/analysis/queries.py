"""The public queries rules ask of a module's analysis (``QueriesMixin``)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from ..values import (
    QN,
    RefVal,
    Value,
    iter_refs,
)
from .alternatives import (
    _count_scratch,
)
from .constants import (
    _CONTAINER_CONSTRUCTORS,
)
from .facts import (
    FunctionInfo,
)
from .syntax import (
    SyntaxIndex,
    _as_name,
    _in_own_scope,
    _positions_of,
    _target_names,
    child_nodes,
    dotted_name,
    small_statements,
    walk_nodes,
)


class QueriesMixin:

    # -- public queries ------------------------------------------------------------------

    def cached(self, key, fn):
        """``fn()``, computed once per analysis under ``key`` (for rule helpers: a rule keeps
        its derived facts here rather than in attributes of its own on the analysis)."""
        cache = self._cache
        if key not in cache:
            cache[key] = fn()
        return cache[key]

    def syntax_index(self) -> SyntaxIndex:
        """Parents and nodes by type of the whole module, from one walk shared by every rule
        (syntax.SyntaxIndex)."""
        return self.cached("syntax index", lambda: SyntaxIndex(self.module))

    def small_statements(self) -> list:
        """``syntax.small_statements`` of the module, from one walk shared by every rule."""
        return self.cached("small statements", lambda: list(small_statements(self.module)))

    def aot_call_of(self, node: cst.CSTNode) -> Optional[cst.Call]:
        """The call ``node.lower(...)`` / ``.trace(...)`` / ``.eval_shape(...)`` whose receiver
        is ``node`` (api.AOT_METHODS), if the module has one."""
        calls = self.cached("aot calls", lambda: {id(c.receiver): c.call
                                                   for c in self.aot_calls})
        return calls.get(id(node))

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

    def kernel_functions(self) -> list:
        """Each function run as a Pallas kernel, once, in the order of its first launch."""
        return self.cached("kernel functions", lambda: list(
            {id(e.func): e.func for e in self.kernel_entries}.values()))

    def kernel_entries_of(self, info: FunctionInfo) -> list:
        """The kernel entries (``facts.KernelEntry``) running ``info``, in order."""
        index = self.cached("kernel entries by function", lambda: _index(
            (id(e.func), e) for e in self.kernel_entries))
        return index.get(id(info), [])

    def kernel_launches_of(self, info: FunctionInfo) -> list:
        """The kernel launches (``facts.KernelLaunch``) one of whose targets is ``info``, in
        order."""
        index = self.cached("kernel launches by target", lambda: _index(
            (id(t), launch) for launch in self.kernel_launches
            for t in {id(t): t for t in launch.targets}.values()))
        return index.get(id(info), [])

    def kernel_outputs(self, info: FunctionInfo) -> Optional[tuple]:
        """The parameters of a Pallas kernel that receive its output refs, when every launch
        of it says the same: the refs come in the order operands, outputs, scratch buffers
        (api.Callee.outputs_after_operands), so they are those after the launch's operands and
        before the scratch buffers its keywords list. None when unknown."""
        return self.cached(("kernel outputs", id(info)), lambda: self._kernel_outputs(info))

    def kernel_ref_params(self, info: FunctionInfo) -> tuple:
        """The positional parameters of a Pallas kernel that receive refs, in order (not those
        bound by functools.partial, nor configuration: see _mark_kernel)."""
        bound = self._pallas_kernels.get(id(info), set())
        return tuple(p.name for p in info.params
                     if p.kind in ("pos", "posonly") and p.name not in bound)

    def _kernel_outputs(self, info: FunctionInfo) -> Optional[tuple]:
        entries = self.kernel_entries_of(info)
        if not entries or not all(e.callee.outputs_after_operands for e in entries):
            return None
        bound = self._pallas_kernels.get(id(info), set())
        if any(p.kind == "vararg" for p in info.params):
            return None
        params = [p.name for p in info.params
                  if p.kind in ("pos", "posonly") and p.name not in bound]
        found = None
        for launch in self.kernel_launches_of(info):
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
        decl = self.declarations(info)
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
            if name in scope.summary and self.declarations(scope).get(name) is None:
                return scope
            scope = scope.parent
        return None

    def assigned_values(self, name: str, info: FunctionInfo) -> Optional[list]:
        """The values plain assignments bind ``name`` to in the scope a use of it in
        ``info`` reads (``info`` itself, an enclosing function or the module): None when that
        scope binds it another way too (a parameter, a loop, an import...) or it resolves to
        no scope of the module."""
        scope = info
        if not info.is_module:
            if info.param(name) is not None:
                return None
            if name not in info.summary or name in self.declarations(info):
                scope = self.free_name_scope(name, info)
                if scope is None:
                    return None
        values = self._scope_bindings(scope).get(name)
        return list(values) if values else None

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

    def declarations(self, info: FunctionInfo) -> dict:
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
            where = self._provenance.get(id(ref.node)) if self._provenance else None
            if where:  # another module's ref, or another module's function made it
                return f"{name} was {where}" + \
                    (f" on line {line}" if line and ref.key[0] != "project" else "")
            if line:
                return f"{name} was created on line {line}"
        if ref.origin in ("param", "pallas"):
            owner = ref.scope.name if ref.scope else "the function"
            if ref.origin == "pallas" and ref.scope is not None and \
                    ref.scope.has_role(api.Role.INDEX_MAP):
                owner = "the lambda" if ref.scope.is_lambda else owner
                return f"{name} is a scalar-prefetch ref of {owner}, a BlockSpec index map"
            if ref.origin == "pallas" and self._provenance:
                where = self.provenance(ref.scope)  # another module made it a kernel
                if where:
                    return f"{name} is a kernel ref: {where}"
            where = self._provenance.get(id(ref.node)) if self._provenance and \
                ref.origin == "param" else None
            if where:  # another module's call gives it a ref
                return f"{name} is a ref parameter of {owner}: {where}"
            return f"{name} is a ref parameter of {owner}"
        return ""

    def created_at(self, ref: RefVal) -> str:
        """Where a created ref was made, for messages: ``on line 4``, or ``in lib.py:4`` for
        a ref another module exports ("" when unknown)."""
        if ref.node is None:
            return ""
        where = self._provenance.get(id(ref.node)) if self._provenance else None
        if where and ref.key[0] == "project":
            return where[len("created "):]
        line = self.line_of(ref.node)
        return f"on line {line}" if line else ""

    def line_of(self, node: cst.CSTNode) -> Optional[int]:
        pos = self.position(node)
        return pos[0] if pos else None

    def text_of(self, node: cst.CSTNode) -> str:
        """The source text of ``node``, with its own parentheses, stripped (for messages).

        On libcst's own tree, ``module.code_for_node``; on the tree built from the stdlib
        ``ast`` (reflint.fasttree, which has default whitespace and no parentheses or
        comments), the same text read from the source by the node's ``ast`` positions."""
        text = getattr(self._positions, "text", None)
        if text is not None:
            found = text(node)
            if found is not None:
                return found.strip()
        return self.module.code_for_node(node).strip()

    def position(self, node: cst.CSTNode):
        """(line, column, end_line, end_column), 1-based columns; computed lazily."""
        if self._positions is None:
            self._positions = _positions_of(self.module)
        rng = self._positions.get(node)
        if rng is None:
            return None
        return (rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)


def _index(pairs) -> dict:
    """key -> the values paired with it, in order."""
    out: dict = {}
    for key, value in pairs:
        out.setdefault(key, []).append(value)
    return out
