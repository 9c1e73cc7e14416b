"""Stage two of the pre-filter: can any rule fire in this file? Decided on the stdlib ``ast``.

The textual pre-filter (``engine.prefilter``) keeps every file that spells a rule's trigger
words, and in a JAX code base that is most files: REF012 and REF013 need only a transform or an
array function plus an item or attribute assignment. libcst's parse costs about 55 µs a line
here, the stdlib parser about 7, so every kept file is first read with ``ast`` and asked the
questions below; it is parsed with libcst and analysed only if one answer is yes.

Each answer over-approximates what ``reflint.analysis`` can produce, so a file the gate rules
out cannot have a finding (``tests/test_gate.py`` compares the findings with the gate on and off
on every fixture and example, and the gate's verdict with the analysis' own facts on real code):

* **Refs** (REF001-REF011, REF014, and REF013/REF015 through them): the analysis holds a Ref
  only if the file uses an API of ``api.REF_SOURCES`` (or passes ``ref=``/``is_hijax=`` to an
  API of ``api.REF_KEYWORD_SOURCES``, a Flax Variable, or to a callee that is not an import
  chain): a constructor, ``to_refs``, Flax's ref switches, a Pallas
  entry point (its kernels take refs), or the ``Ref`` type anywhere it can become an
  annotation (not as an ``isinstance``/``issubclass`` argument or a comparison operand). Names
  are resolved through the file's imports as the analysis resolves them: ``import jax as J;
  J.new_ref`` counts, a user's own ``new_ref`` does not. A module object used as a value
  (``np_ = jnp``, ``f(jax)``) or a star import may reach any API: then the file is analysed.
* **REF015**: a name or imported name whose longest known prefix is missing or deprecated at
  the target version.
* **REF012**: an API that runs Python once per trace (``jit``, ``vmap``, ``pmap``,
  ``shard_map``, a control-flow body, a Pallas kernel) is used, and a function that may be
  traced (decorated by such an API or a local decorator, or whose value may go where the
  analysis follows it, see ``_FunctionValues``; and what those call by name) assigns an item
  of, or calls ``.append``-like methods on, a free name that an enclosing scope binds to a
  Python container; or sets an attribute of a free name (in a file that defines a class); or
  is such a method and sets an attribute of its first parameter.
* **REF013**: an item is assigned on a name, attribute or expression that may hold a JAX Array
  as the analysis sees one. Values are followed the way the analysis follows them (names
  resolved by scope, attributes by name): an expression may hold an Array if it uses a JAX
  array function, a ref primitive or a control-flow call, a name or attribute bound to such an
  expression, or calls a variable, attribute or container holding an array function
  (``op = jnp.add``); a parameter annotated with the Array type holds one. The analysis never
  carries an Array into a parameter of a function it calls, nor out of a function's `return`
  (``values.is_interesting``), so neither does the gate: the result of a local function is no
  Array. The one parameter REF013 reports is that of a traced function every call of which
  binds an Array (``_traced_array_param``, the item assignment on the parameter itself): the
  gate keeps such an assignment when a call with an Array argument may reach its function,
  by name, as a method of that name, through a variable or parameter (any function whose
  value the analysis may follow there), or given to an API that calls it; an imported
  function the analysis does not know and a builtin call nothing, and a function whose
  decorator binds its name to nothing is reached by no call.

The gate never decides that a file has findings, only that it cannot, which keeps it simple:
no control flow, no call-site matching of arguments to parameters. Its one shortcut is a yes:
a ref source called through an import of the module's own code (``pl.pallas_call(``) is
found in the text, without the walk (``_spells_ref_source``); a yes costs at most an
analysis, so it need not be exact.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from . import api

# Every table below is the registry's (reflint.api), as the analysis reads it.
# APIs under which Python code runs once per trace: rules/traced_state_leak.py's LEAK_KINDS.
LEAK_APIS = api.ONCE_PER_TRACE_APIS
# Canonical APIs whose result may be an Array (besides the modules of api.JAX_ARRAY_MODULES;
# a control-flow call's result never is one to the analysis).
_ARRAY_APIS = api.ARRAY_RESULT_APIS
# APIs that call the functions passed to them (call-site bindings of those functions).
_CALLING_APIS = api.CALLING_APIS
# APIs that, as a bare decorator, keep the function reachable (the analysis binds the name to
# a transformed function or a kernel launcher, or runs the body).
_DECORATOR_APIS = api.DECORATOR_APIS
# Decorators that give back the function they decorate (`@functools.wraps(fn)`,
# `@jax.named_scope(...)`): the analysis binds the name as if undecorated.
_WRAPPER_APIS = api.family(api.Family.WRAPPER)
# Of those, the ones whose arguments are configuration (`functools.wraps(rule)` does not call
# or keep `rule` for the analysis).
_CONFIG_WRAPPER_APIS = api.names_where(
    lambda a: a.family is api.Family.WRAPPER and a.factory == "always")
_METHOD_DECORATORS = frozenset({"staticmethod", "classmethod"})
_CONTAINER_CALLS = frozenset(q.rsplit(".", 1)[1] for q in api.CONTAINER_CONSTRUCTORS)
_WRAPPER_RECEIVERS = frozenset({"self", "cls"})  # of api.INHERITED_WRAPPERS
_PASS_THROUGH_CALLS = frozenset({"tuple", "list"})  # builtins returning their argument's items
# API calls whose result holds their argument's items, by the attribute they are called as
# (`lax.stop_gradient(tree)`): the registry's, matched conservatively on the last name.
_PASS_THROUGH_ATTRS = frozenset({api.STOP_GRADIENT})
_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
_REF_KEYWORDS = api.REF_KEYWORDS
_LEAK_WORDS = frozenset(api.spelled_names(LEAK_APIS)) | frozenset(
    name for name, q in api.INHERITED_WRAPPERS.items() if api.CANONICAL.get(q) in LEAK_APIS)
_BUILTINS = frozenset(dir(builtins))

# Every proper prefix of a name the analysis knows: a module object that may reach an API.
_PREFIXES: frozenset = frozenset(
    ".".join(qn.split(".")[:i])
    for qn in list(api.CANONICAL) + list(api.AVAILABILITY)
    + [m + "x" for m in api.JAX_ARRAY_MODULES]
    for i in range(1, qn.count(".") + 1)
)

_IDENT = re.compile(r"[A-Za-z_]\w*")

# Contexts of a name: _ANNOTATION is a parameter's or a class field's (where the analysis
# reads the Ref type), _OTHER_ANNOTATION a return's or a variable's (where it does not).
_NORMAL, _ANNOTATION, _TYPE_TEST, _BUILTIN_ARG, _CALLEE, _OTHER_ANNOTATION = range(6)
# Contexts in which a name's value goes nowhere a call could receive it.
_NO_FLOW = frozenset({_ANNOTATION, _TYPE_TEST, _OTHER_ANNOTATION})


class _Scope:
    """A module, class, function or lambda body and what the gate needs from it."""

    __slots__ = ("array_params", "attr_writes", "bindings", "calls", "classes", "containers",
                 "decorators", "defs", "free_decl", "imports", "is_method", "item_writes",
                 "kind", "name", "params", "parent", "passed_to", "returns", "store_calls")

    def __init__(self, kind, parent, name="", is_method=False):
        self.kind = kind  # "module", "class", "function", "lambda"
        self.parent = parent
        self.name = name
        self.is_method = is_method
        self.decorators: list = []  # _decorator_key of each
        self.passed_to = None  # a lambda written as a call's argument: (callee, scope)
        self.params: list = []
        # Parameters annotated with a name spelled like the Array type (`x: jax.Array`).
        self.array_params: frozenset = frozenset()
        self.bindings: dict = {}  # name -> [_Expr or None]
        self.containers: set = set()  # names bound here to a Python container
        self.defs: dict = {}  # name -> [_Scope]
        self.classes: set = set()
        self.imports: set = set()
        self.free_decl: set = set()  # global / nonlocal names
        self.item_writes: list = []  # names N of `N[...] = ...`
        self.attr_writes: list = []  # names N of `N.attr = ...`
        self.store_calls: list = []  # names N of `N.append(...)`
        self.calls: set = set()  # simple names called: `f(...)`, `x.f(...)`
        self.returns: list = []  # _Expr of return values (a lambda's body)

    def binds(self, name: str) -> bool:
        return name in self.bindings or name in self.defs or name in self.classes or \
            name in self.imports or name in self.params

    def is_free(self, name: str) -> bool:
        return name in self.free_decl or not self.binds(name)


# An _Expr's field that nothing was added to: one shared empty set, replaced by a set of its
# own at the first addition (most expressions hold a name or two and nothing else).
_NO: frozenset = frozenset()


class _Expr:
    """What a value may come from: import chains, names (with the scope that reads them),
    attribute names, called names, and calls of call results. Each set is ``_NO`` until
    something is added to it; the defaults are the class's (an instance is made without an
    ``__init__`` to run: the gate makes one per assigned value and call argument)."""

    chains = _NO
    names = _NO  # (scope, name)
    attrs = _NO
    name_calls = _NO  # (scope, name) of `f(...)`
    attr_calls = _NO  # name of `x.f(...)`
    opaque_call = False  # `jit(f)(x)`, `fs[0](x)`
    keys = None  # names resolved to (id(defining scope), name), computed once


class _Walker:
    def __init__(self, roots: set):
        self.roots = roots
        self.imports: dict = {}  # local name -> set of qualified names
        self.star = False
        # (dotted, ctx, is_value, scope) for chains whose root may be an import name
        self.chains: set = set()
        self.scopes: list = []
        self.module = _Scope("module", None)
        self.scope = self.module
        self.func_names: dict = {}  # def name -> [_Scope]
        self.class_count = 0
        self.namespace_calls = 0  # calls named like an attribute bag's constructor
        self.class_fields: set = set()
        # Names and attributes loaded other than as a callee, a type test's operand, in an
        # annotation or as a direct argument of a call (those are in `passed`, decided once
        # the file's imports are known): where a function's value may go (_FunctionValues).
        self.flow_refs: set = set()
        self.passed: list = []  # (name, callee expression, scope)
        self.inert = False  # walking a direct argument of a call: loads go to `passed`
        self.attr_bindings: dict = {}  # attribute name -> [_Expr or None]
        self.item_bases: list = []  # ("name", scope, N) / ("attr", root (scope, N), attr) /
        # ("expr", _Expr, None)
        # (kind: "name", "attr" or "opaque"; the callee's name; its dotted spelling if rooted at
        # an import name; [_Expr] of its arguments; the scope) of each call with arguments.
        self.calls: list = []
        self.exprs: list = []  # stack of _Expr accumulators
        # Calls passing one of api.REF_KEYWORDS (`nnx.Param(x, ref=True)`): (chain, scope), or
        # True when such a call's callee is not a chain of the imports.
        self.ref_keyword_calls: list = []
        # An expression statement `X.at[i].set(v)` (REF023: the update is dropped).
        self.discarded = False
        # Calls of a name spelled like an API tracing once per call (`jax.jit(...)`,
        # `lax.cond(...)`): (chain, scope, any positional argument, the dotted spelling of
        # each argument, None where it is not a dotted name) (REF012: _leak_calls_inert).
        self.leak_calls: list = []

    def release(self) -> None:
        """Break the cycles between scopes and the expressions that read them, so everything
        the walk built is freed at once, not by a pass of the cyclic garbage collector."""
        for scope in [self.module, *self.scopes]:
            scope.bindings = scope.defs = scope.returns = scope.parent = None
        self.__dict__.clear()

    # -- recording -----------------------------------------------------------------------

    def _note_chain(self, dotted: str, ctx: int, is_value: bool) -> None:
        self.chains.add((dotted, ctx, is_value, self.scope))
        for e in self.exprs:
            if e.chains is _NO:
                e.chains = {dotted}
            else:
                e.chains.add(dotted)

    def _bind(self, name: str, value, node=None, scope=None) -> None:
        scope = scope or self.scope
        scope.bindings.setdefault(name, []).append(value)
        if node is not None and _is_container(node):
            scope.containers.add(name)

    def read(self, node, ctx=_NORMAL) -> None:
        """Walk ``node`` for what it mentions, not for a value anything is bound to."""
        saved = self.exprs
        self.exprs = []
        try:
            self.expr(node, ctx)
        finally:
            self.exprs = saved

    def summary(self, node, ctx=_NORMAL, isolated=False) -> _Expr:
        """Walk ``node`` collecting what its value may come from. Every accumulator on the
        stack sees what this one sees, unless ``isolated`` (a call's arguments do not flow
        into the call's result)."""
        e = _Expr()
        saved = self.exprs
        self.exprs = [e] if isolated else saved + [e]
        try:
            self.expr(node, ctx)
        finally:
            self.exprs = saved
        return e

    # -- statements ----------------------------------------------------------------------

    def body(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        t = type(s)
        if t is ast.Expr:
            if not self.discarded and _is_at_update(s.value):
                self.discarded = True
            self.read(s.value)
        elif t is ast.Assign:
            if type(s.value) is ast.Name and all(type(tg) is ast.Subscript for tg in s.targets):
                # `rules[p] = f`: the analysis keeps no value stored into an item (REF012).
                saved, self.inert = self.inert, True
                try:
                    v = self.summary(s.value)
                finally:
                    self.inert = saved
            else:
                v = self.summary(s.value)
            for tg in s.targets:
                self.target(tg, v, s.value)
        elif t is ast.AugAssign:
            v = self.summary(s.value)
            self.read(s.target)  # `x += y` reads x
            if type(s.target) is ast.Name:
                v.names = _plus(v.names, (self.scope, s.target.id))
            self.target(s.target, v, None)
        elif t is ast.AnnAssign:
            self.read(s.annotation, _OTHER_ANNOTATION)
            if s.value is not None:
                self.target(s.target, self.summary(s.value), s.value)
            elif type(s.target) is not ast.Name:
                self.target(s.target, None, None)
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef):
            self.function(s)
        elif t is ast.ClassDef:
            self.class_def(s)
        elif t is ast.Return:
            if s.value is not None:
                self.scope.returns.append(self.summary(s.value))
        elif t in (ast.For, ast.AsyncFor):
            self.target(s.target, self.summary(s.iter), None)
            self.body(s.body)
            self.body(s.orelse)
        elif t in (ast.With, ast.AsyncWith):
            for item in s.items:
                v = self.summary(item.context_expr)
                if item.optional_vars is not None:
                    self.target(item.optional_vars, v, None)
            self.body(s.body)
        elif t is ast.Import:
            for a in s.names:
                local = a.asname or a.name.split(".")[0]
                self.imports.setdefault(local, set()).add(a.name if a.asname else local)
                self.scope.imports.add(local)
        elif t is ast.ImportFrom:
            for a in s.names:
                if a.name == "*":
                    self.star = True
                    continue
                local = a.asname or a.name
                if not s.level and s.module:
                    self.imports.setdefault(local, set()).add(f"{s.module}.{a.name}")
                self.scope.imports.add(local)  # relative ones: names the analysis cannot see
        elif t is ast.If or t is ast.While:
            self.read(s.test)
            self.body(s.body)
            self.body(s.orelse)
        elif t is ast.Pass or t is ast.Break or t is ast.Continue:
            pass
        elif t is ast.Raise:
            if s.exc is not None:
                self.read(s.exc)
            if s.cause is not None:
                self.read(s.cause)
        elif t in (ast.Global, ast.Nonlocal):
            self.scope.free_decl.update(s.names)
        elif t is ast.Try or t is getattr(ast, "TryStar", None):
            self.body(s.body)
            for h in s.handlers:
                if h.type is not None:
                    self.read(h.type, _TYPE_TEST)
                if h.name:
                    self._bind(h.name, None)
                self.body(h.body)
            self.body(s.orelse)
            self.body(s.finalbody)
        else:
            # Assert, Delete, Match, ...
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.stmt):
                    self.stmt(child)
                elif isinstance(child, ast.expr):
                    self.read(child)
                elif isinstance(child, ast.match_case):
                    self.match_case(child)

    def match_case(self, case) -> None:
        self.pattern(case.pattern)
        if case.guard is not None:
            self.read(case.guard)
        self.body(case.body)

    def pattern(self, p) -> None:
        """Capture names are bound; value and class expressions are read."""
        for name, value in ast.iter_fields(p):
            if isinstance(value, ast.expr):
                # `case AbstractRef():` is a type test.
                self.read(value, _TYPE_TEST if name == "cls" else _NORMAL)
            elif isinstance(value, ast.pattern):
                self.pattern(value)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, ast.expr):
                        self.read(v)
                    elif isinstance(v, ast.pattern):
                        self.pattern(v)
            elif isinstance(value, str) and name in ("name", "rest"):
                self._bind(value, None)

    def class_def(self, s) -> None:
        self.class_count += 1
        for d in s.decorator_list:
            self.read(d)
        for b in s.bases:
            self.read(b)
        for k in s.keywords:
            self.read(k.value)
        self.scope.classes.add(s.name)
        scope = _Scope("class", self.scope, s.name)
        self.scopes.append(scope)
        outer, self.scope = self.scope, scope
        try:
            for b in s.body:
                if type(b) is ast.Assign:  # class attributes: `x = jnp.zeros(3)`
                    v = self.summary(b.value)
                    for tg in b.targets:
                        if type(tg) is ast.Name:
                            self.attr_bindings.setdefault(tg.id, []).append(v)
                            self.class_fields.add(tg.id)
                        self.target(tg, v, b.value)
                elif type(b) is ast.AnnAssign and type(b.target) is ast.Name:
                    self.read(b.annotation, _ANNOTATION)
                    self.class_fields.add(b.target.id)
                    if b.value is not None:
                        v = self.summary(b.value)
                        self.attr_bindings.setdefault(b.target.id, []).append(v)
                        self.target(b.target, v, b.value)
                else:
                    self.stmt(b)
        finally:
            self.scope = outer

    def target(self, tg, value, node, scope=None) -> None:
        t = type(tg)
        if t is ast.Name:
            self._bind(tg.id, value, node, scope)
        elif t in (ast.Tuple, ast.List):
            for e in tg.elts:
                self.target(e, value, None, scope)
        elif t is ast.Starred:
            self.target(tg.value, value, None, scope)
        elif t is ast.Subscript:
            base = tg.value
            self.read(base)
            self.read(tg.slice)
            root = base
            while type(root) is ast.Subscript:
                root = root.value
            if type(root) is ast.Name:
                self.item_bases.append(("name", self.scope, root.id))
                if type(base) is ast.Name:
                    self.scope.item_writes.append(base.id)
            elif type(root) is ast.Attribute:
                inner = root
                while type(inner) is ast.Attribute:
                    inner = inner.value
                key = (self.scope, inner.id) if type(inner) is ast.Name else None
                self.item_bases.append(("attr", key, root.attr))
            else:
                self.item_bases.append(("expr", self.summary(root), None))
        elif t is ast.Attribute:
            self.read(tg.value)
            self.attr_bindings.setdefault(tg.attr, []).append(value)
            if type(tg.value) is ast.Name:
                self.scope.attr_writes.append(tg.value.id)
        else:
            self.read(tg)

    def function(self, node) -> _Scope:
        is_lambda = type(node) is ast.Lambda
        a = node.args
        for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
            self.read(d)
        params = [p for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
                  if p is not None]
        decorators = []
        if not is_lambda:
            for d in node.decorator_list:
                key = _decorator_key(d)
                decorators.append(key)
                if key[0] == "ref":
                    # `@f.def_vmap`: the decorator is called, not passed (REF012).
                    saved, self.inert = self.inert, True
                    try:
                        self.read(d)
                    finally:
                        self.inert = saved
                else:
                    self.read(d)
            for p in params:
                if p.annotation is not None:
                    self.read(p.annotation, _ANNOTATION)
            if node.returns is not None:
                self.read(node.returns, _OTHER_ANNOTATION)
        scope = _Scope("lambda" if is_lambda else "function", self.scope,
                       "<lambda>" if is_lambda else node.name,
                       is_method=self.scope.kind == "class" and not is_lambda)
        scope.decorators = decorators
        scope.params = [p.arg for p in params]
        scope.array_params = frozenset(
            p.arg for p in params if p.annotation is not None and
            _annotation_word(p.annotation) in _ARRAY_TYPE_WORDS)
        self.scopes.append(scope)
        if not is_lambda:
            self.scope.defs.setdefault(node.name, []).append(scope)
            self.func_names.setdefault(node.name, []).append(scope)
        outer, outer_exprs = self.scope, self.exprs
        self.scope, self.exprs = scope, []
        try:
            if is_lambda:
                scope.returns.append(self.summary(node.body))
            else:
                self.body(node.body)
        finally:
            self.scope, self.exprs = outer, outer_exprs
        return scope

    # -- expressions ---------------------------------------------------------------------

    def expr(self, node, ctx=_NORMAL) -> None:
        t = type(node)
        if t is ast.Constant:
            if ctx == _ANNOTATION and type(node.value) is str:
                self._string_annotation(node.value)
        elif t is ast.Name:
            if self.exprs:
                key = (self.scope, node.id)
                for e in self.exprs:
                    if e.names is _NO:
                        e.names = {key}
                    else:
                        e.names.add(key)
            if not self.inert and ctx not in _NO_FLOW:
                self.flow_refs.add(node.id)
            if node.id in self.roots:
                self._note_chain(node.id, ctx, ctx != _BUILTIN_ARG and ctx != _TYPE_TEST)
        elif t is ast.Attribute:
            self.attribute(node, ctx, False)
        elif t is ast.Call:
            self.call(node)
        elif t is ast.Compare:
            self.expr(node.left, _TYPE_TEST)
            for c in node.comparators:
                self.expr(c, _TYPE_TEST)
        elif t is ast.Lambda:
            self.function(node)
        elif t in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            for g in node.generators:
                # The comprehension's variables are its own: bound nowhere the analysis of
                # an enclosing function would see them.
                self.expr(g.iter)
                self.expr(g.target)
                for cond in g.ifs:
                    self.expr(cond)
            if t is ast.DictComp:
                self.expr(node.key)
                self.expr(node.value)
            else:
                self.expr(node.elt)
        elif t is ast.NamedExpr:
            v = self.summary(node.value)
            if v.names:
                for e in self.exprs:
                    e.names = _union(e.names, v.names)
            scope = self.scope
            while scope.kind == "lambda" and scope.parent is not None:
                scope = scope.parent
            self.target(node.target, v, node.value, scope)
        elif t is ast.Subscript:
            self.expr(node.value, ctx)
            if ctx == _ANNOTATION or ctx == _OTHER_ANNOTATION:
                self.expr(node.slice, ctx)
            else:
                # The index does not flow into the value (an item of the base, or an Array
                # if the base is one).
                self.read(node.slice)
        elif t is ast.BinOp:
            self.expr(node.left, ctx)
            self.expr(node.right, ctx)
        elif t is ast.Tuple or t is ast.List or t is ast.Set:
            for child in node.elts:
                self.expr(child, ctx)
        elif t is ast.Dict:
            for child in node.keys:
                if child is not None:
                    self.expr(child)
            for child in node.values:
                self.expr(child)
        elif t is ast.UnaryOp or t is ast.Starred:
            self.expr(node.operand if t is ast.UnaryOp else node.value, ctx)
        elif t is ast.BoolOp:
            for child in node.values:
                self.expr(child, ctx)
        elif t is ast.IfExp:
            self.read(node.test)
            self.expr(node.body)
            self.expr(node.orelse)
        elif t is ast.JoinedStr:
            for child in node.values:
                if type(child) is ast.FormattedValue:
                    self.read(child.value)
        elif t is ast.Slice:
            for child in (node.lower, node.upper, node.step):
                if child is not None:
                    self.expr(child)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
                elif isinstance(child, ast.comprehension):  # pragma: no cover
                    self.expr(child.iter)

    def attribute(self, node, ctx, callee) -> Optional[str]:
        """A dotted chain; returns its spelling if it is rooted at an import name."""
        parts = [node.attr]
        inner = node.value
        while type(inner) is ast.Attribute:
            parts.append(inner.attr)
            inner = inner.value
        # The analysis reads an attribute from an instance of a local class (by its name), a
        # class or a module, never from an Array: the base does not flow into the value.
        for e in self.exprs:
            if e.attrs is _NO:
                e.attrs = {node.attr}
            else:
                e.attrs.add(node.attr)
        flows = not self.inert and ctx not in _NO_FLOW
        if flows:
            self.flow_refs.update(parts[1:])
            if not callee:
                self.flow_refs.add(node.attr)
        if type(inner) is ast.Name:
            if flows:
                self.flow_refs.add(inner.id)
            if inner.id in self.roots or inner.id in _WRAPPER_RECEIVERS and \
                    len(parts) == 1 and parts[0] in api.INHERITED_WRAPPERS:
                parts.append(inner.id)
                dotted = ".".join(reversed(parts))
                self._note_chain(dotted, ctx,
                                 not callee and ctx != _BUILTIN_ARG and ctx != _TYPE_TEST)
                return dotted
        else:
            self.expr(inner, ctx)
        return None

    def call(self, node) -> None:
        f = node.func
        ft = type(f)
        chain = None
        if ft is ast.Name:
            kind, callee = "name", f.id
            if f.id in self.roots:
                chain = f.id
                self._note_chain(f.id, _CALLEE, False)
            if self.exprs:
                key = (self.scope, f.id)
                for e in self.exprs:
                    e.name_calls = _plus(e.name_calls, key)
        elif ft is ast.Attribute:
            kind, callee = "attr", f.attr
            chain = self.attribute(f, _CALLEE, True)
            for e in self.exprs:
                e.attr_calls = _plus(e.attr_calls, f.attr)
            if f.attr in api.STORE_METHODS and type(f.value) is ast.Name:
                self.scope.store_calls.append(f.value.id)
            elif f.attr in api.STORE_METHODS and type(f.value) is ast.Attribute and \
                    type(f.value.value) is ast.Name:
                # `self.history.append(x)`: a container held by an object (REF012), asked
                # as an attribute write of `self`.
                self.scope.attr_writes.append(f.value.value.id)
        else:
            kind, callee = "opaque", None
            self.expr(f)
            for e in self.exprs:
                e.opaque_call = True
        if callee is not None:
            self.scope.calls.add(callee)
            if callee in _NAMESPACE_NAMES:
                self.namespace_calls += 1
        if node.keywords and any(k.arg in _REF_KEYWORDS for k in node.keywords):
            self.ref_keyword_calls.append((chain, self.scope) if chain is not None else True)
        if chain is not None and chain.rpartition(".")[2] in _LEAK_WORDS:
            self.leak_calls.append((chain, self.scope, bool(node.args), tuple(
                None if type(a) is ast.Starred else _dotted(a)
                for a in node.args if not _literal(a)) + tuple(
                None if k.arg is None else _dotted(k.value)
                for k in node.keywords if not _literal(k.value))))
        # A module object passed to a builtin (`hasattr(jax, "new_ref")`) goes nowhere the
        # analysis follows; `isinstance`/`issubclass` arguments are type tests.
        arg_ctx = _NORMAL
        if ft is ast.Name and f.id in _BUILTINS:
            arg_ctx = _TYPE_TEST if f.id in _TYPE_TESTS else _BUILTIN_ARG
        # A direct argument (a name, dotted name or lambda) of a call: whether the callee may
        # carry it into a trace is decided once the file's imports are known (REF012).
        args = []
        for a in node.args:
            t = type(a)
            if t is ast.Name:
                args.append(self._name_arg(a.id, arg_ctx, f))
            elif t is not ast.Constant:
                args.append(self._arg(a, t, arg_ctx, f))
        for k in node.keywords:
            a = k.value
            t = type(a)
            if t is ast.Name:
                args.append(self._name_arg(a.id, _NORMAL, f))
            elif t is not ast.Constant:
                args.append(self._arg(a, t, _NORMAL, f))
        if ft is ast.Name and f.id in _PASS_THROUGH_CALLS or \
                ft is ast.Attribute and f.attr in _PASS_THROUGH_ATTRS:
            for e in self.exprs:  # the result holds the argument's items
                for a in args:
                    _merge(e, a)
        if args:
            self.calls.append((kind, callee, chain, args, self.scope))

    def _name_arg(self, name: str, ctx: int, callee) -> _Expr:
        """``summary(Name)`` of a call's argument, without the walk."""
        e = _Expr()
        e.names = {(self.scope, name)}
        if name in self.roots:
            self.chains.add((name, ctx, ctx != _BUILTIN_ARG and ctx != _TYPE_TEST, self.scope))
            e.chains = {name}
        if ctx != _TYPE_TEST:
            self.passed.append((name, callee, self.scope))
        return e

    def _arg(self, a, t, ctx, callee) -> _Expr:
        if t is ast.Lambda:
            # What a lambda's value may come from is itself: nothing the gate follows.
            saved, self.exprs = self.exprs, []
            try:
                self.function(a).passed_to = (callee, self.scope)
            finally:
                self.exprs = saved
            return _Expr()
        if t is not ast.Attribute or _dotted_root(a) is None:
            return self.summary(a, ctx, isolated=True)
        if ctx != _TYPE_TEST:
            self.passed.append((a.attr, callee, self.scope))
        saved, self.inert = self.inert, True
        try:
            return self.summary(a, ctx, isolated=True)
        finally:
            self.inert = saved

    def _string_annotation(self, text: str) -> None:
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        self.expr(tree.body, _ANNOTATION)


