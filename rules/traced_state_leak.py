from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import (ArrayVal, ClassVal, DictVal, InstanceVal, NamespaceVal, QN, RefVal,
                            SeqVal, iter_refs)

from ._common import nnx_words, role_word

cst = lazy("reflint.nodes")
_analysis = lazy("reflint.analysis")

# Trace kinds under which Python code runs once per trace (not per call, iteration or element)
# and under which values are tracers. Plain grad/custom_vjp/checkpoint re-trace on every call.
LEAK_KINDS = tuple(r for r in api.Role if api.role_info(r).once_per_trace)
STORE_METHODS = api.STORE_METHODS


class TracedStateLeak(Rule):
    """Python state outside a traced function is mutated inside it.

    ## What it does
    Reports, inside a function that JAX traces (`jit`, `vmap`, `pmap`, `shard_map`, a
    `lax.scan`/`cond`/`switch`/`while_loop`/`fori_loop`/`map` body, a Pallas kernel, and the
    local helpers they call), a mutation of Python state that outlives the trace:

    - item assignment on a global or closed-over list, dict or set (`cache["k"] = x`,
      `counts[0] += 1`);
    - `.append`, `.extend`, `.insert`, `.update`, `.add` of a value computed in the traced
      function (an expression using one of its parameters or local variables, or a JAX Array)
      onto such a container (`history.append(x)`);
    - attribute assignment on a global or closed-over instance of a class defined in the
      module (`state.count += 1`);
    - `self.attr.append(...)` (or another store method) with a traced value in a method that
      is itself traced (measured 0.10.2 and 0.12.0.1: the list keeps one tracer, silently);
    - `self.attr = ...` in a method that is itself traced (e.g. decorated with
      `@partial(jax.jit, static_argnums=0)`);
    - attribute assignment on a global or closed-over Flax NNX Module/Pytree (Flax raises
      `TraceContextError`, under NNX transforms too), and on an NNX module holding refs passed
      as an argument to `jax.jit`/`jax.vmap`/a control-flow body (the change is silently lost;
      `nnx.jit`, `nnx.vmap` ... carry it back and are not reported).

    A container is reported only when every binding of its name in the defining scope is a
    list/dict/set display or comprehension, `list()`/`dict()`/`set()` or a `collections`
    constructor.

    ## Why is this bad?
    JAX runs the Python code of a traced function once, to record what it computes; later calls
    reuse the compiled result. A Python side effect therefore happens once, at trace time, not
    on every call (a jitted counter's `self.n += 1` counts to 1 and stays there), and in a
    `scan` body once, not once per iteration. Worse, the value it stores is a tracer: using it
    after the trace raises `UnexpectedTracerError`. State that must be updated on every call
    belongs in a Ref, which JAX threads through the compiled function for you.

    ## Example
    ```python
    from functools import partial

    import jax


    class Counter:
        def __init__(self):
            self.n = 0

        @partial(jax.jit, static_argnums=0)
        def count(self):
            self.n += 1
            return self.n
    ```

    ## Use instead
    ```python
    from functools import partial

    import jax


    class Counter:
        def __init__(self):
            self.n = jax.new_ref(0)

        @partial(jax.jit, static_argnums=0)
        def count(self):
            self.n[...] += 1
            return self.n[...]
    ```

    ## Known limits
    Only functions the analysis knows are traced are checked, and only containers and
    instances it can see being created in the module; objects of unknown type (from other
    modules or unknown calls) are never reported, since their methods may be pure. Mutation of
    objects created inside the traced function, of parameters, and of Refs is not reported.
    A container that the function also tests with `in` or reads with `.get` is taken for a
    trace-time memo cache and not reported. A write whose value is not traced (a constant,
    `count[0] += 1` of a Python int) is reported too: it is the once-per-trace side effect of
    the Example, whether or not a tracer leaks. Trace-time bookkeeping done on purpose
    (counting traces in a test) cannot be told from it: suppress it with `# noqa: REF012`. A
    function traced only ahead of time, by `jax.jit(f).trace(...)` or `.lower(...)`, is traced
    once on purpose and never called through the wrapper: state it collects is not reported.
    Rebinding a `global`/`nonlocal` name is not reported. A list or dict attribute of `self`
    (`self.history.append(loss)`) is reported in a traced method when the class creates it
    with a display (`self.history = []`).
    Under `grad`, `checkpoint` or `custom_vjp` alone the function is traced on every call, so
    nothing is reported there.

    ## JAX versions
    The same in every version: the mutation runs at trace time only. `UnexpectedTracerError`
    is raised when a leaked tracer is used later (0.7.1–0.10.2). `jax.new_ref` exists from 0.7.2
    (`jax.array_ref` in 0.7.1). Flax NNX objects: measured on flax 0.12.8 (JAX 0.10.2) and
    0.12.12 (JAX 0.12.0.1), the same on both.

    ## Runtime message
    Nothing when the mutation happens. Using a leaked value later gives `UnexpectedTracerError:
    Encountered an unexpected tracer. A function transformed by JAX had a side effect, allowing
    for a reference to an intermediate value with type float32[] wrapped in a
    DynamicJaxprTracer to escape the scope of the transformation.` A closed-over NNX object:
    `flax.errors.TraceContextError: Cannot mutate 'Params' from different trace level`.
    """

    code = "REF012"
    name = "traced-state-leak"
    fixable = ""
    # An API tracing once per call, and a store method, a subscript (an item target need not
    # be followed by `=` in the text: `d[k], y = ...`) or a class (attributes are reported
    # only on instances of local classes, attribute bags and `self`).
    triggers = (api.trigger_words(api.ONCE_PER_TRACE_APIS),
                r"\b(?:append|extend|insert|update|add|appendleft|extendleft)\b|\]|\bclass\b|"
                + api.words_pattern(api.NAMESPACE_WORDS))

    def check(self, analysis):
        for w in analysis.item_writes:
            stmt, base, value_expr, func, target = w.stmt, w.base, w.value_expr, w.func, w.target
            kind = _leak_kind(analysis, func)
            if kind is None or not isinstance(target.value, cst.Name):
                continue
            name = target.value.value
            scope = _outer_container_scope(analysis, name, func)
            if scope is None:
                continue
            where = "global" if scope.is_module else "closed-over"
            op = _op(stmt)
            yield Finding(target, f"`{name}[...] {op}` writes into the {where} Python container "
                          f"`{name}` inside {_where(kind, func)}" + _tail(name, func, kind))
        for aw in analysis.attribute_writes:
            stmt, base, attr, value, func = aw.stmt, aw.base, aw.attr, aw.value, aw.func
            kind = _leak_kind(analysis, func)
            if kind is None:
                continue
            for node in _attribute_targets(stmt, attr):
                if not isinstance(node.value, cst.Name):
                    continue
                obj = node.value.value
                nnx_arg = _nnx_argument(analysis, func, node.value, aw.base)
                if nnx_arg is not None:
                    yield Finding(node, f"`{obj}.{attr} {_op(stmt)}` sets an attribute of the "
                                  f"NNX object `{obj}` passed to {_where(nnx_arg, func)}: JAX "
                                  f"traces a copy of its Variables, so the new attribute is "
                                  f"silently lost when `{func.name}` returns (Flax raises no "
                                  f"error). Use {_nnx_spelling(nnx_arg)}, which carries "
                                  f"attribute changes back, or keep the value in a Variable "
                                  f"holding a ref (`{nnx_words(analysis)['ref_variable']}`) "
                                  f"and write it with `{obj}.{attr}[...] = ...`")
                    continue
                if _is_self_of_traced_method(analysis, func, node.value):
                    own = _own_leak_kind(func)
                    yield Finding(node, f"`self.{attr} {_op(stmt)}` sets an attribute of `self` "
                                  f"inside {_where(own, func, method=True)}; it runs once, when "
                                  f"JAX traces `{func.name}`, not on every {_every(own)}, and "
                                  f"leaks a tracer if the value is traced. Hold this state in a "
                                  f"Ref: "
                                  f"`self.{attr} = jax.new_ref(...)` in `__init__` and "
                                  f"`self.{attr}[...] {_op(stmt)}` here")
                    continue
                scope = analysis.free_name_scope(obj, func)
                if scope is None or _same_trace(analysis, scope, func):
                    continue
                where = "global" if scope.is_module else "closed-over"
                if _nnx_object(scope.summary.get(obj)):
                    yield Finding(node, f"`{obj}.{attr} {_op(stmt)}` sets an attribute of the "
                                  f"{where} NNX object `{obj}` inside {_where(kind, func)}; "
                                  f"Flax raises `TraceContextError: Cannot mutate ... from "
                                  f"different trace level` (under every JAX and NNX "
                                  f"transform). Pass `{obj}` to the function as an argument of "
                                  f"an NNX transform (`nnx.jit`, `nnx.vmap` ...), which carries "
                                  f"attribute changes back, or keep the value in a Variable "
                                  f"holding a ref (`{nnx_words(analysis)['ref_variable']}`) "
                                  f"and write it with `{obj}.{attr}[...] = ...`")
                    continue
                if not _plain_local_instance(analysis, scope.summary.get(obj), attr):
                    continue
                yield Finding(node, f"`{obj}.{attr} {_op(stmt)}` sets an attribute of the {where} "
                              f"object `{obj}` inside {_where(kind, func)}; it runs once, when "
                              f"JAX traces `{func.name}`, not on every "
                              f"{_every(_own_leak_kind(func) or kind)}, and leaks a tracer "
                              f"if the value is traced. Hold this state in a Ref: "
                              f"`{obj}.{attr} = jax.new_ref(...)` outside and "
                              f"`{obj}.{attr}[...] {_op(stmt)}` here")
        for mc in analysis.mutating_calls:
            call, recv, method, func = mc.call, mc.receiver, mc.method, mc.func
            if method not in STORE_METHODS:
                continue
            kind = _leak_kind(analysis, func)
            receiver = call.func.value
            if kind is not None and isinstance(receiver, cst.Attribute) and \
                    isinstance(receiver.value, cst.Name) and \
                    _is_self_of_traced_method(analysis, func, receiver.value) and \
                    _python_container(analysis.value_of(receiver)) and \
                    any(_maybe_traced(analysis, a.value, func, func.parent) for a in call.args):
                # `self.history.append(loss)` in a jitted method: a list of the object.
                own = _own_leak_kind(func)
                attr = receiver.attr.value
                yield Finding(call, f"`self.{attr}.{method}(...)` stores a traced value into "
                              f"the Python container `self.{attr}` inside "
                              f"{_where(own, func, method=True)}; it runs once, when JAX "
                              f"traces `{func.name}`, not on every {_every(own)}, and leaks a "
                              f"tracer. Return the value and store it outside, or hold it in a "
                              f"Ref (`self.{attr} = jax.new_ref(...)` in `__init__`, "
                              f"`self.{attr}[...] = ...` here)")
                continue
            if kind is None or not isinstance(receiver, cst.Name):
                continue
            name = receiver.value
            scope = _outer_container_scope(analysis, name, func)
            if scope is None:
                continue
            if not any(_maybe_traced(analysis, a.value, func, scope) for a in call.args):
                continue
            where = "global" if scope.is_module else "closed-over"
            yield Finding(call, f"`{name}.{method}(...)` stores a traced value into the {where} "
                          f"Python container `{name}` inside {_where(kind, func)}"
                          + _tail(name, func, kind))


