from __future__ import annotations

import functools
import weakref

from reflint._lazy import lazy
from reflint import api
from reflint.diagnostics import SAFE, UNSAFE, Edit, Fix
from reflint.rule import Finding, Rule
from reflint.values import ArrayVal, QN

from ._common import parents_of

cst = lazy("reflint.nodes")
_analysis = lazy("reflint.analysis")


# Functions, not constants: libcst is imported on first use (reflint._lazy).
@functools.cache
def _at_method() -> dict:
    """Augmented operators with a direct .at[] method."""
    return {cst.AddAssign: "add", cst.MultiplyAssign: "multiply", cst.DivideAssign: "divide",
            cst.PowerAssign: "power", cst.SubtractAssign: "add"}


@functools.cache
def _atomic() -> tuple:
    return (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float,
            cst.Imaginary, cst.SimpleString)


class ArrayItemAssignment(Rule):
    """Item assignment on a JAX Array, which is immutable.

    ## What it does
    Reports `x[i] = v` and `x[i] op= v` (any augmented operator) where `x` is a JAX Array: the
    result of a `jax.numpy`, `jax.lax`, `jax.random`, `jax.nn` or `jax.scipy` call, of
    arithmetic on one, or the value read from a Ref (`x = x_ref[...]`). It also reports it on a
    parameter of a traced function (`jit`, `vmap`, a `lax.scan`/`fori_loop`/`while_loop`
    body...) when every call in the module passes it an Array: inside the trace the parameter
    is a tracer, and on a parameter annotated `jax.Array` (or `jnp.ndarray`) that no call in the
    module passes a ref (a parameter named like a ref, `o_ref: jax.Array`, is left alone: JAX's
    own kernel helpers annotate refs that way). NumPy arrays and `ArrayLike` are not reported.

    ## Why is this bad?
    JAX arrays are immutable: item assignment raises `TypeError` at run time, inside `jit` or
    not. The functional update `x = x.at[i].set(v)` builds the new array (in place under
    `jit` when `x` is not used afterwards). When `x` is state that must be updated in place and
    seen by others, keep it in a Ref instead: `x_ref = jax.new_ref(x)`, then `x_ref[i] = v`.

    ## Example
    ```python
    import jax.numpy as jnp

    x = jnp.zeros(3)
    x[0] = 1.0
    ```

    ## Use instead
    ```python
    import jax.numpy as jnp

    x = jnp.zeros(3)
    x = x.at[0].set(1.0)
    ```

    ## Fix safety
    For a statement `name[idx] = v` the fix rewrites it to `name = name.at[idx].set(v)`; `+=`,
    `-=`, `*=`, `/=`, `**=` become `.add(v)`, `.add(-v)`, `.multiply(v)`, `.divide(v)`,
    `.power(v)`. Other operators (`//=`, `%=`, `@=`, bit operators) get no fix. The fix is safe
    when `name` is a local variable that nothing else can see: the original code always
    raises. It is unsafe when the array may be aliased (a parameter, or a name whose value was
    passed, returned or bound to another name before the write): in-place semantics would have
    updated the other holders too, the rebinding does not. No fix is offered when `name` is a
    global or closed-over name, since assigning it would make it local.

    ## Known limits
    Only arrays the analysis can see are reported: values of unknown calls and parameters of
    functions that are not traced or called with other values are not. `x[i] = v` on a list
    of arrays returned by `jnp.split`/`jnp.meshgrid` is not reported.

    ## JAX versions
    The same in every version (0.7.1–0.10.2): item assignment raises `TypeError`.

    ## Runtime message
    `TypeError: JAX arrays are immutable and do not support in-place item assignment. Instead of
    x[idx] = y, use x = x.at[idx].set(y) or another .at[] method:
    https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html`
    """

    code = "REF013"
    name = "array-item-assignment"
    fixable = SAFE
    # A JAX array module, a Ref API or the Array type (a parameter's annotation), and a
    # subscript: an item target need not be followed by `=` in the text (`x[0], x[1] = ...`,
    # `for x[i] in ...`, a line continuation).
    triggers = ("jax", r"numpy|lax|random|\bnn\b|scipy|[rR]ef|freeze|pallas|mutable_array|"
                + "|".join(sorted(api.ARRAY_TYPE_WORDS)), r"\]")

    def check(self, analysis):
        for w in analysis.item_writes:
            stmt, base, func, target = w.stmt, w.base, w.func, w.target
            why = _array_reason(analysis, base, target.value, func)
            if why is None:
                continue
            text = analysis.text_of(target.value)
            if len(text) > 40 or "\n" in text:
                text = "the array"
            if isinstance(stmt, cst.AugAssign):
                op = analysis.text_of(stmt.operator)
                meth = _at_method().get(type(stmt.operator))
                suggestion = f"`.at[...].{meth}(...)`" if meth else "an `.at[...]` update"
                if isinstance(stmt.operator, cst.SubtractAssign):
                    suggestion = "`.at[...].add(-(...))`"
            else:
                op = "="
                suggestion = "`.at[...].set(...)`"
            msg = (f"`{text}` is a JAX Array ({why}); JAX arrays are immutable, so "
                   f"`{text}[...] {op} ...` raises TypeError. Use {suggestion} and rebind the "
                   f"name, or keep the array in a Ref (`jax.new_ref`) if it is state updated "
                   f"in place")
            yield Finding(stmt if _is_whole_statement(stmt, target) else target, msg,
                          fix=_fix_factory(stmt, target, func, why))


