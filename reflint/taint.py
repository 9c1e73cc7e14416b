"""Which functions JAX differentiates, with respect to which inputs, and the writes of values
that depend on those inputs into refs JAX does not differentiate (REF008, REF009).

``differentiated_params(analysis, info)`` reads a function's roles: for a function traced by
``jax.grad`` / ``value_and_grad`` / ``jacrev`` / ``jacfwd`` / ``hessian``, the ``argnums``
inputs (default 0); for ``jax.jvp`` / ``vjp`` / ``linearize``, every primal.

The dependence itself is computed by the analysis' evaluator, as a property of values
(``ModuleAnalysis.dependence``, docs/analysis.md "Dependence on differentiated inputs"): it
evaluates each differentiated function again with the dependence of every name in its flow
state, through assignments, arithmetic, calls (a call with a dependent argument gives a
dependent result, except ``jax.lax.stop_gradient``, metadata queries, comparisons and
integer-valued functions), local helpers, control-flow bodies and nested transforms (each
evaluated in the context of its call), and reads of refs created while the function runs.
``differentiation(analysis)`` gives the writes it found into refs from outside
(:class:`DiffWrite`), computed once per module.

Everything unresolved counts as independent, so the analysis under-reports rather than
over-reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from . import api
from .analysis import MAX_DEPENDENCE_DEPTH, DependentWrite
from .values import FuncVal

MAX_DEPTH = MAX_DEPENDENCE_DEPTH
DiffWrite = DependentWrite


@dataclass(eq=False)
class Differentiation:
    writes: list  # DiffWrite
    roots: dict  # id(FunctionInfo) -> (params, transform, node)


def differentiation(analysis) -> Differentiation:
    """The module's differentiated functions and the dependent writes into outside refs."""
    return analysis.cached("differentiation", lambda: _differentiation(analysis))


def _differentiation(analysis) -> Differentiation:
    roots: dict = {}
    for info in analysis.all_functions():
        got = differentiated_params(analysis, info)
        if got is not None:
            roots[id(info)] = got
    return Differentiation(analysis.dependence(roots), roots)


def differentiated_params(analysis, info) -> Optional[tuple]:
    """(param names, transform kind, transform node) of a function differentiated by a JAX
    transform, or None if it is not differentiated or its inputs cannot be determined."""
    best = None
    names: set = set()
    for role in info.roles.values():
        if role.kind not in api.GRAD_TRANSFORMS:
            continue
        got = _role_params(analysis, info, role)
        if got is None:
            return None
        names |= got
        if best is None:
            best = role
    if best is None:
        return None
    return frozenset(names), best.kind, best.node


def differentiated_param_names(analysis, info, role) -> Optional[set]:
    """The names of ``info``'s parameters that ``role`` (a grad-like transform applied to it)
    differentiates, or None when they cannot be determined."""
    return _role_params(analysis, info, role)


def _role_params(analysis, info, role) -> Optional[set]:
    if info.is_method and not isinstance(role.node, cst.Call):
        return None
    bound = 0
    bound_kw: tuple = ()
    call = role.node if isinstance(role.node, cst.Call) else None
    fn_arg = None
    if call is not None:
        pos = [a for a in call.args if a.keyword is None]
        fn_arg = pos[0] if pos else None
        fv = analysis.value_of(fn_arg.value) if fn_arg is not None else None
        if isinstance(fv, FuncVal) and fv.info is info:
            bound = len(fv.bound_args) + (1 if fv.self_value is not None else 0)
            bound_kw = fv.bound_kwargs
        elif not _is_decorator(info, role.node):
            call = None  # a transform applied through a variable: argnums is in the Transform
    params = [p for p in info.params if p.kind in ("pos", "posonly")][bound:]
    params = [p for p in params if p.name not in bound_kw]
    primals = api.API[role.kind].primals if role.kind in api.API else ""
    if primals:
        count = None
        if call is not None and fn_arg is not None:
            rest = [a for a in call.args if a.keyword is None][1:]
            if primals == "tuple":
                if rest and isinstance(rest[0].value, (cst.Tuple, cst.List)):
                    els = rest[0].value.elements
                    if not any(isinstance(e, cst.StarredElement) for e in els):
                        count = len(els)
            elif not any(a.star for a in rest):
                count = len(rest)
        chosen = params if count is None else params[:count]
        return {p.name for p in chosen}
    transform = role.transform
    expr = None
    if transform is not None:
        expr = transform.kwargs.get("argnums")
        if expr is None and transform.args:
            expr = transform.args[0]
    nums = _int_set(expr) if expr is not None else {0}
    if nums is None:
        return None
    out = set()
    for n in nums:
        if n < 0 or n >= len(params):
            return None
        out.add(params[n].name)
    return out


def _is_decorator(info, node) -> bool:
    fn = info.node
    return isinstance(fn, cst.FunctionDef) and any(d.decorator is node for d in fn.decorators)


def _int_set(expr) -> Optional[set]:
    if isinstance(expr, cst.Integer):
        try:
            return {int(expr.value, 0)}
        except ValueError:
            return None
    if isinstance(expr, (cst.Tuple, cst.List)):
        out = set()
        for e in expr.elements:
            got = _int_set(e.value) if not isinstance(e, cst.StarredElement) else None
            if got is None:
                return None
            out |= got
        return out
    return None