def _every(kind) -> str:
    return api.role_info(kind).repeats or "call"


def _tail(name, func, kind) -> str:
    kind = _own_leak_kind(func) or kind
    return (f"; it runs once, when JAX traces `{func.name}`, not on every {_every(kind)}, and "
            f"leaks a tracer if the value is traced. Hold this state in a Ref instead "
            f"(`{name} = jax.new_ref(...)` outside, `{name}[...] = ...` inside) or return "
            f"the value")


def _op(stmt) -> str:
    if isinstance(stmt, cst.AugAssign):
        return analysis_op(stmt.operator)
    return "= ..."


def analysis_op(op) -> str:
    from reflint.analysis import op_text

    return f"{op_text(op)} ..."


def _where(kind, func, method=False) -> str:
    own = _own_leak_kind(func)
    word = role_word(own or kind)
    if own is not None:
        noun = "method" if method else "function"
        return f"{word.replace('function', noun)} `{func.name}`" if "function" in word \
            else f"`{func.name}`, {word}"
    return f"`{func.name}`, which runs inside {word}"


def _own_leak_kind(func):
    kinds = func.role_kinds()
    return next((k for k in LEAK_KINDS if k in kinds), None)


def _leak_kind(analysis, func):
    if func is None or func.is_module or not analysis.is_traced(func):
        return None
    kinds = analysis.trace_kinds(func)
    kind = next((k for k in LEAK_KINDS if k in kinds), None)
    if kind is not None and _traced_ahead_of_time_only(analysis, func, kinds):
        return None
    return kind


