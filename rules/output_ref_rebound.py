from __future__ import annotations

import functools

from reflint._lazy import lazy
from reflint.diagnostics import SAFE, Edit, Fix
from reflint.rule import Finding, Rule
from reflint.values import ArrayVal

from ._common import REF_EVIDENCE, parents_of
from ._kernel_refs import kernel_names

cst = lazy("reflint.nodes")
_analysis = lazy("reflint.analysis")


@functools.cache
def _not_a_ref():
    """Values that are never a ref: a rebinding to one of them cannot be a ref view."""
    return (cst.Integer, cst.Float, cst.Imaginary, cst.BinaryOperation, cst.UnaryOperation,
            cst.Comparison)


class OutputRefRebound(Rule):
    """An output ref of a Pallas kernel is rebound to a value instead of written.

    ## What it does
    Reports `o_ref = value` in a `pl.pallas_call` kernel when `o_ref` is one of the kernel's
    output refs and `value` is an Array (a ref read, also `x_ref[pl.ds(0, 8)]`, arithmetic, a
    `jax.numpy` result, a Pallas function returning an Array: `pltpu.roll(x, 1, 0)`). The
    output parameters are those after the operands of the kernel's launch and before the
    scratch buffers (`scratch_shapes=[...]`, directly or in a grid spec).

    ## Why is this bad?
    Assigning to the parameter's name only rebinds a local Python variable: nothing is
    written into the output buffer. JAX does not complain; the kernel's output is whatever
    the buffer held (NaN under `interpret=True`, garbage on device). The write is
    `o_ref[...] = value`.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def double(x_ref, o_ref):
        o_ref = x_ref[...] * 2.0

    out = pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                         interpret=True)(jnp.ones(8))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    out = pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                         interpret=True)(jnp.ones(8))
    ```

    ## Fix safety
    The fix writes the value into the ref, `o_ref = v` → `o_ref[...] = v`. It is offered, as
    safe, only when the name is not read after the assignment (nor anywhere in a loop around
    it): then the rebinding had no other effect, and the original output was never written.
    When the name is read afterwards (as the Array it was rebound to), or bound by another
    statement of the kernel (the value written could read that Array: `o_ref = o_ref * 2`
    after `o_ref = x_ref[...] + 1`), no fix is offered.

    ## Known limits
    Only `pl.pallas_call` kernels whose launch the analysis sees are checked (also through a
    transform: `jax.vmap(pl.pallas_call(...))(x)`), with positional operands (no `*args`) and
    a countable `scratch_shapes`; kernels taking `*refs` are not.
    Rebinding to a value the analysis does not know (`o_ref = helper(x)`, which might return a
    ref view) is not reported. Input refs rebound to their value (`x_ref = x_ref[...]`) are
    fine and not reported.

    ## JAX versions
    Every version: JAX accepts the kernel silently (measured on 0.10.2 under `interpret=True`
    on CPU: the output is all NaN).

    ## Runtime message
    None: JAX is silent. `reflint run` checks the kernel's traced program: an output ref that
    no operation uses fails with `REF019 output-ref-rebound: output 0 of the Pallas kernel
    double (example.py:5) is never written ...`.
    """

    code = "REF019"
    name = "output-ref-rebound"
    fixable = SAFE
    triggers = REF_EVIDENCE

    def check(self, analysis):
        for info in analysis.kernel_functions():
            if info.is_lambda:
                continue
            assigned = _assigned_names(analysis)
            if not any(p.name in assigned for p in info.params):
                continue  # no `name = ...` of a parameter's name anywhere in the module
            outputs = analysis.kernel_outputs(info)
            if not outputs or not assigned.intersection(outputs):
                continue
            names = kernel_names(analysis, info)
            if not any(type(use[1]) is cst.AssignTarget
                       for out in outputs for use in names.get(out, ())):
                continue  # no `name = ...` of an output anywhere in the kernel
            body = info.node.body.body if isinstance(info.node.body, cst.IndentedBlock) else \
                info.node.body.body
            for stmt in _analysis.walk_nodes(list(body), into=_own_scope):
                if type(stmt) is not cst.Assign or len(stmt.targets) != 1:
                    continue
                target = stmt.targets[0].target
                if type(target) is not cst.Name or target.value not in outputs:
                    continue
                if _shadowed(analysis, stmt, info.node, target.value):
                    continue
                value = analysis.value_of(stmt.value)
                if not (isinstance(value, ArrayVal) or isinstance(stmt.value, _not_a_ref())):
                    continue
                name = target.value
                fix = None
                if not _read_after(analysis, info, stmt, name) and \
                        not _bound_elsewhere(info, stmt, name):
                    fix = _write_fix(target)
                yield Finding(
                    target,
                    f"{name} is an output ref of the Pallas kernel {info.name}: assigning to "
                    f"the name rebinds it and the output is never written; write it with "
                    f"{name}[...] = ...", fix=fix)


