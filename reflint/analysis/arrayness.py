"""Is a value never a ref? (``ArraynessMixin``: asked by REF023, on demand.)

A receiver of `x.at[i].set(v)` that is a ref is written (a traced ref on JAX 0.10.2 and 0.12,
a concrete one on 0.12), one that is an Array is not: a rule that tells them apart must know
that a value of unknown type cannot be a ref. ``not_a_ref(expr, info, at)`` answers from the
values the evaluator recorded (``value_of``) and the registry (api.py); False where it does
not know:

- an Array the evaluator knows (``ArrayVal``), a literal, the result of arithmetic, of a
  functional update (an Array, or None for a ref), of an Array-only method
  (``api.NON_REF_RESULT_METHODS``), of a local function every `return` of which is one, an
  item of a tuple display or of `jnp.split(...)` (``api.ARRAY_SEQUENCE_FUNCTIONS``);
- a local name every binding of which is one of those, or a parameter annotated as an Array
  (``api.ARRAY_ANNOTATIONS``, not named like a ref);
- a parameter of a nested or private function, or of a control-flow body, whose every call
  the analysis sees binds a non-ref (`fori_loop`'s carry: its init; an unpacked carry item:
  the init's item), when the function's name is used only in those calls;
- anything taken (items, attributes, unpacking, through local helpers whose every call passes
  one) from the carry parameter of a `scan`/`fori_loop`/`while_loop` body or from a loop's
  result: a carry holds no ref (JAX rejects one), except in a Pallas kernel (checks off: the
  rule is off in files that use Pallas) or with NNX ref Variables (``_ref_free``);
- `self.x`, `self.x[k][j]` in a method, where the class declares the attribute an Array or
  a container of Arrays as deep as the items taken (``_declared_array_attribute``: taken at
  its word like a parameter's annotation; not named like a ref; no store in the module of a
  value known to hold a ref);
- with ``at`` (the statement asking), a local name that a use seeing the same value proves
  no ref: a use where a ref raises on both lines (measured: arithmetic, unary operators,
  `jax.numpy`/`lax`/`nn`/`scipy`/`random` functions (``api.rejects_refs``), `.sum()`/`.astype()`
  ..., a store into a ref, an argument of a local function whose parameter is so used or
  annotated as an Array). The uses that see the value: the statement itself; after it up to
  the next binding of the name (across `x = x.at[i].set(v)`, which leaves None for a ref),
  not past a `return`/`raise`/`break`/`continue`, not into a branch entered earlier or one
  whose test mentions the name; before it, back to the binding that reaches it (a binding
  that is itself one of the above proves it), not across a loop that rebinds the name. The
  program is taken to be otherwise right: a ref there would raise.

NNX Variables do arithmetic, and a Variable holding a ref writes through `.at[i].set(v)` on
JAX 0.12 (measured, flax 0.12.12): in a file that uses NNX and may make ref Variables
(``api.NNX_REF_MODE``), uses are no evidence.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from ..values import QN, ArrayVal, FuncVal, RefVal, SeqVal, contains_ref
from .facts import FunctionInfo
from .syntax import _in_own_scope, _target_names, last_name, walk_nodes

_MAX_DEPTH = 4
_CONSTANTS = ("builtins.None", "builtins.True", "builtins.False")
_ARITH = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo,
          cst.Power, cst.MatrixMultiply, cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift,
          cst.RightShift)


class ArraynessMixin:

    def not_a_ref(self, expr, info: Optional[FunctionInfo], at=None) -> bool:
        """True when the value of ``expr`` (in the function ``info``) is never a ref (see the
        module docstring); False when it may be one or the analysis does not know. ``at``: the
        statement (directly in ``info``'s body or its blocks) where the value is asked; a name
        is then also judged by the uses that see the same value there."""
        if info is None:
            return False
        if self._non_ref(expr, info, 0):
            return True
        if at is not None and type(expr) is cst.Name and self._values.get(id(expr)) is None \
                and not self._nnx_refs_possible():
            name = expr.value
            if info.is_module or self.free_name_scope(name, info) is None:
                return self._window_evidence(info, name, at, 0)
        return False

    def _nnx_refs_possible(self) -> bool:
        """The file uses Flax NNX and may make Variables that hold refs: a Variable does
        arithmetic, and one holding a ref writes through `.at[i].set(v)` on JAX 0.12."""
        return "nnx" in self.source and api.NNX_REF_MODE.search(self.source) is not None

    # -- expressions -------------------------------------------------------------------------

    def _non_ref(self, expr, info: FunctionInfo, depth: int) -> bool:
        value = self._values.get(id(expr))
        if isinstance(value, ArrayVal) or isinstance(value, QN) and value.qualname in _CONSTANTS:
            return True
        if value is not None and contains_ref(value):
            return False
        t = type(expr)
        if t in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString):
            return True
        if t is cst.BinaryOperation:
            return isinstance(expr.operator, _ARITH)
        if t is cst.UnaryOperation:
            return not isinstance(expr.operator, cst.Not)
        if t is cst.IfExp:
            return depth < _MAX_DEPTH and self._non_ref(expr.body, info, depth + 1) and \
                self._non_ref(expr.orelse, info, depth + 1)
        if t is cst.Call and type(expr.func) is cst.Attribute:
            method = expr.func.attr.value
            if method in api.AT_UPDATE_METHODS and _at_receiver(expr) is not None:
                return True  # an Array (or None: `ref.at[i].set(v)` returns nothing)
            if method in api.NON_REF_RESULT_METHODS:
                return True  # `x.astype(t)`: an Array (a ref has no such method)
        if t is cst.Call and depth < _MAX_DEPTH:
            init = self._loop_init(expr)
            if init is not None:
                return self._non_ref(init, info, depth + 1)
            return self._returns_non_ref(expr, None, depth + 1)
        if t is cst.Name and value is None and depth < _MAX_DEPTH:
            return self._name_not_ref(expr.value, info, depth + 1)
        if t in (cst.Attribute, cst.Subscript):
            return self._declared_array_attribute(expr, info) or \
                self._ref_free(expr, info, 0)
        return False

    def _non_ref_item(self, expr, index: int, info: FunctionInfo, depth: int) -> bool:
        """Item ``index`` of the sequence ``expr`` evaluates to is never a ref."""
        value = self._values.get(id(expr))
        if isinstance(value, SeqVal) and index < len(value.items):
            item = value.items[index]
            if isinstance(item, ArrayVal):
                return True
            if item is not None and contains_ref(item):
                return False
        t = type(expr)
        if t in (cst.Tuple, cst.List):
            els = expr.elements
            return index < len(els) and type(els[index]) is not cst.StarredElement and \
                not any(type(e) is cst.StarredElement for e in els[:index]) and \
                self._non_ref(els[index].value, info, depth)
        if depth >= _MAX_DEPTH:
            return False
        if t in (cst.Name, cst.Subscript, cst.Attribute) and self._ref_free(expr, info, 0):
            return True  # an item of a loop's carry
        if t is cst.Call:
            qn = getattr(self._values.get(id(expr.func)), "qualname", "")
            if qn.startswith(api.JAX_ARRAY_MODULES) and \
                    qn.rsplit(".", 1)[1] in api.ARRAY_SEQUENCE_FUNCTIONS:
                return True  # `a, b = jnp.split(x, 2)`: Arrays
            init = self._loop_init(expr)
            if init is not None:  # `a, b = fori_loop(0, n, body, (a0, b0))`: the carry
                return self._non_ref_item(init, index, info, depth + 1)
            return self._returns_non_ref(expr, index, depth + 1)
        if t is cst.Name and value is None:
            scope = self.free_name_scope(expr.value, info) or info
            if scope is info and not scope.is_module and scope.param(expr.value) is not None:
                facts = self._name_facts(scope).get(expr.value)
                if facts is None or not facts[0]:  # the parameter, never rebound
                    return self._param_not_ref(scope, expr.value, depth + 1, index)
        return False

    def _loop_init(self, call):
        """The init of `lax.fori_loop(lo, hi, body, init)` / `lax.while_loop(cond, body,
        init)`, whose result is the final carry (a ref can be no carry's leaf: JAX raises)."""
        qn = getattr(self._values.get(id(call.func)), "qualname", "")
        pos = api.LOOP_INIT_POSITIONS.get(api.canonical(qn) or "") if qn else None
        if pos is None:
            return None
        args = [a for a in call.args if a.keyword is None and not a.star]
        if pos < len(args):
            return args[pos].value
        return next((a.value for a in call.args if a.keyword is not None and
                     a.keyword.value in ("init_val", "init")), None)

    def _returns_non_ref(self, call, index, depth: int) -> bool:
        """A call of a local function every `return` of which gives a non-ref (its item
        ``index``, when not None)."""
        fv = self._values.get(id(call.func))
        if not isinstance(fv, FuncVal) or fv.info.is_lambda or not fv.info.returns:
            return False
        info = fv.info
        if any(type(n) in (cst.Yield, cst.Await) for n in walk_nodes(
                list(getattr(info.node.body, "body", ())), into=_in_own_scope)):
            return False
        for r in info.returns:
            if r.expr is None:
                if index is not None:
                    return False
                continue
            ok = self._non_ref(r.expr, info, depth) if index is None else \
                self._non_ref_item(r.expr, index, info, depth)
            if not ok:
                return False
        return True

    # -- attributes of self ------------------------------------------------------------------

    def _declared_array_attribute(self, expr, info: FunctionInfo) -> bool:
        """`self.x`, `self.x[k]`, `self.x[k][j]` in a method, where the class (or a base of the
        module) declares the attribute an Array, or a container of Arrays as deep as the
        items taken (`x: jax.Array | None`, `self.x: dict[str, list[jax.Array]] = {}`), the
        attribute is not named like a ref, and no store into `<anything>.x` in the module is a
        value the analysis knows holds a ref. The declaration is taken at its word, as a
        parameter's (``_array_annotated``)."""
        depth = 0
        while type(expr) is cst.Subscript:
            expr, depth = expr.value, depth + 1
        if type(expr) is not cst.Attribute or type(expr.value) is not cst.Name or depth > 3:
            return False
        attr, root = expr.attr.value, expr.value.value
        cls = info.cls
        if cls is None or not info.is_method or not info.params or \
                info.params[0].name != root or info.decorator_kinds or \
                "ref" in attr.lower() or attr.startswith("__"):
            return False
        if root in self._name_facts(info) or self._nnx_refs_possible():
            return False  # `self` rebound; or Variables that may hold refs
        stores = self.cached("arrayness attribute stores", lambda: _attribute_stores(self))
        if any(v is not None and contains_ref(v) for v in
               (self._values.get(id(e)) for e in stores.get(attr, ()))):
            return False
        anns = [a for c in self._class_chain(cls) for a in _declarations(c, attr)]
        return bool(anns) and all(self._array_declaration(a, depth, info) for a in anns)

    def _array_declaration(self, ann, depth: int, info: FunctionInfo, nest: int = 0) -> bool:
        """The annotation ``ann`` declares an Array after ``depth`` items are taken
        (`Optional[...]`/`X | None` allowed; containers: dict/Mapping values, list/Sequence/
        tuple items)."""
        if nest > 8:
            return False
        t = type(ann)
        if t in (cst.SimpleString, cst.ConcatenatedString):
            try:
                ann = cst.parse_expression(ann.evaluated_value)
            except Exception:
                return False
            return self._array_declaration(ann, depth, info, nest + 1)
        if t is cst.BinaryOperation and isinstance(ann.operator, cst.BitOr):
            return all(_is_none(side) or self._array_declaration(side, depth, info, nest + 1)
                       for side in (ann.left, ann.right)) and \
                not (_is_none(ann.left) and _is_none(ann.right))
        if t is cst.Subscript:
            head = last_name(ann.value)
            args = [e.slice.value for e in ann.slice if type(e.slice) is cst.Index]
            if len(args) != len(ann.slice) or not args:
                return False
            if head in ("Optional", "Union"):
                return all(_is_none(a) or self._array_declaration(a, depth, info, nest + 1)
                           for a in args) and not all(_is_none(a) for a in args)
            if depth > 0 and head in _MAPPINGS and len(args) == 2:
                return self._array_declaration(args[1], depth - 1, info, nest + 1)
            if depth > 0 and head in _SEQUENCES:
                items = [a for a in args if type(a) is not cst.Ellipsis]
                return bool(items) and all(self._array_declaration(a, depth - 1, info, nest + 1)
                                           for a in items)
        return depth == 0 and self._annotation_qn(ann, info) in api.ARRAY_ANNOTATIONS

    # -- names -------------------------------------------------------------------------------

    def _name_not_ref(self, name: str, info: FunctionInfo, depth: int) -> bool:
        scope = self.free_name_scope(name, info) or info
        if scope is not info and scope.is_module:
            return False  # a global: any function may rebind it
        facts = self._name_facts(scope).get(name)
        param = scope.param(name) if not scope.is_module else None
        if facts is None and param is None:
            return False
        bindings = facts[0] if facts is not None else []
        unknown = [] if param is None or _array_annotated(param) else [param]
        for kind, node in bindings:
            if kind == "aug":
                continue  # `x += v`: arithmetic's result
            if kind == "assign" and self._non_ref(node, scope, depth):
                continue
            if kind == "unpack" and self._non_ref_item(node[1], node[0], scope, depth):
                continue
            unknown.append(node)
        if not unknown:
            return True
        if len(unknown) > 1:
            return False
        if param is not None and self._param_not_ref(scope, name, depth):
            return True
        # The carry of a loop body (a fresh Name: the parameter, seen from its scope).
        return param is not None and facts is None and self._ref_free(cst.Name(value=name), scope, 0)

    def _param_not_ref(self, scope: FunctionInfo, name: str, depth: int,
                       index: Optional[int] = None) -> bool:
        """Every call of ``scope`` the analysis sees binds ``name`` to a non-ref, and no call
        can be hidden from it (a nested function, a private one, a control-flow body)."""
        bound = self._param_bindings(scope, name, True)
        if not bound:
            return False
        for caller, b in bound:
            if b is None or b.partial or b.expr is None:
                return False
            if index is not None:
                if not self._non_ref_item(b.expr, index, caller, depth):
                    return False
                continue
            if isinstance(b.value, ArrayVal):
                continue
            if b.value is not None and contains_ref(b.value):
                return False
            if not self._non_ref(b.expr, caller, depth):
                return False
        return True

    def _param_bindings(self, scope: FunctionInfo, name: str, traced: bool) -> list:
        """(caller, Binding) of ``name`` for every call of ``scope`` (plain calls, and with
        ``traced`` control-flow calls too), when no call can be hidden from the analysis (a
        nested function, a private one, whose name is used only in those calls); [] when
        some may be."""
        if scope.is_lambda or scope.parent is None:
            return []
        if scope.parent.is_module and not scope.name.startswith("_"):
            return []  # public: another module may call it with a ref
        if not self._calls_all_seen(scope):
            return []
        bound = []
        for call in self.plain_calls:
            if call.callee is scope:
                bound.append((call.caller, call.bindings.get(name)))
        for call in self.traced_calls:
            if any(t is scope for t in call.targets):
                if not traced:
                    return []
                bound.append((call.func, call.bindings.get(id(scope), {}).get(name)))
        return bound

    # -- loop carries ------------------------------------------------------------------------

    def _ref_free(self, expr, info: FunctionInfo, depth: int) -> bool:
        """No leaf of the value of ``expr`` is a ref: the carry parameter of a `scan`/
        `fori_loop`/`while_loop` body (JAX rejects a ref in a carry), an item or attribute of
        one, a local name every binding of which is one, a parameter of a nested or private
        function every call of which passes one (`_unpack(carry)`), and a loop's result. Not in a file that uses
        Pallas (a loop in a kernel may carry a ref: checks are off there) or may make NNX
        Variables holding refs."""
        if depth >= 2 * _MAX_DEPTH or "pallas" in self.source or self._nnx_refs_possible():
            return False
        value = self._values.get(id(expr))
        if value is not None and contains_ref(value):
            return False
        t = type(expr)
        if t in (cst.Subscript, cst.Attribute):
            return self._ref_free(expr.value, info, depth + 1)
        if t is cst.Call:  # the final carry (and a scan's stacked outputs)
            qn = getattr(self._values.get(id(expr.func)), "qualname", "")
            return bool(qn) and api.canonical(qn) in api.CARRY_RESULT_LOOPS
        if t is not cst.Name:
            return False
        name = expr.value
        scope = self.free_name_scope(name, info) or info
        if scope.is_module or scope.is_lambda:
            return False
        facts = self._name_facts(scope).get(name)
        if scope.param(name) is None:
            if facts is None:
                return False
            for kind, node in facts[0]:
                if kind == "assign" and self._ref_free(node, scope, depth + 1):
                    continue
                if kind == "unpack" and self._ref_free(node[1], scope, depth + 1):
                    continue
                return False
            return True
        if facts is not None or self.unchecked_trace(scope):
            return False  # a rebound parameter
        if name in self._loop_carries(scope):
            return True
        bound = self._param_bindings(scope, name, False)
        return bool(bound) and all(
            b is not None and not b.partial and b.expr is not None and
            self._ref_free(b.expr, caller, depth + 1) for caller, b in bound)

    def _loop_carries(self, scope: FunctionInfo) -> set:
        """The parameter of ``scope`` that receives a loop's carry (its init), when every
        call of it the analysis sees is a `scan`/`fori_loop`/`while_loop` call giving it the
        carry at the same parameter, and nothing else calls it."""
        names = set()
        for call in self.plain_calls:
            if call.callee is scope:
                return set()
        for call in self.traced_calls:
            if not any(t is scope for t in call.targets):
                continue
            pos = api.LOOP_INIT_POSITIONS.get(call.kind, 1 if call.kind == "scan" else None)
            args = [a for a in call.node.args if a.keyword is None and not a.star]
            if pos is None or pos >= len(args) or len(args) != len(call.node.args):
                return set()
            init = args[pos].value
            if contains_ref(self._values.get(id(init))):
                return set()  # a ref in the carry (JAX raises, unless checks are off)
            got = {n for n, b in call.bindings.get(id(scope), {}).items()
                   if b is not None and b.expr is init and "ref" not in n.lower()}
            if len(got) != 1:
                return set()
            names |= got
        return names if len(names) == 1 and self._calls_all_seen(scope) else set()

    def _calls_all_seen(self, scope: FunctionInfo) -> bool:
        """Every reference to the function's name is a call the analysis recorded (or the
        function given to a control-flow call it recorded): it does not escape."""
        index = self.cached("arrayness call index", lambda: _call_index(self))
        fname = scope.name
        container = scope.parent
        body = container.node.body if container.is_module else \
            getattr(container.node.body, "body", None)
        if not isinstance(body, (list, tuple)):
            return False
        used = index.get(fname, set())
        others = 0
        for node in walk_nodes(list(body)):
            if type(node) is cst.Name and node.value == fname and id(node) not in used:
                others += 1
        # The def's own name is the one other Name node.
        return others == 1 and bool(used)

    def _name_facts(self, scope: FunctionInfo) -> dict:
        """name -> ([(kind, value)],) for the names bound directly in ``scope``: kind "assign"
        (a plain assignment; its value), "unpack" (`a, b = v`; (index, v)), "aug" (`x += v`)
        or "other" (a loop or with target, a def, an import ...: never resolved). One walk per
        scope, cached."""
        cache = self.cached("arrayness names", dict)
        out = cache.get(id(scope))
        if out is not None:
            return out
        out = cache[id(scope)] = {}
        body = scope.node.body if scope.is_module else getattr(scope.node.body, "body", None)
        if not isinstance(body, (list, tuple)):
            return out
        binds: dict = {}

        def bind(n, kind, node) -> None:
            binds.setdefault(n, []).append((kind, node))

        for node in walk_nodes(body, into=_in_own_scope):
            t = type(node)
            if t is cst.Assign:
                for tg in node.targets:
                    if type(tg.target) is cst.Name:
                        bind(tg.target.value, "assign", node.value)
                    elif type(tg.target) in (cst.Tuple, cst.List) and not any(
                            type(e) is cst.StarredElement for e in tg.target.elements):
                        for i, e in enumerate(tg.target.elements):
                            if type(e.value) is cst.Name:
                                bind(e.value.value, "unpack", (i, node.value))
                            else:
                                for n in _target_names(e.value):
                                    bind(n, "other", node)
                    else:
                        for n in _target_names(tg.target):
                            bind(n, "other", node)
            elif t is cst.AnnAssign:
                if type(node.target) is cst.Name:
                    bind(node.target.value, "assign" if node.value is not None else "none",
                         node.value)
            elif t is cst.AugAssign:
                if type(node.target) is cst.Name:
                    bind(node.target.value, "aug", node)
            elif t in (cst.For, cst.CompFor):
                for n in _target_names(node.target):
                    bind(n, "other", node)
            elif t is cst.WithItem and node.asname is not None:
                for n in _target_names(node.asname.name):
                    bind(n, "other", node)
            elif t is cst.NamedExpr:
                for n in _target_names(node.target):
                    bind(n, "other", node)
            elif t in (cst.FunctionDef, cst.ClassDef):
                bind(node.name.value, "other", node)
            elif t in (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal):
                names = node.names if isinstance(node.names, (list, tuple)) else ()
                for a in names:
                    n = a.asname.name if getattr(a, "asname", None) else a.name
                    if type(n) is cst.Name:
                        bind(n.value, "other", node)
                    elif type(n) is cst.Attribute:
                        root = n
                        while type(root) is cst.Attribute:
                            root = root.value
                        if type(root) is cst.Name:
                            bind(root.value, "other", node)
            elif t is cst.ExceptHandler and node.name is not None:
                for n in _target_names(node.name.name):
                    bind(n, "other", node)
        for n, bs in binds.items():
            if any(kind in ("other", "none") for kind, _ in bs):
                out[n] = ([("other", None)] * 2,)  # never resolved
            else:
                out[n] = (bs,)
        return out

    def _note_array_uses(self, node, t, used: set) -> None:
        """Names that ``node`` uses where a ref fails, on JAX 0.10.2 and 0.12 (REF007's
        errors): operands of arithmetic, Array-only methods, arguments of array functions."""
        if t is cst.Assign:
            if type(node.value) is cst.Name and any(
                    type(tg.target) is cst.Subscript and
                    isinstance(self._values.get(id(tg.target.value)), RefVal)
                    for tg in node.targets):
                used.add(node.value.value)  # `o_ref[...] = acc`: a ref there raises
        elif t is cst.AugAssign:
            if type(node.target) is cst.Name:
                used.add(node.target.value)  # `x += v` on a ref raises
        elif t is cst.BinaryOperation:
            if isinstance(node.operator, _ARITH):
                for side in (node.left, node.right):
                    if type(side) is cst.Name:
                        used.add(side.value)
        elif t is cst.UnaryOperation:
            if not isinstance(node.operator, cst.Not) and type(node.expression) is cst.Name:
                used.add(node.expression.value)
        elif t is cst.Attribute:
            if type(node.value) is cst.Name and node.attr.value in api.NON_REF_RESULT_METHODS:
                used.add(node.value.value)
        elif t is cst.Call:
            fv = self._values.get(id(node.func))
            qn = getattr(fv, "qualname", None)
            if qn and api.rejects_refs(qn):
                for arg in node.args:
                    if arg.keyword is None and not arg.star and type(arg.value) is cst.Name:
                        used.add(arg.value.value)


    # -- uses that see one value -------------------------------------------------------------

    def _uses_in(self, node, depth: int) -> set:
        """Names that ``node`` (a statement or an expression; not nested scopes) uses where a
        ref raises, directly or as the argument of a local function whose parameter is so
        used before it is rebound."""
        used: set = set()
        if type(node) is _IfTest:
            node = node.test
        for n in walk_nodes([node], into=_in_own_scope):
            t = type(n)
            self._note_array_uses(n, t, used)
            if t is cst.Call and depth < 2:
                fv = self._values.get(id(n.func))
                if not isinstance(fv, FuncVal) or fv.bound_args or fv.transforms or \
                        fv.self_value is not None or fv.info.is_lambda:
                    continue
                params = [p for p in fv.info.params if p.kind in ("pos", "posonly")]
                for i, arg in enumerate(n.args):
                    if type(arg.value) is not cst.Name or arg.star:
                        continue
                    if arg.keyword is not None:
                        p = fv.info.param(arg.keyword.value)
                    else:
                        p = params[i] if i < len(params) else None
                    if p is None or p.kind == "vararg":
                        continue
                    if isinstance(fv.info.summary.get(p.name), ArrayVal) or \
                            _array_annotated(p) or \
                            self._window_evidence(fv.info, p.name, None, depth + 1):
                        # Annotated `jax.Array` (analysis: not a ref's name), or used so.
                        used.add(arg.value.value)
        return used

    def _window_evidence(self, scope: FunctionInfo, name: str, at, depth: int) -> bool:
        """A use of ``name`` in ``scope`` that sees the value it has at the statement ``at``
        (None: on entry, a parameter) raises on a ref: after ``at`` up to the next binding of
        the name (not past a return, raise, break or continue, not into a branch entered
        after ``at``), or before it back to the binding that reaches it (not across a loop
        that rebinds it)."""
        events = self._events(scope)
        if at is None:
            start, path = -1, ()
        else:
            start = next((i for i, e in enumerate(events) if e[0] is at), None)
            if start is None:
                return False
            path = events[start][1]
            if name in self._uses_in(at, depth):
                return True
        opened: set = set()  # `if` statements entered after ``at`` whose test ignores the name
        for node, epath, binds, barrier in events[start + 1:]:
            tail = epath[_common(epath, path):]
            straight = all(k in ("loop", "with") for k, _ in tail)
            if straight and type(node) is _IfTest and not _mentions(node.test, name):
                opened.add(node.id)
            reached = all(k in ("loop", "with") or (k == "if" and i[0] in opened)
                          for k, i in tail)
            if reached and name in self._uses_in(node, depth):
                return True
            if name in binds and straight and _self_update(node, name):
                continue  # `x = x.at[i].set(v)`: None or an error for a ref, so a use after
                #           it that raises on a ref proves x was none
            if name in binds or "*" in binds or (barrier and straight):
                break
        if at is None:
            return False
        looped = {i for k, i in path if k == "loop"}
        for node, epath, binds, barrier in reversed(events[:start]):
            if name in binds or "*" in binds:
                # The binding that reaches the statement, unless it is in a branch.
                tail = epath[_common(epath, path):]
                if tail or "*" in binds:
                    return False
                if type(node) is cst.AugAssign:
                    return True
                return type(node) in (cst.Assign, cst.AnnAssign) and node.value is not None \
                    and self._non_ref(node.value, scope, depth)
            for k, i in path:
                if k == "loop" and (k, i) not in epath and i in looped:
                    looped.discard(i)
                    if any(name in b for _, ep, b, _ in events if ("loop", i) in ep):
                        return False  # the loop rebinds it: the value may be a later one
            tail = epath[_common(epath, path):]
            if all(k in ("loop", "with") for k, _ in tail) and name in self._uses_in(node, depth):
                return True
        return False

    def _events(self, scope: FunctionInfo) -> list:
        """The statements of ``scope`` in source order, as (node, path, names bound,
        barrier): small statements, and the headers of compound ones (an `if` test, a loop's
        iterable and target, `with` items). ``path``: the enclosing blocks, ("if"|"loop"|
        "with"|"try", id) -- each branch of an `if` or `try` its own. Cached per scope."""
        cache = self.cached("arrayness events", dict)
        out = cache.get(id(scope))
        if out is not None:
            return out
        out = cache[id(scope)] = []
        body = scope.node.body if scope.is_module else getattr(scope.node.body, "body", None)
        if isinstance(body, (list, tuple)):
            _block(body, (), out)
        return out


def _at_receiver(call):
    sub = call.func.value
    if type(sub) is cst.Subscript and type(sub.value) is cst.Attribute and \
            sub.value.attr.value == "at":
        return sub.value.value
    return None


_MAPPINGS = ("dict", "Dict", "Mapping", "MutableMapping")
_SEQUENCES = ("list", "List", "Sequence", "MutableSequence", "tuple", "Tuple")


def _is_none(expr) -> bool:
    return type(expr) is cst.Name and expr.value == "None"


def _declarations(cls, attr: str) -> list:
    """The annotations ``cls`` gives ``attr``: `attr: T` in its body, `self.attr: T` in its
    methods (the methods' first parameter)."""
    out = []
    for st in cls.node.body.body:
        if type(st) is cst.SimpleStatementLine:
            for small in st.body:
                if type(small) is cst.AnnAssign and type(small.target) is cst.Name and \
                        small.target.value == attr:
                    out.append(small.annotation.annotation)
    for m in cls.methods.values():
        params = m.info.params
        if not params or m.info.decorator_kinds:
            continue
        body = getattr(m.info.node.body, "body", None)
        if not isinstance(body, (list, tuple)):
            continue
        for node in walk_nodes(list(body), into=_in_own_scope):
            if type(node) is cst.AnnAssign and type(node.target) is cst.Attribute and \
                    node.target.attr.value == attr and type(node.target.value) is cst.Name \
                    and node.target.value.value == params[0].name:
                out.append(node.annotation.annotation)
    return out


def _attribute_stores(analysis) -> dict:
    """attr -> the values stored in the module into `<anything>.attr`, `<anything>.attr[k]`
    (any depth) or appended to it (`.append(v)`, `.extend(v)`, `.insert(i, v)`)."""
    out: dict = {}

    def root_attr(target):
        while type(target) is cst.Subscript:
            target = target.value
        return target.attr.value if type(target) is cst.Attribute else None

    for node in walk_nodes([analysis.module]):
        t = type(node)
        if t is cst.Assign:
            for tg in node.targets:
                for sub in walk_nodes([tg.target]):
                    a = root_attr(sub) if type(sub) in (cst.Attribute, cst.Subscript) else None
                    if a is not None:
                        out.setdefault(a, []).append(node.value)
        elif t in (cst.AnnAssign, cst.AugAssign) and node.value is not None:
            a = root_attr(node.target)
            if a is not None:
                out.setdefault(a, []).append(node.value)
        elif t is cst.Call and type(node.func) is cst.Attribute and \
                node.func.attr.value in ("append", "extend", "insert", "setdefault",
                                         "update", "add"):
            a = root_attr(node.func.value)
            if a is not None:
                out.setdefault(a, []).extend(arg.value for arg in node.args)
    return out


def _mentions(expr, name: str) -> bool:
    """``expr`` reads ``name`` (outside nested scopes)."""
    if expr is None:
        return False
    return any(type(n) is cst.Name and n.value == name
               for n in walk_nodes([expr], into=_in_own_scope))


def _call_index(analysis) -> dict:
    """name -> the ids of the Name nodes that the recorded calls use it by: the callee of a
    call, or a function given to a control-flow call (each node once)."""
    used: dict = {}
    for call in analysis.plain_calls:
        f = call.node.func
        if type(f) is cst.Name:
            used.setdefault(f.value, set()).add(id(f))
    for call in analysis.traced_calls:
        names = {t.name for t in call.targets}
        f = call.node.func
        if type(f) is cst.Name and f.value in names:
            used.setdefault(f.value, set()).add(id(f))
        for arg in call.node.args:
            if type(arg.value) is cst.Name and arg.value.value in names:
                used.setdefault(arg.value.value, set()).add(id(arg.value))
    return used


def _common(a: tuple, b: tuple) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _bound(target) -> set:
    return set(_target_names(target)) if target is not None else set()


def _block(stmts, path: tuple, out: list) -> None:
    """Append the events of ``stmts`` (see ArraynessMixin._events)."""
    for st in stmts:
        t = type(st)
        if t is cst.SimpleStatementLine:
            for small in st.body:
                ts = type(small)
                binds: set = set()
                if ts is cst.Assign:
                    for tg in small.targets:
                        binds |= _bound(tg.target)
                elif ts in (cst.AnnAssign, cst.AugAssign):
                    binds = _bound(small.target)
                elif ts in (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Del):
                    binds = {"*"}
                barrier = ts in (cst.Return, cst.Raise, cst.Break, cst.Continue)
                for n in walk_nodes([small], into=_in_own_scope):
                    if type(n) is cst.NamedExpr:
                        binds |= _bound(n.target)
                out.append((small, path, binds, barrier))
        elif t is cst.If:
            out.append((_IfTest(st.test, id(st)), path, set(), False))
            _block(st.body.body, path + (("if", (id(st), 0)),), out)
            if st.orelse is not None:
                inner = [st.orelse] if type(st.orelse) is cst.If else st.orelse.body.body
                _block(inner, path + (("if", (id(st), 1)),), out)
        elif t in (cst.For, cst.While):
            loop = path + (("loop", id(st)),)
            if t is cst.For:
                out.append((st.iter, path, set(), False))
                out.append((st.target, loop, _bound(st.target), False))
            else:
                out.append((st.test, loop, set(), False))
            _block(st.body.body, loop, out)
            if st.orelse is not None:
                _block(st.orelse.body.body, path + (("if", (id(st), 1)),), out)
        elif t is cst.With:
            for item in st.items:
                out.append((item.item, path, set(), False))
                if item.asname is not None:
                    out.append((item.asname, path, _bound(item.asname.name), False))
            _block(st.body.body, path + (("with", id(st)),), out)
        elif t is cst.Try or type(st).__name__ == "TryStar":
            _block(st.body.body, path + (("try", (id(st), 0)),), out)
            for j, h in enumerate(st.handlers):
                hb = _bound(h.name.name) if h.name is not None else set()
                head = h.type if h.type is not None else cst.Ellipsis()
                out.append((head, path + (("try", (id(st), j + 1)),), hb, False))
                _block(h.body.body, path + (("try", (id(st), j + 1)),), out)
            if st.orelse is not None:
                _block(st.orelse.body.body, path + (("try", (id(st), -1)),), out)
            if st.finalbody is not None:
                _block(st.finalbody.body.body, path, out)
        elif t in (cst.FunctionDef, cst.ClassDef):
            out.append((st.name, path, {st.name.value}, False))
        else:  # match and anything new: opaque, binds anything
            out.append((st, path + (("if", (id(st), 0)),), {"*"}, False))


class _IfTest:
    """The test of an `if` (an event): its expression and the statement's identity."""

    __slots__ = ("test", "id")

    def __init__(self, test, ident) -> None:
        self.test, self.id = test, ident


def _array_annotated(p) -> bool:
    """A parameter annotated as an Array (`jax.Array`, jaxtyping's `Float[Array, "n"]`),
    not named like a ref (JAX's own kernels annotate refs `jax.Array`)."""
    return p.annotation_qn in api.ARRAY_ANNOTATIONS and "ref" not in p.name.lower()


def _self_update(node, name: str) -> bool:
    """``node`` is `name = name.at[...].M(...)`."""
    if type(node) is not cst.Assign or len(node.targets) != 1:
        return False
    tg = node.targets[0].target
    v = node.value
    if type(tg) is not cst.Name or tg.value != name or type(v) is not cst.Call or \
            type(v.func) is not cst.Attribute or v.func.attr.value not in api.AT_UPDATE_METHODS:
        return False
    recv = _at_receiver(v)
    return type(recv) is cst.Name and recv.value == name