def _merge(outer: _Expr, inner: _Expr) -> None:
    outer.chains = _union(outer.chains, inner.chains)
    outer.names = _union(outer.names, inner.names)
    outer.attrs = _union(outer.attrs, inner.attrs)
    outer.name_calls = _union(outer.name_calls, inner.name_calls)
    outer.attr_calls = _union(outer.attr_calls, inner.attr_calls)
    outer.opaque_call = outer.opaque_call or inner.opaque_call


def _plus(field, item):
    """An _Expr's set ``field`` with ``item`` added (a set of its own if it was ``_NO``)."""
    if field is _NO:
        return {item}
    field.add(item)
    return field


def _union(field, items):
    """An _Expr's set ``field`` with ``items`` added (a set of its own if it was ``_NO``)."""
    if not items:
        return field
    if field is _NO:
        return set(items)
    field |= items
    return field


def _is_at_update(node) -> bool:
    """``X.at[i].set(v)`` (any method of api.AT_UPDATE_METHODS)."""
    return type(node) is ast.Call and type(node.func) is ast.Attribute and \
        node.func.attr in api.AT_UPDATE_METHODS and type(node.func.value) is ast.Subscript and \
        type(node.func.value.value) is ast.Attribute and node.func.value.value.attr == "at"


def _dotted(node) -> Optional[str]:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _literal(node) -> bool:
    """A constant, or a tuple, list, set or dict of them (`static_argnames=("n",)`)."""
    t = type(node)
    if t is ast.Constant:
        return True
    if t is ast.Tuple or t is ast.List or t is ast.Set:
        return all(_literal(e) for e in node.elts)
    if t is ast.Dict:
        return all(k is not None and _literal(k) for k in node.keys) and \
            all(_literal(v) for v in node.values)
    if t is ast.UnaryOp:
        return _literal(node.operand)
    return False


