from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.diagnostics import UNSAFE
from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import (REF_EVIDENCE, nnx_words, read_fix_factory, ref_name,
                      where_from)

cst = lazy("reflint.nodes")



class GradWithRespectToRef(Rule):
    """`jax.grad` (or value_and_grad, jacrev, jacfwd, hessian) differentiates a Ref argument.

    ## What it does
    Reports a call of a function transformed by `jax.grad`, `jax.value_and_grad`,
    `jax.jacrev`/`jax.jacobian`, `jax.jacfwd` or `jax.hessian` (decorated, wrapped, or inside
    `jit`) when one of its differentiated arguments (`argnums`, 0 by default) receives a Ref, a
    pytree holding a Ref, or a module holding ref Variables, at a call site the analysis sees.
    Refs passed at positions that are not differentiated are plumbing refs and are fine.
    `jax.jvp` and `jax.linearize` with a Ref primal are reported too, and, when the target JAX is older than 0.11,
    a `jax.vjp` with respect to a Ref whose VJP function is applied through `with_refs` (except
    for entries `jax.ad.DontWant()`): those versions cannot differentiate with respect to a Ref
    at all.

    ## Why is this bad?
    The gradient for a Ref-typed input must itself live in a Ref, so `grad` cannot return it.
    JAX 0.11 and later reject the call with a clear `TypeError`; JAX 0.10 and earlier fail
    deep inside the backward pass with "Expected cotangent type Ref{float32[]} but got
    float32[]", which does not say what is wrong. Differentiate the ref's value (read it with
    `[...]`), or, from JAX 0.11 on, use `jax.vjp` and bind a gradient ref with
    `vjp_fn.with_refs(grad_ref)`.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp


    def loss(w):
        return jnp.sum(w[...] ** 2)


    w_ref = jax.new_ref(jnp.ones(3))
    g = jax.grad(loss)(w_ref)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp


    def loss(w):
        return jnp.sum(w ** 2)


    w_ref = jax.new_ref(jnp.ones(3))
    g = jax.grad(loss)(w_ref[...])
    ```

    ## Fix safety
    The fix reads the ref at the call (`w_ref` -> `w_ref[...]`): the function then receives an
    Array, so code in it that writes through the argument or reads it with `[...]` must be
    changed too. It is unsafe and applied only with `--unsafe-fixes`.

    ## Known limits
    Only calls the analysis sees are checked: a function differentiated here and called from
    another module, or `argnums` that is not a literal int or tuple of ints, is not reported.
    `jax.vjp` is not reported here (see REF017).

    ## JAX versions
    JAX 0.11.0 and later: `TypeError` at the call (`jacrev` and `hessian` say "jacrev cannot
    differentiate"). 0.7.2-0.10.2: `ValueError: Expected cotangent type Ref{...} but got ...`
    from the backward pass (`jacfwd` and `hessian`: ``ValueError: `get` must be called on
    `Ref` types``). `jacfwd` and `jvp` fail with the `get` error on every version, 0.12.0.1
    included. Measured on 0.10.2, 0.11.2 and 0.12.0.1. `jax.linearize` with respect to a Ref
    computes the primal output, and the linearized function fails when called ("linearized
    function called on tangent values inconsistent with the original primal values"; 0.10.2
    and 0.12.0.1).

    ## Runtime message
    JAX 0.12: `TypeError: grad cannot differentiate with respect to a Ref-typed argument,
    because the gradient for a ref must itself be accumulated into a ref ... use jax.vjp and
    bind a gradient ref using ... with_refs`. JAX 0.10.2: `ValueError: Expected cotangent type
    Ref{float32[]} but got float32[]`.
    """

    code = "REF016"
    name = "grad-with-respect-to-ref"
    fixable = UNSAFE
    # A grad-like transform, or jax.vjp (its VJP through with_refs, before JAX 0.11).
    triggers = (REF_EVIDENCE, api.trigger_words(
        api.names_where(lambda a: bool(a.ref_argument_error) or a.result is api.Result.VJP)))

    def check(self, analysis):
        version = analysis.settings.target_jax_version
        seen = set()
        for call in analysis.traced_calls:
            for t in call.transforms:
                if not api.API[t.kind].ref_argument_error:
                    continue
                for target in call.targets:
                    role = next((r for r in target.roles.values() if r.transform is t), None)
                    names = (analysis.differentiated_param_names(target, role)
                             if role else None)
                    if not names:
                        continue
                    bindings = call.bindings.get(id(target), {})
                    for p in target.params:
                        b = bindings.get(p.name)
                        if p.name not in names or b is None or b.partial:
                            continue
                        refs = list(iter_refs(b.value))
                        if not refs or id(call.node) in seen:
                            continue
                        seen.add(id(call.node))
                        yield self._finding(analysis, call, t, target, p.name, b, refs[0],
                                            version)
        if version < (0, 11):
            # Before 0.11 no VJP with respect to a Ref works, gradient ref bound or not (a
            # direct call is REF017's).
            entries = {id(w.node): w.entries for w in analysis.with_refs_calls}
            for app in analysis.vjp_applications:
                if app.with_refs is None:
                    continue
                given = entries.get(id(app.with_refs)) or []
                for i, (value, expr) in enumerate(app.vjp.primals):
                    refs = list(iter_refs(value))
                    if refs and not (i < len(given) and _is_entry(analysis, given[i][0],
                                                                  "DontWant")):
                        ref = refs[0][0]
                        name = ref_name(analysis, expr, ref)
                        yield Finding(app.node, (
                            f"jax.vjp differentiates {app.vjp.target.name} with respect to "
                            f"{name}, a Ref{where_from(analysis, ref)}; JAX before 0.11 cannot "
                            f"differentiate with respect to a Ref, even with a gradient ref "
                            f"bound by `with_refs` (`ValueError: Expected cotangent type "
                            f"Ref{{...}} but got ...`) — pass its value ({name}[...]) to "
                            f"jax.vjp, or target JAX 0.11 or later"),
                            related_node=app.vjp.node, related_message="jax.vjp called here")
                        break


    @staticmethod
    def _finding(analysis, call, t, target, param, binding, found, version):
        ref, path = found
        spelled = api.role_info(t.kind).spelled or str(t.kind)
        arg = ref_name(analysis, binding.expr, ref) if binding.expr is not None else param
        what = f"{arg}{path}" if path else arg
        kind = "" if ref.tree else ", a Ref"  # where_from says what an NNX object is
        head = (f"{spelled} differentiates {target.name} with respect to `{param}`, which "
                f"receives {what}{kind}{where_from(analysis, ref)}")
        runtime = api.by_version(api.API[t.kind].ref_argument_error, version)
        if version >= (0, 11):
            instead = (f"differentiate its value ({arg}[...]) instead, or use jax.vjp and bind "
                       f"a gradient ref with `vjp_fn.with_refs(grad_ref)`")
        else:
            instead = f"differentiate its value ({arg}[...]) instead"
        if ref.tree:
            convert = nnx_words(analysis)["to_arrays"].format(arg)
            instead = (f"differentiate arrays, not refs: convert it first "
                       f"(`{spelled}(...)({convert})`, as the Flax guide's training loop does "
                       f"with the params of `nnx.split`)")
        fix = None
        if binding.expr is not None and not path and not ref.tree:
            fix = read_fix_factory(binding.expr, UNSAFE)
        return Finding(call.node, f"{head}; {runtime} — {instead}", fix=fix,
                       related_node=ref.node if ref.origin == "created" else None,
                       related_message="created here")


def _is_entry(analysis, arg, name: str) -> bool:
    """``arg`` of a with_refs call is ``jax.ad.<name>()``."""
    value = arg.value
    if not isinstance(value, cst.Call):
        return False
    entry = api.lookup(getattr(analysis.value_of(value.func), "qualname", None))
    return entry is not None and entry.name == name