def _assigned_names(analysis) -> frozenset:
    """Every name bound by a plain assignment target (`name = ...`) in the module, nested
    scopes included: a kernel whose outputs are none of them rebinds none (the walk of its
    names, below, is spared)."""
    def build() -> frozenset:
        out = set()
        for stmt, _, _ in analysis.small_statements():
            if type(stmt) is cst.Assign:
                out.update(t.target.value for t in stmt.targets if type(t.target) is cst.Name)
        return frozenset(out)
    return analysis.cached("assigned names", build)


def _own_scope(node) -> bool:
    # Functions nested in the kernel are walked too (a `@pl.when(...)` body, a loop body):
    # `o_ref = v` there binds a local and never writes the output either.
    return type(node) not in (cst.ClassDef, cst.Lambda)


def _shadowed(analysis, stmt, kernel, name: str) -> bool:
    """Whether a function between ``stmt`` and the kernel has its own parameter ``name`` (a
    run_scoped body's ref) or declares it global."""
    parents = parents_of(analysis)
    p = parents.get(id(stmt))
    while p is not None and p is not kernel:
        if type(p) is cst.FunctionDef:
            params = p.params
            if any(q.name.value == name for q in (
                    *params.posonly_params, *params.params, *params.kwonly_params)) or \
                    any(isinstance(q, cst.Param) and q.name.value == name
                        for q in (params.star_arg, params.star_kwarg)):
                return True
            for node in _analysis.walk_nodes([p.body]):
                if type(node) is cst.Global and any(n.name.value == name for n in node.names):
                    return True
        p = parents.get(id(p))
    return False


def _read_after(analysis, info, stmt, name: str) -> bool:
    """Whether ``name`` is used after ``stmt`` in the kernel (nested functions included), or
    anywhere in a loop around it."""
    pos = analysis.position(stmt)
    if pos is None:
        return True
    end = (pos[2], pos[3])
    parents = parents_of(analysis)
    loops = []
    p = parents.get(id(stmt))
    while p is not None and p is not info.node:
        if isinstance(p, (cst.For, cst.While)):
            loops.append(p)
        p = parents.get(id(p))
    for node in _analysis.walk_nodes([info.node.body]):
        if type(node) is not cst.Name or node.value != name or node is stmt.targets[0].target:
            continue
        npos = analysis.position(node)
        if npos is None or (npos[0], npos[1]) >= end:
            return True
        for loop in loops:
            lpos = analysis.position(loop)
            if lpos and (lpos[0], lpos[1]) <= (npos[0], npos[1]) <= (lpos[2], lpos[3]):
                return True
    return False


def _bound_elsewhere(info, stmt, name: str) -> bool:
    """Whether ``name`` is bound in the kernel by another statement than ``stmt``: then the
    value written may read the rebound Array (`o_ref = x + 1; o_ref = o_ref * 2`), which the
    fix would turn into a write reading the ref itself."""
    for node in _analysis.walk_nodes([info.node.body]):
        if node is stmt:
            continue
        targets = []
        t = type(node)
        if t is cst.Assign:
            targets = [tg.target for tg in node.targets]
        elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
            targets = [node.target]
        elif t is cst.AsName:
            targets = [node.name]
        for tg in targets:
            for n in _analysis.walk_nodes([tg]):
                if type(n) is cst.Name and n.value == name:
                    return True
    return False


def _write_fix(target: cst.Name):
    def make(analysis):
        pos = analysis.position(target)
        if pos is None:
            return None
        _, _, end_line, end_col = pos
        return Fix("Write the output ref with [...]",
                   (Edit(end_line, end_col, end_line, end_col, "[...]"),), SAFE)

    return make