_META = api.ARRAY_METADATA_FUNCTIONS


def _array_reason(analysis, base, expr, func):
    if isinstance(base, ArrayVal):
        if not _true_array(analysis, base.node, 0):
            return None
        node = base.node
        if isinstance(node, cst.Param):
            ann = analysis.text_of(node.annotation.annotation)
            return f"parameter `{node.name.value}` annotated `{ann}`"
        if isinstance(node, cst.Call):
            return f"the result of {analysis.text_of(node.func)}()"
        if isinstance(node, cst.Subscript) and \
                analysis.ref_of(node.value) is not None:
            return "read from a Ref"
        if isinstance(node, cst.Element):
            source = _unpacked_from(analysis, node)
            if isinstance(source, cst.Call):
                return f"unpacked from the result of {analysis.text_of(source.func)}()"
            return "unpacked from an Array"
        return "an Array expression"
    if base is None and isinstance(expr, cst.Name):
        return _traced_array_param(analysis, expr.value, func)
    return None




def _qn_short(analysis, call):
    fv = analysis.value_of(call.func)
    if not isinstance(fv, QN):
        return None
    canon = api.canonical(fv.qualname)
    if canon is not None:
        return fv.qualname if canon in api.ARRAY_RESULT_APIS else None
    return fv.qualname


def _true_array(analysis, node, depth, element=False) -> bool:
    """The ArrayVal made at ``node`` is really a JAX Array (not a list/tuple of arrays).
    ``element``: the value is indexed once (an element of a list of arrays is an array)."""
    if node is None or depth > 20:
        return False
    if isinstance(node, cst.Param):
        return True  # annotated jax.Array (api.ARRAY_TYPES)
    if isinstance(node, cst.Call):
        qn = _qn_short(analysis, node)
        if qn is None:
            return False
        short = qn.rsplit(".", 1)[-1]
        if short in _META:
            return False
        if short in api.SEQUENCE_RESULT_FUNCTIONS or ".linalg." in qn:
            return element
        return True
    if isinstance(node, cst.Subscript):
        if analysis.ref_of(node.value) is not None:
            return True
        inner = analysis.value_of(node.value)
        return isinstance(inner, ArrayVal) and _true_array(analysis, inner.node, depth + 1,
                                                           element=True)
    if isinstance(node, cst.BinaryOperation):
        for side in (node.left, node.right):
            v = analysis.value_of(side)
            if isinstance(v, ArrayVal) and _true_array(analysis, v.node, depth + 1):
                return True
        return False
    if isinstance(node, cst.UnaryOperation):
        v = analysis.value_of(node.expression)
        return isinstance(v, ArrayVal) and _true_array(analysis, v.node, depth + 1)
    if isinstance(node, cst.Element):
        # `a, b = jnp.split(x, 2)`: an element of a target unpacking an Array (one of the
        # Arrays a function returned, or a row of an Array).
        source = _unpacked_from(analysis, node)
        v = analysis.value_of(source) if source is not None else None
        return isinstance(v, ArrayVal) and _true_array(analysis, v.node, depth + 1,
                                                       element=True)
    return False


