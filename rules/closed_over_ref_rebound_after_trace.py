from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import RefVal

from ._common import REF_EVIDENCE

cst = lazy("reflint.nodes")
_syntax = lazy("reflint.analysis.syntax")

# Transforms whose compiled function is cached and reused by later calls with the same
# argument types: a closed-over ref is captured by the first trace.
_CACHING = api.CACHING_TRANSFORMS


class ClosedOverRefReboundAfterTrace(Rule):
    """A module-level ref used by a jitted function is rebound after the function ran.

    ## What it does
    Reports a module-level assignment `buf = jax.new_ref(...)` when `buf` is already bound to
    a ref that a jit-compiled function closes over, that function was called at module level
    before the assignment, and is called again after it (the same function object: its `def`
    or `jax.jit(...)` is not run again in between). This is what re-running a notebook cell
    that "resets" the state does.

    ## Why is this bad?
    `jax.jit` traces the function once per argument signature and captures the closed-over
    ref it found then. Later calls with arguments of the same shapes reuse that trace, so
    they keep reading and updating the *old* ref; the new one is never touched, silently.
    Reset a ref by writing into it (`buf[...] = jnp.zeros_like(buf[...])`), or pass the ref
    as an argument.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    buf = jax.new_ref(jnp.zeros(3))


    @jax.jit
    def step(x):
        buf[...] += x


    step(jnp.ones(3))
    buf = jax.new_ref(jnp.zeros(3))
    step(jnp.ones(3))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    buf = jax.new_ref(jnp.zeros(3))


    @jax.jit
    def step(x):
        buf[...] += x


    step(jnp.ones(3))
    buf[...] = jnp.zeros(3)
    step(jnp.ones(3))
    ```

    ## Known limits
    Only module-level code is followed (a notebook's cells, a script): the rebinding, both
    calls and the function's definition must be at module level, and the calls direct calls
    of the jitted function. A file that calls `clear_cache`/`clear_caches` is not reported.

    ## JAX versions
    The same on JAX 0.10.2 and 0.12.0.1 (measured): after the rebinding, a call with the same
    argument shapes updates (and reads) the old ref; a call with new shapes traces again and
    uses the new ref.

    ## Runtime message
    None from JAX: the program runs with the old ref. `reflint run` checks every call of a
    jit-compiled function: when a global name it read as a ref at its last trace now holds
    another ref and the call reused the trace, it raises REF024.
    """

    code = "REF024"
    name = "closed-over-ref-rebound-after-trace"
    fixable = ""
    triggers = (REF_EVIDENCE, api.trigger_words(_CACHING))

    def check(self, analysis):
        if "clear_cache" in analysis.source:
            return
        module = analysis.module_info
        calls = [c for c in analysis.traced_calls if c.func is module and
                 any(t.kind in _CACHING for t in c.transforms)]
        if not calls:
            return
        bindings = _module_bindings(analysis)
        rebound = {n for n, b in bindings.items() if len(b) > 1}
        names = {}
        for c in calls:
            for target in c.targets:
                for label in target.closure_refs:
                    if label in rebound:
                        names.setdefault(label, []).append((c, target))
        if not names:
            return
        index = _statement_index(analysis)
        for name, uses in names.items():
            spans = _target_spans(uses, index)
            bound = [idx for stmt, idx in bindings.get(name, ())]
            candidates = _bindings_inside(spans, sorted(set(bound)))
            for stmt, idx in bindings.get(name, ()):
                if idx not in candidates or not isinstance(stmt, cst.Assign) or \
                        not isinstance(analysis.value_of(stmt.value), RefVal):
                    continue
                hit = _first_hit(candidates[idx], idx, bindings)
                if hit is None:
                    continue
                c1, target = hit
                yield Finding(stmt, (
                    f"`{name}` is rebound to a new ref after `{target.name}`, a jit-compiled "
                    f"function that closes over it, was called: jit captured the old ref "
                    f"when it traced `{target.name}`, so later calls with the same argument "
                    f"shapes keep reading and updating the old ref, silently. Reset it in "
                    f"place (`{name}[...] = ...`) or pass the ref as an argument"),
                    related_node=c1.node, related_message=f"`{target.name}` traced here")


def _target_spans(uses: list, index: dict) -> dict:
    """id(target) -> [first statement, last statement, [(position in ``uses``, call, target,
    statement)]] of the calls of each jitted target (calls outside the statement index are
    left out: they are neither before nor after a binding)."""
    spans: dict = {}
    for pos, (c, t) in enumerate(uses):
        i = index.get(id(c.node))
        if i is None:
            continue
        span = spans.get(id(t))
        if span is None:
            spans[id(t)] = [i, i, [(pos, c, t, i)]]
        else:
            span[0], span[1] = min(span[0], i), max(span[1], i)
            span[2].append((pos, c, t, i))
    return spans


def _bindings_inside(spans: dict, bound: list) -> dict:
    """binding statement -> the spans (targets) called both before and after it: one bisect
    per target, so a notebook rebinding a ref in every cell costs linear time, not the square
    of its cells (each cell's function is called in its own cell)."""
    import bisect

    out: dict = {}
    for span in spans.values():
        lo, hi = span[0], span[1]
        if hi - lo < 2:
            continue
        for k in range(bisect.bisect_right(bound, lo), bisect.bisect_left(bound, hi)):
            out.setdefault(bound[k], []).append(span[2])
    return out


def _first_hit(calls_by_target: list, idx: int, bindings: dict):
    """The (call, target) of the first use (in the order of ``uses``) called before statement
    ``idx`` whose target is called again after it by the same name, that name not rebound in
    between; None when there is none."""
    best = None
    for calls in calls_by_target:
        after = [(c, i) for _, c, _, i in calls if i > idx]
        for pos, c1, t1, i1 in calls:
            if i1 >= idx or best is not None and pos >= best[0]:
                continue
            for c2, later in after:
                if not _same_callee(c1, c2):
                    continue
                callee = c2.node.func.value
                if any(idx < i < later for _, i in bindings.get(callee, ())):
                    continue  # the jitted function is made anew in between
                best = (pos, c1, t1)
                break
    return None if best is None else (best[1], best[2])


def _same_callee(c1, c2) -> bool:
    f1, f2 = c1.node.func, c2.node.func
    return isinstance(f1, cst.Name) and isinstance(f2, cst.Name) and f1.value == f2.value


def _statement_index(analysis) -> dict:
    """id(node) -> the index of the module-level statement holding it."""
    def build() -> dict:
        out = {}
        for i, stmt in enumerate(analysis.module.body):
            for node in _syntax.walk_nodes([stmt]):
                out[id(node)] = i
        return out

    return analysis.cached("module statement index", build)


def _module_bindings(analysis) -> dict:
    """name -> [(statement, index)] of the module-level statements that bind it: assignments
    (also inside module-level `if`/`for`/`with`/`try`), defs and classes."""
    def build() -> dict:
        out: dict = {}
        for i, top in enumerate(analysis.module.body):
            for node in _syntax.walk_nodes([top], _syntax._in_own_scope):
                t = type(node)
                if t is cst.Assign:
                    for tgt in node.targets:
                        for n in _syntax._target_names(tgt.target):
                            out.setdefault(n, []).append((node, i))
                elif t in (cst.FunctionDef, cst.ClassDef):
                    out.setdefault(node.name.value, []).append((node, i))
        return out

    return analysis.cached("module bindings", build)