def _dotted_root(node) -> Optional[str]:
    while type(node) is ast.Attribute:
        node = node.value
    return node.id if type(node) is ast.Name else None


def _decorator_key(d) -> tuple:
    """("ref", dotted) for ``@a.b``, ("call", dotted) for ``@a.b(...)``; dotted is None for
    any other expression."""
    if type(d) is ast.Call:
        return ("call", _dotted(d.func))
    return ("ref", _dotted(d))


def _is_container(node) -> bool:
    t = type(node)
    if t in (ast.List, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp):
        return True
    if t is ast.Call:
        f = node.func
        name = f.id if type(f) is ast.Name else f.attr if type(f) is ast.Attribute else None
        return name in _CONTAINER_CALLS
    return False


def _import_roots(source: str) -> set:
    """The identifiers on the lines of every ``import`` (with a parenthesized or backslash
    continuation): a superset of the names imports bind. A plain string scan: a regex over the
    whole text is ten times slower here."""
    roots: set = set()
    find = source.find
    i = find("import")
    while i >= 0:
        j = find("\n", i)
        if j < 0:
            j = len(source)
        segment = source[i:j]
        if "(" in segment:
            k = find(")", i)
            if k > 0:
                j = k
                segment = source[i:k]
        while segment.rstrip().endswith("\\") and j < len(source):
            k = find("\n", j + 1)
            j = k if k >= 0 else len(source)
            segment = source[i:j]
        roots.update(_IDENT.findall(segment))
        i = find("import", j)
    return roots


