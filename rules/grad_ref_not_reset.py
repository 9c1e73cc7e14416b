from __future__ import annotations

from reflint._lazy import lazy
from reflint.rule import Finding, Rule
from reflint.values import RefVal

from ._common import REF_EVIDENCE, parents_of, ref_name

cst = lazy("reflint.nodes")

_ADDS = ("augitem", "addupdate")


class GradRefNotReset(Rule):
    """A gradient ref bound with `with_refs` is reused across iterations without being zeroed.

    ## What it does
    Reports `vjp_fn.with_refs(g_ref)` applied inside a loop body (or inside a function called
    in a loop body, with the same ref every time) when the gradient ref is created before the
    loop, read in that loop body or in that function (the gradient is used, e.g. for an
    update), and never reset in it (no `g_ref[...] = ...` or other write but `+=`).

    ## Why is this bad?
    `with_refs` *accumulates*: JAX adds the new gradient to what the ref holds. A gradient
    ref that is read every step without being zeroed holds the sum of all gradients so far,
    so step `n` applies `n` steps' worth of gradients. Nothing fails. Zero it before (or
    after) each use: `g_ref[...] = jnp.zeros_like(g_ref[...])`. Accumulating over micro-batches
    and reading the ref only after the loop is fine and not reported.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    w = jnp.ones(3)
    g_ref = jax.new_ref(jnp.zeros(3))
    for step in range(3):
        _, f_vjp = jax.vjp(lambda w: jnp.sum(w * w), w)
        f_vjp.with_refs(g_ref)(1.0)
        w = w - 0.1 * g_ref[...]
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    w = jnp.ones(3)
    g_ref = jax.new_ref(jnp.zeros(3))
    for step in range(3):
        g_ref[...] = jnp.zeros(3)
        _, f_vjp = jax.vjp(lambda w: jnp.sum(w * w), w)
        f_vjp.with_refs(g_ref)(1.0)
        w = w - 0.1 * g_ref[...]
    ```

    ## Known limits
    Only loops in the function that applies `with_refs`, or loops calling that function
    directly with the ref, are followed; a ref reset by a helper function the analysis does
    not see into is still taken as not reset (write the reset where the loop is).

    ## JAX versions
    `with_refs` exists from JAX 0.10.2 on; measured on 0.10.2 and 0.12.0.1: three steps give
    `[6, 6, 6]` for a gradient of `[2, 2, 2]` per step, eagerly and under `jit`.

    ## Runtime message
    None: the program runs and applies accumulated gradients. No run-time check: accumulating
    into a gradient ref on purpose (micro-batches) looks the same to JAX.
    """

    code = "REF026"
    name = "grad-ref-not-reset"
    fixable = ""
    triggers = (REF_EVIDENCE, r"\bwith_refs\b")

    def check(self, analysis):
        if analysis.settings.target_jax_version < (0, 10, 2):
            return
        applied = {id(a.with_refs) for a in analysis.vjp_applications if a.with_refs is not None}
        seen = set()
        for w in analysis.with_refs_calls:
            if id(w.node) not in applied or not w.entries:
                continue
            parents = parents_of(analysis)
            for arg, value in w.entries:
                if not isinstance(value, RefVal) or value.tree or id(arg) in seen:
                    continue
                loop = _enclosing_loop(parents, w.node)
                if loop is not None and value.origin == "created" and \
                        not _inside(parents, value.node, loop) and \
                        _used_not_reset(analysis, parents, value, loop, w.func):
                    seen.add(id(arg))
                    yield self._finding(analysis, arg, value, "this loop")
                    continue
                # A function that accumulates into a ref parameter or a closed-over ref and
                # reads it, called in a loop with the same ref.
                func = w.func
                if func is None or func.is_module or \
                        not _used_not_reset(analysis, parents, value, func.node, func):
                    continue
                for call, ref in _calls_in_loops(analysis, parents, func, value):
                    loop = _enclosing_loop(parents, call.node)
                    if ref.origin == "created" and not _inside(parents, ref.node, loop) and \
                            not _written(analysis, parents, ref, loop):
                        seen.add(id(arg))
                        yield self._finding(analysis, arg, value,
                                            f"the loop that calls `{func.name}`")
                        break

    def _finding(self, analysis, arg, ref, where):
        name = ref_name(analysis, arg.value, ref)
        return Finding(arg.value, (
            f"gradient ref {name} accumulates (`with_refs` adds to it) and is read in "
            f"{where}, but never zeroed there: each iteration uses the sum of every gradient "
            f"so far. Reset it before each step (`{name}[...] = jnp.zeros_like({name}[...])`)"))


def _enclosing_loop(parents, node):
    """The innermost `for`/`while` whose body holds ``node``, within its function."""
    n = parents.get(id(node))
    while n is not None:
        t = type(n)
        if t in (cst.For, cst.While):
            return n
        if t in (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module):
            return None
        n = parents.get(id(n))
    return None


def _inside(parents, node, container) -> bool:
    n = node
    while n is not None:
        if n is container:
            return True
        n = parents.get(id(n))
    return False


def _same_ref(a, b) -> bool:
    return a.key == b.key


def _used_not_reset(analysis, parents, ref, region, func) -> bool:
    """``ref`` is read in ``region`` and written there only by `+=` (or not at all)."""
    read = False
    for acc in analysis.accesses:
        if not _same_ref(acc.ref, ref) or not _inside(parents, acc.node, region):
            continue
        if acc.is_write and acc.kind not in _ADDS:
            return False
        if acc.is_write and acc.kind == "augitem" and \
                not isinstance(acc.node.operator, cst.AddAssign):
            return False
        if not acc.is_write:
            read = True
    return read


def _written(analysis, parents, ref, region) -> bool:
    for acc in analysis.accesses:
        if _same_ref(acc.ref, ref) and acc.is_write and acc.kind not in _ADDS and \
                _inside(parents, acc.node, region):
            return True
    return False


def _calls_in_loops(analysis, parents, func, ref):
    """(call, the caller's ref) for calls of ``func`` inside a loop that bind ``ref`` (a
    parameter of ``func``, or a ref it closes over) to the same ref each time."""
    if ref.origin == "param" and isinstance(ref.key, tuple) and len(ref.key) >= 3:
        pname = ref.key[2]
        for call in list(analysis.traced_calls) + list(analysis.plain_calls):
            targets = getattr(call, "targets", None) or [getattr(call, "callee", None)]
            if func not in targets:
                continue
            bindings = call.bindings.get(id(func), {}) if hasattr(call, "targets") else \
                call.bindings
            b = bindings.get(pname)
            if b is None or not isinstance(b.value, RefVal) or \
                    _enclosing_loop(parents, call.node) is None:
                continue
            yield call, b.value
    elif ref.origin == "created":
        for call in list(analysis.traced_calls) + list(analysis.plain_calls):
            targets = getattr(call, "targets", None) or [getattr(call, "callee", None)]
            if func in targets and _enclosing_loop(parents, call.node) is not None:
                yield call, ref