def _traced_ahead_of_time_only(analysis, func, kinds) -> bool:
    """``func`` is traced (once per trace) only by its own `jax.jit(func).trace(...)` /
    `.lower(...)` calls: it is traced once, on purpose, and never called through the wrapper,
    so state it collects is the trace's result (JAX's own ad_checkpoint.py does this)."""
    roles = [r for r in func.roles.values() if r.kind in LEAK_KINDS]
    if not roles or not {k for k in kinds if k in LEAK_KINDS} <= {r.kind for r in roles}:
        return False
    return all(analysis.aot_call_of(role.node) is not None for role in roles)


def _same_trace(analysis, scope, func) -> bool:
    """True if ``scope`` (where the object lives) is traced by the same trace as ``func``:
    the object is then created inside the traced computation."""
    if scope.is_module or not analysis.is_traced(scope):
        return False
    f = func
    while f is not None and f is not scope:
        if _own_leak_kind(f) is not None:
            return False
        f = f.parent
    return True


def _outer_container_scope(analysis, name, func):
    scope = analysis.free_name_scope(name, func)
    if scope is None or _same_trace(analysis, scope, func):
        return None
    if not analysis.is_python_container(name, scope):
        return None
    if _is_memo(analysis, func, name):
        return None
    return scope


def _is_memo(analysis, func, name) -> bool:
    """The function tests membership in the container (`if key not in cache:`) or reads it
    with `.get`: a trace-time memo cache, kept on purpose (as JAX's own code does)."""
    cache = analysis.cached("memo names", dict)
    names = cache.get(id(func.node))
    if names is None:
        names = cache[id(func.node)] = _memo_names(func.node)
    return name in names