# The rules that can report in a file without Refs, and the answer that says they may.
REFLESS_RULES = {"REF012": "leak", "REF013": "array_item", "REF015": "unavailable",
                 "REF023": "discarded"}


class Verdict:
    """The gate's answers: what may make a file have findings. An answer is True (maybe),
    False (no) or None (not asked: the file is analysed anyway)."""

    __slots__ = ("array_item", "discarded", "leak", "refs", "unavailable")

    def __init__(self, refs=False, unavailable=False, leak=False, array_item=False,
                 discarded=False):
        self.refs = refs
        self.unavailable = unavailable
        self.leak = leak
        self.array_item = array_item
        self.discarded = discarded

    def __bool__(self) -> bool:
        return bool(self.refs or self.unavailable or self.leak or self.array_item or
                    self.discarded)

    def may_fire(self, code: str) -> bool:
        """Rule ``code`` may report: any rule where there are refs; without, only a rule of
        REFLESS_RULES whose answer is not no. REF023's answer is syntax, asked in every
        file: no dropped update, no finding, refs or not."""
        if code == "REF023" and self.discarded is False:
            return False
        if self.refs:
            return True
        answer = REFLESS_RULES.get(code)
        return answer is not None and getattr(self, answer) is not False

    def __repr__(self) -> str:
        return (f"Verdict(refs={self.refs}, unavailable={self.unavailable}, leak={self.leak}, "
                f"array_item={self.array_item}, discarded={self.discarded})")