def _unpacked_from(analysis, element):
    """The value ``a, b = value`` unpacks into the target holding ``element``; None for any
    other target (a loop's, a nested tuple's)."""
    parents = parents_of(analysis)
    target = parents.get(id(element))
    assign = parents.get(id(parents.get(id(target))))
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(assign, cst.Assign):
        return None
    return assign.value


def _traced_array_param(analysis, name, func):
    """A parameter of a traced function that every known call binds to a JAX Array."""
    if func is None or func.is_module or not func.roles:
        return None
    p = func.param(name)
    if p is None or p.kind not in ("pos", "posonly", "kwonly"):
        return None
    if _rebinds(func, name):
        return None
    bindings = []
    for call in analysis.traced_calls:
        if func in call.targets:
            b = call.bindings.get(id(func))
            if b is None:
                return None
            bindings.append(b)
    for call in analysis.plain_calls:
        if call.callee is func:
            return None
    if not bindings or len(bindings) != len(func.callers):
        return None
    for role in func.roles.values():
        t = role.transform
        if t is not None and ("static_argnums" in t.kwargs or "static_argnames" in t.kwargs):
            return None
    for b in bindings:
        binding = b.get(name)
        if binding is None or not isinstance(binding.value, ArrayVal):
            return None
    return f"parameter `{name}` of traced `{func.name}` receives Arrays at every call"


def _rebinds(func, name) -> bool:
    """True if ``name`` is (re)bound anywhere in ``func`` besides being its parameter."""
    stack = [func.node.body]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is cst.AssignTarget or t is cst.AnnAssign or t is cst.AugAssign or \
                t is cst.For or t is cst.CompFor or t is cst.NamedExpr:
            if _binds(node.target, name):
                return True
        elif t is cst.AsName:
            if _binds(node.name, name):
                return True
        elif t is cst.Global or t is cst.Nonlocal:
            if any(n.name.value == name for n in node.names):
                return True
        elif t is cst.Del:
            return True
        stack.extend(_analysis.child_nodes(node))
    return False


def _binds(target, name) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(e.value, name) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _binds(target.value, name)
    return False


def _is_whole_statement(stmt, target) -> bool:
    if isinstance(stmt, cst.AugAssign):
        return stmt.target is target
    if isinstance(stmt, cst.Assign):
        return len(stmt.targets) == 1 and stmt.targets[0].target is target
    return False


def _needs_parens() -> tuple:
    """Values that change meaning (or stop parsing) as a bare call argument, or read
    ambiguously there: parenthesized when moved into `.set(...)`."""
    return (cst.Tuple, cst.Yield, cst.NamedExpr, cst.Lambda, cst.IfExp, cst.StarredElement)


def _fix_factory(stmt, target, func, why):
    if not _is_whole_statement(stmt, target) or not isinstance(target.value, cst.Name):
        return None
    if isinstance(stmt, cst.AugAssign):
        meth = _at_method().get(type(stmt.operator))
        if meth is None:
            return None
        negate = isinstance(stmt.operator, cst.SubtractAssign)
    else:
        meth, negate = "set", False
    name = target.value.value

    def make(analysis):
        if not _is_local(analysis, name, func):
            return None
        pos = analysis.position(stmt)
        if pos is None:
            return None
        code = analysis.module.code_for_node
        index = code(target)[len(code(target.value)):]
        value = code(stmt.value)
        wrapped = False
        if isinstance(stmt.value, _needs_parens()) and not getattr(stmt.value, "lpar", ()):
            # Moved into a call: `v, 7.0` must stay one tuple argument, `yield v` one value.
            value, wrapped = f"({value})", True
        if negate:
            atomic = wrapped or isinstance(stmt.value, _atomic()) and not stmt.value.lpar
            value = f"-{value}" if atomic else f"-({value})"
        new = f"{name} = {name}.at{index}.{meth}({value})"
        line, col, end_line, end_col = pos
        aliased = why.startswith("parameter") or _maybe_aliased(analysis, name, func, stmt)
        return Fix(f"Rewrite as `{name} = {name}.at[...].{meth}(...)`",
                   (Edit(line, col, end_line, end_col, new),), UNSAFE if aliased else SAFE)

    return make