def _memo_names(root) -> set:
    """Names tested with ``in``/``not in`` or read with ``.get``/``.setdefault`` anywhere in
    ``root`` (nested functions included)."""
    names = set()
    for node in _analysis.walk_nodes([root]):
        t = type(node)
        if t is cst.ComparisonTarget:
            if isinstance(node.operator, (cst.In, cst.NotIn)) and \
                    type(node.comparator) is cst.Name:
                names.add(node.comparator.value)
        elif t is cst.Call:
            f = node.func
            if type(f) is cst.Attribute and f.attr.value in ("get", "setdefault") and \
                    type(f.value) is cst.Name:
                names.add(f.value.value)
    return names


def _attribute_targets(stmt, attr):
    if isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    else:
        return []
    out = []
    while targets:
        t = targets.pop(0)
        if isinstance(t, cst.Attribute) and t.attr.value == attr:
            out.append(t)
        elif isinstance(t, (cst.Tuple, cst.List)):
            targets.extend(e.value for e in t.elements)
        elif isinstance(t, cst.StarredElement):
            targets.append(t.value)
    return out


def _python_container(value) -> bool:
    """A list or dict made by a display (the analysis' SeqVal of kind list, DictVal)."""
    return isinstance(value, SeqVal) and value.kind == "list" or isinstance(value, DictVal)