_EVERYTHING = Verdict(True, True, True, True, True)


def parse(source: str) -> Optional[ast.Module]:
    """``ast.parse(source)``, or None if the stdlib parser rejects it (libcst decides then: a
    REF900, or syntax newer than this Python's)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# Trees the summary phase parsed whole (reflint.project, ``share_trees``) for the check of the
# same text later in this process or in a child it forks: text -> tree, each taken once
# (``take``). Bounded by the size of their sources (about 60 bytes of tree per character): a
# larger bound costs a large run more than the parses it saves (the forked child copies the
# parent's pages it touches: 2 M characters made `-j 1` over jax/flax/optax/chex 5-10 % slower).
_KEPT: dict = {}
_KEPT_CHARS = [0]
KEEP_MAX_CHARS = 500_000


def room_for(source: str) -> bool:
    """Whether the tree of ``source`` would be kept (else it is not worth parsing whole)."""
    return _KEPT_CHARS[0] + len(source) <= KEEP_MAX_CHARS


def keep(source: str, tree: ast.Module) -> None:
    if room_for(source) and source not in _KEPT:
        _KEPT[source] = tree
        _KEPT_CHARS[0] += len(source)


# The gate's verdicts the summary phase reached on the trees it parsed whole (reflint.project,
# ``decide``), for the check of the same file later in this process or in a child it forks:
# path -> (hash of the text, Verdict). A file the verdict rules out is then decided without
# parsing it again; one it lets through is not asked again.
_DECIDED: dict = {}


def remember(path: str, text_hash: int, verdict: Verdict) -> None:
    _DECIDED[path] = (text_hash, verdict)


def forget(path: str) -> Optional[tuple]:
    """(hash of the text, Verdict) remembered for ``path``, removed (a worker's, sent to its
    parent)."""
    return _DECIDED.pop(path, None)


def recall(path: str, source: str) -> Optional[Verdict]:
    """The verdict the summary phase reached for ``path`` if it read this very text."""
    if _DECIDED:
        got = _DECIDED.get(path)
        if got is not None and got[0] == hash(source):
            return got[1]
    return None


def take(source: str) -> Optional[ast.Module]:
    """The tree kept for ``source`` (forgotten here), else ``parse(source)``."""
    if _KEPT:
        tree = _KEPT.pop(source, None)
        if tree is not None:
            return tree
    return parse(source)


def verdict(source: str, enabled, version: tuple, complete: bool = False,
            tree: Optional[ast.Module] = None,
            traced: frozenset = frozenset()) -> Optional[Verdict]:
    """The gate's answers for ``source`` (whose ``ast`` is ``tree`` when given) given the
    enabled rule codes and the target JAX version, or None if the stdlib parser rejects it.
    Questions are asked cheapest first and, unless ``complete``, only until one answer is yes
    (the file is analysed then anyway). ``traced``: names of the module's top-level functions
    that other modules give to a transform (reflint.project): REF012's question counts them
    traced, as the analysis does (the project gives them the transform's role)."""
    if tree is None:
        tree = parse(source)
        if tree is None:
            return None
    if not complete and _spells_ref_source(source, tree):
        # Refs are a yes (every rule may fire) without the walk. The two answers the rules
        # still read come from the text: a name of REF015's spelled, `at` spelled (REF023).
        return Verdict(refs=True, leak=None, array_item=None,
                       unavailable="REF015" in enabled and
                       api.spells_problem_name(source, version),
                       discarded="REF023" in enabled and _maybe_discarded(source))
    w = _Walker(_import_roots(source))
    try:
        w.body(tree.body)
        return _decide(w, enabled, version, complete, traced)
    except RecursionError:
        return _EVERYTHING
    finally:
        w.release()


_SOURCE_CHAINS = None


def _source_chains() -> dict:
    """Qualified name or module prefix -> the rests that complete it to the spelling of a ref
    source making refs wherever it is used (api.REF_SOURCES but the Ref type, a source only
    as an annotation): ``jax.experimental.pallas`` -> ``pallas_call``, ``core_map`` ...;
    ``jax.new_ref`` -> ``""``."""
    global _SOURCE_CHAINS
    if _SOURCE_CHAINS is None:
        table: dict = {}
        sources = api.REF_SOURCES - {api.REF_TYPE}
        for qn, canon in api.CANONICAL.items():
            if canon in sources:
                parts = qn.split(".")
                for i in range(1, len(parts) + 1):
                    table.setdefault(".".join(parts[:i]), set()).add(".".join(parts[i:]))
        _SOURCE_CHAINS = table
    return _SOURCE_CHAINS


def _spells_ref_source(source: str, tree: ast.Module) -> bool:
    """A ref source called through an import of the module's own code (``pl.pallas_call(``,
    ``jax.new_ref(``, ``new_ref(`` imported from jax): the Refs answer is yes, read from the
    import statements outside functions and classes and a search of the text for those
    spellings, without the walk.

    A yes the walk might not give (the import name shadowed where it is spelled, the
    spelling in a string or a comment) only costs the file an analysis the gate would have
    spared it; a no decides nothing (the walk asks)."""
    imports: dict = {}
    _module_imports(tree.body, imports)
    table = _source_chains()
    spellings = set()
    for local, qns in imports.items():
        for q in qns:
            for rest in table.get(q, ()):
                spellings.add(f"{local}.{rest}" if rest else local)
    if not spellings:
        return False
    # Each spelling's last word found in the text (a substring search, far cheaper than a
    # regex of the spellings), then the dotted name it ends, called (not the name an import
    # statement spells).
    for word in {x.rpartition(".")[2] for x in spellings}:
        end_of = len(word)
        for i in api.whole_words(source, word):
            end = i + end_of
            if source[end:end + 80].lstrip()[:1] != "(":
                continue
            j = i
            while j and (api.word_char(source[j - 1]) or source[j - 1] == "."):
                j -= 1
            if source[j:end] in spellings:
                return True
    return False


_BLOCKS = (ast.If, ast.Try, ast.With) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _module_imports(body: list, out: dict) -> None:
    """Local name -> the qualified names its imports give it, for the import statements of
    the module's own code (in its ``if``/``try``/``with`` blocks too; not in functions)."""
    for st in body:
        t = type(st)
        if t is ast.Import:
            for a in st.names:
                if a.asname:
                    out.setdefault(a.asname, set()).add(a.name)
                else:
                    root = a.name.partition(".")[0]
                    out.setdefault(root, set()).add(root)
        elif t is ast.ImportFrom:
            if st.level or not st.module:
                continue
            for a in st.names:
                if a.name != "*":
                    out.setdefault(a.asname or a.name, set()).add(f"{st.module}.{a.name}")
        elif t in _BLOCKS:
            _module_imports(st.body, out)
            _module_imports(getattr(st, "orelse", ()), out)
            _module_imports(getattr(st, "finalbody", ()), out)
            for h in getattr(st, "handlers", ()):
                _module_imports(h.body, out)


def _maybe_discarded(source: str) -> bool:
    """Whether the text may hold REF023's ``x.at[i].set(v)`` statement: it spells ``at``
    as a word (an identifier outside ASCII may be ``at`` once normalized: a maybe)."""
    return _AT_WORD.search(source) is not None or not source.isascii()


_AT_WORD = re.compile(r"\bat\b")


def _resolve_chain(w: _Walker, dotted: str, scope: _Scope) -> list:
    """The qualified names ``dotted`` may stand for where it is read: its root must be bound
    by an import in the scope a read there sees (not shadowed by a local variable)."""
    root, _, rest = dotted.partition(".")
    if root in _WRAPPER_RECEIVERS and rest in api.INHERITED_WRAPPERS:
        return [api.INHERITED_WRAPPERS[rest]]  # `self.pallas_call`, as the analysis reads it
    if not any(root in s.imports for s in _lookups(scope, root)):
        return []
    return [f"{q}.{rest}" if rest else q for q in w.imports.get(root, ())]


def _decide(w: _Walker, enabled, version: tuple, complete: bool = True,
            traced: frozenset = frozenset()) -> Verdict:
    refs = unavailable = leak_api = False
    leak_values = False  # an API tracing once per call used other than by calling it
    array_chains: set = set()  # spellings (as written) that name an Array producer
    array_annotation = False  # a parameter annotated jax.Array holds an Array (REF013)
    module_values: set = set()
    for dotted, ctx, is_value, scope in w.chains:
        for qn in _resolve_chain(w, dotted, scope):
            if ctx == _ANNOTATION and qn in api.ARRAY_TYPES:
                array_annotation = True
            canon = api.CANONICAL.get(qn)
            if canon is not None:
                # The Ref type makes refs only as a parameter's or class field's annotation
                # (or a name bound to it that is one): not as a type test's argument, not
                # called (`AbstractRef(aval)`), not annotating a return or a variable.
                if canon in api.REF_SOURCES and (canon != api.REF_TYPE or ctx not in (
                        _TYPE_TEST, _CALLEE, _OTHER_ANNOTATION)):
                    refs = True
                if canon in LEAK_APIS:
                    leak_api = True
                    if ctx == _NORMAL or ctx == _CALLEE and \
                            dotted.rpartition(".")[2] not in _LEAK_WORDS:
                        # A value (a decorator, `partial(jax.jit, ...)`), or a call under
                        # another name (`from jax import jit as J`), not in leak_calls.
                        leak_values = True
                if canon in _ARRAY_APIS:
                    array_chains.add(dotted)
            elif api.returns_jax_array(qn):
                if qn.rsplit(".", 1)[-1] not in api.ARRAY_METADATA_FUNCTIONS:
                    array_chains.add(dotted)
            elif is_value and qn in _PREFIXES:
                # A module object used as a value (`xp = jnp`) may reach any API under it.
                module_values.add((dotted, qn))
            if not unavailable and _unavailable(qn, version):
                unavailable = True
    if w.star:
        return _EVERYTHING
    module_arrays = False  # a module value reaches an array function: any call may make one
    for m in _bound_modules(w, module_values):
        reach = _module_reach(m)
        refs = refs or reach.refs
        leak_api = leak_api or reach.leak
        leak_values = leak_values or reach.leak  # `xp.jit(f)`: not a chain of the imports
        module_arrays = module_arrays or reach.arrays
        unavailable = unavailable or any(_unavailable(qn, version) for qn in reach.names)
    for call in w.ref_keyword_calls:  # `nnx.Param(x, ref=True)` makes a ref-holding Variable
        if call is True or any(api.CANONICAL.get(qn) in api.REF_KEYWORD_SOURCES
                               for qn in _resolve_chain(w, call[0], call[1])):
            refs = True
    for qns in w.imports.values():
        if any(_unavailable(qn, version) for qn in qns):
            unavailable = True
    # An answer not asked for (an earlier one was yes) stays None: unknown.
    # REF023: an update dropped by an expression statement (syntax only: answered even
    # where there are refs, which make every other rule a maybe).
    v = Verdict(refs=refs, unavailable=unavailable and "REF015" in enabled, leak=None,
                array_item=None, discarded=w.discarded and "REF023" in enabled)
    if refs or (v.unavailable and not complete):
        return v
    if v.discarded and not complete:
        return v
    v.leak = False
    if traced and "REF012" in enabled:
        v.leak = _leak_possible(w, traced)
        if v.leak and not complete:
            return v
    elif leak_api and "REF012" in enabled:
        v.leak = not _leak_calls_inert(w, leak_values) and _leak_possible(w)
        if v.leak and not complete:
            return v
    v.array_item = False
    if "REF013" in enabled and w.item_bases:
        # An array function used as a value (`op = jnp.add`) may be called through a name.
        values = any(is_value and dotted in array_chains for dotted, _, is_value, _ in w.chains)
        v.array_item = module_arrays or _array_item_possible(w, array_chains, values,
                                                             array_annotation)
    return v


def _bound_modules(w: _Walker, module_values: set) -> set:
    """The modules of ``module_values`` ((spelling, module) used as a value) whose value a
    binding of this module may hold: assigned to a name or an attribute (`xp = jnp`,
    `mods = [jnp, np]`, `self.xp = jnp`), where the analysis reads APIs through it. Given to
    a call (the analysis carries no module into a parameter), returned, or an index, it
    reaches nothing."""
    if not module_values:
        return set()
    bound: set = set()
    for sc in w.scopes + [w.module]:
        for values in sc.bindings.values():
            for e in values:
                if e is not None:
                    bound |= e.chains
    for values in w.attr_bindings.values():
        for e in values:
            if e is not None:
                bound |= e.chains
    return {qn for dotted, qn in module_values if dotted in bound}


class _Reach:
    __slots__ = ("arrays", "leak", "names", "refs")


@functools.lru_cache(maxsize=256)
def _module_reach(module: str) -> _Reach:
    """What the module object ``module``, used as a value, may reach: a ref source, an API
    tracing once per call (REF012), an array function (any of its calls may be one), the
    names of the availability table under it (REF015)."""
    prefix = module + "."
    r = _Reach()
    canon = {c for qn, c in api.CANONICAL.items() if qn.startswith(prefix)}
    r.refs = not canon.isdisjoint(api.REF_SOURCES)
    r.leak = not canon.isdisjoint(LEAK_APIS)
    # An array module under it (`jax` reaches `jax.numpy.`), or it is in one (`jax.numpy.fft`).
    r.arrays = not canon.isdisjoint(_ARRAY_APIS) or any(
        m.startswith(prefix) or prefix.startswith(m) for m in api.JAX_ARRAY_MODULES)
    r.names = tuple(qn for qn in api.AVAILABILITY if qn.startswith(prefix))
    return r


@functools.lru_cache(maxsize=65536)
def _unavailable(qn: str, version: tuple) -> bool:
    """The longest prefix of ``qn`` that the availability table knows is missing or deprecated
    at ``version`` (what REF015 reports)."""
    parts = qn.split(".")
    for i in range(len(parts), 0, -1):
        q = ".".join(parts[:i])
        if q in api.AVAILABILITY:
            return api.availability(q, version)[0] in (api.NO, api.DEPRECATED)
    return False


def _maybe_traced(w: _Walker, escaping: list) -> list:
    """The ``escaping`` functions and, transitively, what they call by name."""
    seen = {id(s) for s in escaping}
    work = [s for s in w.scopes if id(s) in seen]
    while work:
        f = work.pop()
        for name in f.calls:
            for g in w.func_names.get(name, ()):
                if id(g) not in seen:
                    seen.add(id(g))
                    work.append(g)
    return [s for s in w.scopes if id(s) in seen]


def _leak_calls_inert(w: _Walker, leak_values: bool) -> bool:
    """No function of this module can reach an API tracing once per call: each such API is
    only called (not used as a value: a decorator, `partial(jax.jit, ...)`, `t = jax.jit`),
    with a positional argument (`jax.jit(static_argnums=0)` makes a decorator), and every
    argument is a constant or an import's name (`jax.jit(core.evaluate_shape)`), not a
    value of this module's (a local function, a variable, an attribute, a call)."""
    if leak_values:
        return False
    for chain, scope, positional, dotteds in w.leak_calls:
        if not any(api.CANONICAL.get(qn) in LEAK_APIS for qn in _resolve_chain(w, chain, scope)):
            continue
        if not positional:
            return False
        for d in dotteds:
            if d is None or _dotted_values(w, d, scope) is None:
                return False
    return True


def _leak_possible(w: _Walker, traced: frozenset = frozenset()) -> bool:
    """REF012's raw material in a function that may be traced (``traced``: top-level
    functions another module traces, with what they call)."""
    escaping = _leak_escaping(w, _FunctionValues(w))
    if traced:
        escaping = escaping + [s for name in traced for s in w.func_names.get(name, ())
                               if s.parent is w.module]
    for f in _maybe_traced(w, escaping):
        for name in f.item_writes:
            if _maybe_free(f, name) and _outer_container(f, name):
                return True
        for name in f.store_calls:
            if _maybe_free(f, name) and _outer_container(f, name):
                return True
        for name in f.attr_writes:
            if _maybe_free(f, name) and (w.class_count or w.namespace_calls) and \
                    _may_be_instance(w, f, name):
                return True
            if f.is_method and f.params and name == f.params[0] and \
                    any(s is f for s in escaping):
                return True
    return False


def _outer_container(f: _Scope, name: str) -> bool:
    """A scope enclosing ``f`` whose binding of ``name`` a write in ``f`` may reach binds it
    to a Python container (the analysis wants every binding there to be one)."""
    return any(s is not f and name in s.containers for s in _lookups(f, name))


class _FunctionValues:
    """Where the analysis can follow the value of each function of the module.

    It follows a function's value through names, parameters, attributes, containers, returns
    and the calls of local functions and of the APIs it knows; not into an imported function
    it does not know or a builtin (calling those gives nothing), nor through a decorator that
    is neither a transform nor a local function: the decorated name is bound to nothing then
    (``@property``, ``@functools.wraps(f)``; a method's builtin ``@staticmethod`` or
    ``@classmethod`` keeps it), so no call reaches it."""

    def __init__(self, w: _Walker):
        self.w = w
        flow = set(w.flow_refs)
        functions = w.func_names
        for name, callee, scope in w.passed:
            if name in functions and name not in flow and \
                    not _inert_callee(w, _dotted(callee), scope):
                flow.add(name)
        self.flow = flow  # function names whose value may go somewhere the analysis follows
        # Per function scope: (any decorator may be local or unknown, may be a transform of
        # LEAK_APIS, may leave the name bound to nothing).
        self.decorators: dict = {}
        for f in w.scopes:
            if f.decorators:
                local = leak = dead = False
                for kind, dotted in f.decorators:
                    values = _dotted_values(w, dotted, f.parent) if dotted else None
                    if f.parent.kind == "class" and dotted in _METHOD_DECORATORS and \
                            values == {None}:
                        continue  # the builtin: the analysis keeps the method's function
                    if values and None not in values and values <= _WRAPPER_APIS:
                        continue  # `@functools.wraps(fn)`: the function itself
                    if values is None:
                        local = True
                    elif kind == "call":
                        if values != {None}:
                            local = True  # `partial(jit, ...)`, `jit(static_argnums=0)`
                        else:
                            dead = True
                    else:
                        leak = leak or not values.isdisjoint(LEAK_APIS)
                        dead = dead or any(v not in _DECORATOR_APIS for v in values)
                self.decorators[id(f)] = (local, leak, dead)

    def dead(self, f: _Scope) -> bool:
        """The analysis binds ``f``'s name to nothing: no call reaches ``f``."""
        d = self.decorators.get(id(f))
        return d is not None and d[2] and not d[0]

    def escaping(self, f: _Scope) -> bool:
        """``f``'s value may be held by a variable, parameter or attribute and called through
        it, or given to a transform."""
        if f.kind == "lambda":
            p = f.passed_to
            return p is None or not _inert_callee(self.w, _dotted(p[0]), p[1])
        d = self.decorators.get(id(f))
        if d is not None and (d[0] or d[2]):
            return d[0]  # a local decorator receives it; a decorator binding nothing kills it
        return f.name in self.flow


def _leak_escaping(w: _Walker, fv: _FunctionValues) -> list:
    """The functions whose value may reach an API that traces Python once per call (REF012):
    escaping ones (_FunctionValues) and those decorated by such an API or a local decorator."""
    out = []
    for s in w.scopes:
        if s.kind == "lambda" or s.kind == "function":
            d = fv.decorators.get(id(s))
            if d is not None and (d[0] or d[1]) or fv.escaping(s):
                out.append(s)
    return out


def _dotted_values(w: _Walker, dotted: str, scope: _Scope) -> Optional[set]:
    """What the dotted name ``dotted`` read in ``scope`` may be, as canonical API names (None
    for a builtin, an unknown name, a relative import or an imported name the analysis does
    not know); None if it may be a local value (a function, a variable)."""
    root, _, rest = dotted.partition(".")
    for s in _lookups(scope, root):
        if root not in s.imports or root in s.bindings or root in s.defs or \
                root in s.params or root in s.classes:
            return None
    out = {api.CANONICAL.get(f"{q}.{rest}" if rest else q) for q in w.imports.get(root, ())}
    return out or {None}


def _inert_callee(w: _Walker, dotted: Optional[str], scope: _Scope) -> bool:
    """Calling ``dotted`` (a dotted name read in ``scope``; None for any other expression)
    gives the analysis nothing: a builtin, an unknown name or a relative import, or an
    imported function it does not know."""
    if dotted is None:
        return False
    values = _dotted_values(w, dotted, scope)
    return values == {None} or bool(values) and None not in values and \
        values <= _CONFIG_WRAPPER_APIS


_ARRAY_TYPE_WORDS = api.ARRAY_TYPE_WORDS


def _annotation_word(node) -> str:
    """The last name of an annotation as the analysis reads it (``Ref[...]`` -> its value; a
    string annotation's text)."""
    if type(node) is ast.Subscript:
        node = node.value
    if type(node) is ast.Constant and type(node.value) is str:
        text = node.value.strip()
        return text.split("[", 1)[0].rsplit(".", 1)[-1].strip()
    return (_dotted(node) or "").rsplit(".", 1)[-1]


# `types.SimpleNamespace(...)`: the analysis' attribute bags (api.NAMESPACE_CONSTRUCTORS).
_NAMESPACE_NAMES = api.NAMESPACE_WORDS


def _may_be_instance(w: _Walker, scope: _Scope, name: str) -> bool:
    """The free name ``name`` read in ``scope`` may hold an instance of a class of this
    module: a parameter (``self``, an annotated or passed instance), or a variable bound to a
    call of a local class, function, variable or call result, or to another such name; not to
    what an imported API returns (``threading.local()``)."""
    for s in _lookups(scope, name):
        if name in s.params:
            return True
        for e in s.bindings.get(name, ()):
            if e is None:
                continue
            if e.opaque_call or not e.attr_calls.isdisjoint(w.func_names) or \
                    not e.attr_calls.isdisjoint(_NAMESPACE_NAMES) or \
                    any(n in _NAMESPACE_NAMES for _, n in e.name_calls):
                return True
            for sc, n in e.name_calls | e.names:
                for d in _lookups(sc, n):
                    if n in d.classes or n in d.defs or n in d.params or n in d.bindings:
                        return True
    return False


def _maybe_free(f: _Scope, name: str) -> bool:
    """A write to ``name`` in ``f`` may reach a binding outside ``f``: ``name`` is free there,
    or bound there other than as a parameter but also bound in an enclosing scope (a write
    before the local binding, in flow order, reaches the enclosing one in the analysis)."""
    return f.is_free(name) or len(_lookups(f, name)) > 1


def _lookups(scope: _Scope, name: str) -> list:
    """Every scope whose binding of ``name`` a read in ``scope`` may see: the one ``_lookup``
    finds and, unless ``name`` is a parameter there (bound on entry), the next enclosing one
    that binds it, and so on. The analysis is flow-sensitive: a read that comes before any
    local binding (``d[0] = 1`` then ``d = {}``) sees the enclosing scope's value."""
    out = []
    s = _lookup(scope, name)
    while s is not None:
        out.append(s)
        if name in s.params:
            break
        p = s.parent
        while p is not None and p.kind == "class":
            p = p.parent
        s = _lookup(p, name) if p is not None else None
    return out


def _lookup(scope: _Scope, name: str) -> Optional[_Scope]:
    """The scope whose binding of ``name`` a read in ``scope`` sees (class bodies are not
    seen from their methods), or None."""
    if name in scope.free_decl:
        if scope.binds(name):
            # `global d` then `d = ...` here: the analysis reads those bindings in flow order,
            # as local ones (the enclosing scope's come next in _lookups).
            return scope
        scope = scope.parent  # global/nonlocal: an enclosing scope (at worst, too far out)
        while scope is not None and scope.kind == "class":
            scope = scope.parent
    first = True
    while scope is not None:
        if (first or scope.kind != "class") and scope.binds(name):
            return scope
        first = False
        scope = scope.parent
    return None


def _array_item_possible(w: _Walker, array_chains: set, array_function_values: bool,
                         array_annotation: bool = False) -> bool:
    """Some item assignment's base may hold a JAX Array (REF013) as the analysis sees one.

    The analysis' Arrays (``ArrayVal``) come from array functions, called by their import
    name or through a name, attribute or container holding one (``op = jnp.add``; a call
    through an opaque callee once an array function is used as a value), from parameters
    annotated as Arrays, and from names, attributes, items and arithmetic of those; a name
    of an enclosing scope is seen where it is read. It never carries one into a parameter
    of a function it calls or out of a function's `return` (``values.is_interesting``):
    a call of a local function gives no Array. A parameter of a traced function that every
    call binds to an Array is one more case (rules/array_item_assignment.py,
    ``_traced_array_param``): its own item assignment, when some call passes an Array to a
    function the call may reach."""
    arrays: set = set()  # (id(defining scope), name)
    array_attrs: set = set()
    function_vars: set = set()  # (id(scope), name) of variables that may hold an array function
    function_attrs: set = set()  # attributes that may hold one
    lookups: dict = {}

    def lookup(scope, name) -> list:
        """The scopes a read of ``name`` in ``scope`` may see (``_lookups``), memoized."""
        k = (id(scope), name)
        if k not in lookups:
            lookups[k] = _lookups(scope, name)
        return lookups[k]

    def keys(e: _Expr) -> list:
        if e.keys is None:
            e.keys = [(id(s), name) for scope, name in e.names for s in lookup(scope, name)]
        return e.keys

    def holds_function(e: Optional[_Expr]) -> bool:
        """``e`` may evaluate to an array function (`op = jnp.add`, `ops = [jnp.add]`)."""
        if e is None:
            return False
        if not e.chains.isdisjoint(array_chains):
            return True
        return bool(function_vars) and any(k in function_vars for k in keys(e))

    def is_array(e: Optional[_Expr]) -> bool:
        if e is None:
            return False
        if not e.chains.isdisjoint(array_chains) or not e.attrs.isdisjoint(array_attrs):
            return True
        if arrays and any(k in arrays for k in keys(e)):
            return True
        if e.opaque_call and array_function_values:
            return True  # `ops[0](x)`
        if function_vars:
            for scope, name in e.name_calls:
                if any((id(s), name) in function_vars for s in lookup(scope, name)):
                    return True
        return bool(function_attrs) and not e.attr_calls.isdisjoint(function_attrs)

    if array_annotation:  # `x: jax.Array` parameters hold Arrays (api.ARRAY_TYPES)
        for sc in w.scopes:
            for p in sc.array_params:
                arrays.add((id(sc), p))

    # What may still turn true, dropped from these lists once it has (each round walks only
    # what is left).
    var_left = [((id(sc), name), [v for v in values if v is not None])
                for sc in w.scopes + [w.module] for name, values in sc.bindings.items()]
    var_left = [(k, values) for k, values in var_left if values]
    func_left = list(var_left)
    attr_left = [(name, [v for v in values if v is not None])
                 for name, values in w.attr_bindings.items()]
    func_attr_left = list(attr_left)

    def still(items, known, test) -> list:
        """``items`` less those whose values now pass ``test`` (added to ``known``)."""
        left = []
        for k, values in items:
            for v in values:
                if test(v):
                    known.add(k)
                    break
            else:
                left.append((k, values))
        return left

    for _round in range(100):
        before = (len(arrays), len(array_attrs), len(function_vars), len(function_attrs))
        func_left = still(func_left, function_vars, holds_function)
        func_attr_left = still(func_attr_left, function_attrs, holds_function)
        var_left = still(var_left, arrays, is_array)
        attr_left = still(attr_left, array_attrs, is_array)
        if (len(arrays), len(array_attrs), len(function_vars), len(function_attrs)) == before:
            break
    else:  # pragma: no cover - not seen on real code; stay sound
        return True
    for kind, a, b in w.item_bases:
        if kind == "name":
            hit = any((id(sc), b) in arrays for sc in lookup(a, b))
        elif kind == "attr":
            hit = b in array_attrs
            if not hit and a is not None:
                hit = any((id(sc), a[1]) in arrays for sc in lookup(a[0], a[1]))
        else:
            hit = is_array(a)
        if hit:
            return True
    return _traced_array_param_possible(w, is_array, lookup)


def _traced_array_param_possible(w: _Walker, is_array, lookup) -> bool:
    """An item assignment to a parameter (`x[0] = v`, `x` a parameter of the function it
    is in) of a function that some call with an Array argument may reach: by its name, as a
    class's `__init__`, as a method of that name, through a variable, parameter or opaque
    callee (any function whose value escapes), or given to an API that calls it."""
    targets = {}  # id(function) -> its scope, for each item assignment to its own parameter
    for kind, a, b in w.item_bases:
        if kind == "name":
            for sc in lookup(a, b):
                if sc.kind != "module" and sc.kind != "class" and b in sc.params:
                    targets[id(sc)] = sc
    if not targets:
        return False
    fv = _FunctionValues(w)
    # A function its decorator binds to nothing is reached by no call.
    targets = {k: f for k, f in targets.items() if f.kind != "function" or not fv.dead(f)}
    if not targets:
        return False
    escaping = [f for f in w.scopes if f.kind != "class" and f.kind != "module" and
                fv.escaping(f)]
    chain_values: dict = {}
    for kind, callee, chain, args, scope in w.calls:
        if not any(is_array(arg) for arg in args):
            continue
        reached: list = []
        if chain is not None:
            k = (chain, id(scope))
            if k not in chain_values:
                chain_values[k] = _dotted_values(w, chain, scope)
            values = chain_values[k]
            if values is not None:  # an import (or builtin) wherever it resolves
                if not values.isdisjoint(_CALLING_APIS):
                    # An API that calls what it is given: the functions passed (by name, or
                    # lambdas).
                    passed = {n for arg in args for _, n in arg.names}
                    reached = [f for f in escaping if f.kind == "lambda" or f.name in passed]
                if any(id(f) in targets for f in reached):
                    return True
                continue  # one the analysis does not know calls nothing
            # else: a local value shadows the import: a call through it, below
        if kind == "name":
            found = lookup(scope, callee)
            if not found and callee not in _BUILTINS:
                reached = escaping  # unknown to the gate: any function
            for sc in found:
                if callee in sc.defs and \
                        not (callee in sc.bindings or callee in sc.params):
                    reached = reached + sc.defs[callee]
                elif callee in sc.classes:
                    reached = reached + w.func_names.get("__init__", []) + \
                        w.func_names.get("__post_init__", [])
                else:
                    reached = reached + escaping  # a variable or parameter: any function
        elif kind == "attr":
            reached = list(w.func_names.get(callee, ()))
            if callee not in w.func_names and callee in w.attr_bindings:
                reached += escaping
        else:
            reached = escaping
        if any(id(f) in targets for f in reached):
            return True
    return False