def _is_local(analysis, name, func) -> bool:
    if func is None or func.is_module:
        return True
    if analysis.declarations(func).get(name):
        return False
    return name in func.summary or func.param(name) is not None


# The scopes' alias indexes of each analysis (kept as long as the analysis is).
_ALIAS_INDEXES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _maybe_aliased(analysis, name, func, stmt) -> bool:
    """A bare use of ``name`` (not ``name[...]``, ``name.attr`` or a rebinding) before the
    write, or anywhere when the write is in a loop: the array may be held elsewhere too.

    The scope is walked once for all names and writes (``_AliasIndex``), not once per finding:
    a module of N item assignments costs O(N), not O(N^2)."""
    module_scope = func is None or func.is_module
    scope_node = analysis.module if module_scope else func.node.body
    cache = _ALIAS_INDEXES.get(analysis)
    if cache is None:
        cache = _ALIAS_INDEXES[analysis] = {}
    index = cache.get(id(scope_node))
    if index is None:
        index = cache[id(scope_node)] = _AliasIndex(scope_node, module_scope)
    uses = index.uses.get(name)
    if not uses:
        return False
    if id(stmt) in index.looped:
        return True
    first = index.first_line.get(name)
    if first is None:
        first = index.first_line[name] = min((analysis.line_of(u) or 0) for u in uses)
    return first <= (analysis.line_of(stmt) or 0)


class _AliasIndex:
    """One walk of a scope: the bare uses of every name (``uses``: name -> nodes) and the
    assignments inside a ``for``/``while`` body (``looped``: node ids). At module scope a
    nested function or class counts every occurrence of a name as a use (it may run at any
    time), and its own loops do not count. Walks the dataclass fields (``child_nodes``), not
    libcst's visitor, which rebuilds every node it passes."""

    def __init__(self, scope_node, module_scope: bool):
        self.uses: dict = {}
        self.looped: set = set()
        self.first_line: dict = {}
        uses = self.uses
        children = _analysis.child_nodes
        defs = (cst.FunctionDef, cst.ClassDef)
        stack = [(scope_node, False, False)]  # node, in a loop body, in a module-level def
        while stack:
            node, loop, in_def = stack.pop()
            t = type(node)
            if loop and (t is cst.Assign or t is cst.AugAssign):
                self.looped.add(id(node))
            if in_def:
                if t is cst.Name:
                    uses.setdefault(node.value, []).append(node)
                else:
                    stack.extend((c, loop, True) for c in children(node))
                continue
            if t is cst.For or t is cst.While:
                body = node.body
                stack.extend((c, loop or c is body, False) for c in children(node))
                continue
            if t is cst.Subscript:
                if type(node.value) is cst.Name:
                    stack.extend((el, loop, False) for el in node.slice)
                    continue
            elif t is cst.Attribute:
                if type(node.value) is cst.Name:
                    continue
            elif t is cst.AssignTarget:
                if type(node.target) is cst.Name:
                    continue
            elif t is cst.AugAssign:
                if type(node.target) is cst.Name:
                    uses.setdefault(node.target.value, []).append(node)
            elif t is cst.Name:
                uses.setdefault(node.value, []).append(node)
                continue
            elif module_scope and t in defs:
                stack.extend((c, loop, True) for c in children(node))
                continue
            stack.extend((c, loop, False) for c in children(node))