def _nnx_object(value) -> bool:
    """A Flax NNX Module/Pytree: an instance of an NNX class of this file, or an NNX object
    holding refs (Flax forbids setting its attributes from inside a trace)."""
    if isinstance(value, InstanceVal):
        return value.cls.nnx == "module"
    return isinstance(value, RefVal) and value.tree == "module"


def _nnx_argument(analysis, func, name_node, base):
    """The role under which ``func`` gets the NNX module ``name_node`` names as its own
    argument, when that transform (jax.jit, jax.vmap ...) does not carry attribute changes
    back, as NNX transforms do; None otherwise."""
    if not (isinstance(base, RefVal) and base.tree == "module" and base.origin == "param"
            and base.scope is func and base.root is None):
        return None
    own = _own_leak_kind(func)
    if own is None or any(api.role_info(k).graph_updates for k in func.role_kinds()):
        return None
    for fact in func.returns:  # returned: the caller gets the changed object back
        if any(r.key == base.key for r, _ in iter_refs(fact.value)):
            return None
    return own


def _nnx_spelling(kind) -> str:
    """The NNX transform to use instead of ``kind``'s JAX one (`nnx.jit` for jax.jit)."""
    nnx = {api.role_info(r).spelled.split(".")[-1]: api.role_info(r).spelled
           for r in api.Role if api.role_info(r).graph_updates}
    word = str(kind)
    return f"`{nnx[word]}`" if word in nnx else "the NNX transform (`nnx.jit`, `nnx.vmap` ...)"


def _is_self_of_traced_method(analysis, func, name_node) -> bool:
    if not func.is_method or not func.params or func.params[0].name != name_node.value:
        return False
    if _own_leak_kind(func) is None:
        return False
    if any(api.role_info(k).graph_updates for k in func.role_kinds()):
        return False  # nnx.jit ... carry attribute changes of `self` back
    v = analysis.value_of(name_node)
    return isinstance(v, InstanceVal) and v.cls is func.cls


def _plain_local_instance(analysis, value, attr, depth=0) -> bool:
    """An instance of a module-local class whose attribute assignment is plain Python: no
    ``__setattr__``, no property or descriptor named ``attr``, only local or no bases."""
    if isinstance(value, NamespaceVal):
        return True  # types.SimpleNamespace: plain attribute assignment
    if not isinstance(value, InstanceVal):
        return False
    return _plain_class(analysis, value.cls, attr, depth)


def _plain_class(analysis, cls, attr, depth) -> bool:
    if depth > 10:
        return False
    for stmt in getattr(cls.node.body, "body", ()):
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value in ("__setattr__", attr,
                                                                     "__getattr__"):
            return False
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    targets = [small.target]
                for t in targets:
                    if isinstance(t, cst.Name) and t.value in (attr, "__slots__"):
                        if t.value == "__slots__" or not isinstance(
                                getattr(small, "value", None),
                                (cst.Integer, cst.Float, cst.SimpleString, cst.Name)):
                            return False
    for base in cls.node.bases:
        if base.keyword is not None:
            return False
        bv = analysis.value_of(base.value)
        if isinstance(bv, QN) and bv.qualname == "builtins.object":
            continue
        if isinstance(bv, ClassVal) and _plain_class(analysis, bv.cls, attr, depth + 1):
            continue
        return False
    return True


def _maybe_traced(analysis, expr, func, scope) -> bool:
    """The expression may hold a traced value: it mentions a name bound in a traced function
    between ``func`` and the container's scope, or a JAX Array."""
    if isinstance(analysis.value_of(expr), ArrayVal):
        return True
    stack = [expr]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is cst.Attribute:
            stack.append(node.value)  # `x.attr`: the object, not the attribute's name
            continue
        if t is cst.Lambda:
            continue
        if t is cst.Name:
            if isinstance(analysis.value_of(node), ArrayVal):
                return True
            f = func
            while f is not None and f is not scope and not f.is_module:
                if node.value in f.summary or f.param(node.value) is not None:
                    return True
                f = f.parent
        elif t is cst.Call and node is not expr and isinstance(analysis.value_of(node), ArrayVal):
            return True
        stack.extend(_analysis.child_nodes(node))
    return False
