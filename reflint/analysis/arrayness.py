"""Is a value never a ref? (``ArraynessMixin``: asked by REF023, on demand.)

A receiver of `x.at[i].set(v)` that is a ref is written (a traced ref, on JAX 0.10.2 and
0.12; a concrete one on 0.12), one that is an Array is not: rules that tell them apart need to
know that a value of unknown type cannot be a ref. ``not_a_ref(expr, info)`` answers from the
values the evaluator recorded (``value_of``) and the registry (api.py), precise where it knows
and False where it does not:

- an Array the evaluator knows (``ArrayVal``), a literal, the result of arithmetic or of a
  functional update (`x.at[i].set(v)` gives an Array, or None for a ref), or of an Array-only
  method (``api.NON_REF_RESULT_METHODS``: `.astype`, `.sum` ...);
- a local name every binding of which is one of those; or whose one other binding (a
  parameter, an assignment of unknown value) is followed only by rebindings computed from the
  name itself (`x = x.at[i].set(v)`, `x = x * 2`), when the same scope uses the name where a
  ref fails (``_uses_as_array``: an operand of arithmetic, an argument of a `jax.numpy`/`lax`
  function that rejects refs, an Array-only method, a value stored into a ref) -- the program
  is taken to be otherwise right;
- a parameter of a function whose every call the analysis sees (a nested or private function,
  a control-flow body: `fori_loop`'s carry is bound to its init) passes a value that is one.

NNX Variables do arithmetic, and a Variable holding a ref writes through `.at[i].set(v)` on
JAX 0.12 (measured with flax 0.12.12): in a file that mentions `nnx`, a use is no evidence.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .. import api
from ..values import ArrayVal, RefVal, contains_ref
from .facts import FunctionInfo
from .syntax import _in_own_scope, _target_names, walk_nodes

_MAX_DEPTH = 4
_ARITH = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo,
          cst.Power, cst.MatrixMultiply, cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift,
          cst.RightShift)


class ArraynessMixin:

    def not_a_ref(self, expr, info: Optional[FunctionInfo]) -> bool:
        """True when the value of ``expr`` (in the function ``info``) is never a ref (see the
        module docstring); False when it may be one or the analysis does not know."""
        if info is None:
            return False
        return self._non_ref(expr, info, 0)

    # -- expressions -------------------------------------------------------------------------

    def _non_ref(self, expr, info: FunctionInfo, depth: int) -> bool:
        value = self._values.get(id(expr))
        if isinstance(value, ArrayVal):
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
        if t is cst.Name and value is None and depth < _MAX_DEPTH:
            return self._name_not_ref(expr.value, info, depth + 1)
        return False

    # -- names -------------------------------------------------------------------------------

    def _name_not_ref(self, name: str, info: FunctionInfo, depth: int) -> bool:
        scope = self.free_name_scope(name, info) or info
        if scope is not info and scope.is_module:
            return False  # a global: any function may rebind it
        facts = self._name_facts(scope).get(name)
        param = scope.param(name) if not scope.is_module else None
        if facts is None and param is None:
            return False
        bindings, evidence = facts if facts is not None else ([], False)
        unknown = [] if param is None else [param]
        for kind, node in bindings:
            if kind == "aug":
                continue  # `x += v`: arithmetic's result
            if kind == "assign" and self._non_ref(node, scope, depth):
                continue
            if kind == "assign" and _mentions(node, name):
                continue  # `x = jnp.where(m, x, 0)`: computed from x (judged by the uses)
            unknown.append(node)
        if not unknown:
            return True
        if len(unknown) > 1:
            return False
        if param is not None and self._param_not_ref(scope, name, depth):
            return True
        if evidence and "nnx" not in self.source:
            # The other bindings are computed from the name itself (`x = x * 2`), so a use
            # anywhere sees the one unknown value or what was made of it; a fresh Array bound
            # too (`x = get(); ...; x = jnp.ones(3)`) may be what the use sees.
            return all(kind == "aug" or _mentions(node, name) for kind, node in bindings
                       if node is not unknown[0])
        return False

    def _param_not_ref(self, scope: FunctionInfo, name: str, depth: int) -> bool:
        """Every call of ``scope`` the analysis sees binds ``name`` to a non-ref, and no call
        can be hidden from it (a nested function, a private one, a control-flow body)."""
        if scope.is_lambda or scope.parent is None:
            return False
        if scope.parent.is_module and not scope.name.startswith("_"):
            return False  # public: another module may call it with a ref
        if not self._calls_all_seen(scope):
            return False
        bound = []
        for call in self.plain_calls:
            if call.callee is scope:
                bound.append((call.caller, call.bindings.get(name)))
        for call in self.traced_calls:
            if any(t is scope for t in call.targets):
                bound.append((call.func, call.bindings.get(id(scope), {}).get(name)))
        if not bound:
            return False
        for caller, b in bound:
            if b is None or b.partial or b.expr is None:
                return False
            if isinstance(b.value, ArrayVal):
                continue
            if b.value is not None and contains_ref(b.value):
                return False
            if not self._non_ref(b.expr, caller, depth):
                return False
        return True

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
        seen = 0
        for node in walk_nodes(list(body)):
            if type(node) is cst.Name and node.value == fname:
                seen += 1
        calls, args = index
        used = sum(1 for n in calls.get(fname, ()) if n) + sum(args.get(fname, ()))
        # The def's own name is a Name node too.
        return seen - 1 <= used and seen >= 2

    def _name_facts(self, scope: FunctionInfo) -> dict:
        """name -> ([(kind, value node)], evidence) for the names bound directly in
        ``scope``: kind "assign" (a plain assignment, its value), "aug" (`x += v`) or "other"
        (a loop or with target, an unpacking, a def, an import ...); evidence: the scope uses
        the name where a ref fails. One walk per scope, cached."""
        cache = self.cached("arrayness names", dict)
        out = cache.get(id(scope))
        if out is not None:
            return out
        out = cache[id(scope)] = {}
        body = scope.node.body if scope.is_module else getattr(scope.node.body, "body", None)
        if not isinstance(body, (list, tuple)):
            return out
        binds: dict = {}
        used: set = set()

        def bind(n, kind, node) -> None:
            binds.setdefault(n, []).append((kind, node))

        for node in walk_nodes(body, into=_in_own_scope):
            t = type(node)
            if t is cst.Assign:
                for tg in node.targets:
                    if type(tg.target) is cst.Name:
                        bind(tg.target.value, "assign", node.value)
                    else:
                        for n in _target_names(tg.target):
                            bind(n, "other", node)
                        if type(tg.target) is cst.Subscript and type(node.value) is cst.Name \
                                and isinstance(self._values.get(id(tg.target.value)), RefVal):
                            used.add(node.value.value)  # `o_ref[...] = acc`
            elif t is cst.AnnAssign:
                if type(node.target) is cst.Name:
                    bind(node.target.value, "assign" if node.value is not None else "none",
                         node.value)
            elif t is cst.AugAssign:
                if type(node.target) is cst.Name:
                    bind(node.target.value, "aug", node)
                    used.add(node.target.value)  # `x += v` on a ref raises
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
            self._note_array_uses(node, t, used)
        for n, bs in binds.items():
            if any(kind in ("other", "none") for kind, _ in bs):
                out[n] = ([("other", None)] * 2, False)  # never resolved
            else:
                out[n] = (bs, n in used)
        for n in used:
            if n not in out:
                out[n] = ([], True)  # only a parameter (or a free name)
        return out

    def _note_array_uses(self, node, t, used: set) -> None:
        """Names that ``node`` uses where a ref fails, on JAX 0.10.2 and 0.12 (REF007's
        errors): operands of arithmetic, Array-only methods, arguments of array functions."""
        if t is cst.BinaryOperation:
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


def _at_receiver(call):
    sub = call.func.value
    if type(sub) is cst.Subscript and type(sub.value) is cst.Attribute and \
            sub.value.attr.value == "at":
        return sub.value.value
    return None


def _mentions(expr, name: str) -> bool:
    """``expr`` reads ``name`` (outside nested scopes)."""
    if expr is None:
        return False
    return any(type(n) is cst.Name and n.value == name
               for n in walk_nodes([expr], into=_in_own_scope))


def _call_index(analysis) -> tuple:
    """(callee name -> [call nodes], name -> [count of it given to a recorded control-flow or
    transform call]) over the recorded calls."""
    calls: dict = {}
    args: dict = {}
    for call in analysis.plain_calls:
        f = call.node.func
        if type(f) is cst.Name:
            calls.setdefault(f.value, []).append(call.node)
    for call in analysis.traced_calls:
        f = call.node.func
        if type(f) is cst.Name and any(t.name == f.value for t in call.targets):
            calls.setdefault(f.value, []).append(call.node)
        for arg in call.node.args:
            if type(arg.value) is cst.Name and any(t.name == arg.value.value
                                                   for t in call.targets):
                args.setdefault(arg.value.value, []).append(1)
    return calls, args
