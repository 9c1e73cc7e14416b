from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import REF_EVIDENCE, nnx_what, nnx_words, role_word, where_from

# Roles whose outputs may not contain refs, in the order messages prefer them.
RETURN_ROLES = api.in_role_order(api.roles_where("no_ref_outputs"))


class RefReturned(Rule):
    """A Ref escapes a jit-compiled function, a control-flow body, or a custom_vjp primal.

    ## What it does
    Reports a `return` (or a lambda body) that gives back a Ref — directly, inside a returned
    tuple, list or dict, as a `lax.scan` carry or output, or a ref the function closes over —
    from a function traced by `jax.jit`, a `lax.scan` / `lax.map` / `lax.while_loop` /
    `lax.fori_loop` body, a `lax.cond` / `lax.switch` branch, or a `jax.custom_vjp` primal;
    and a ref constructor itself given to such a transform and called
    (`jax.jit(jax.new_ref)(x)`: the traced function's output is the new ref).

    ## Why is this bad?
    Refs are second-class: they can be passed into these functions but never come out of them.
    JAX raises `ValueError: ... returned a mutable array reference ..., but mutable array
    references cannot be returned` when the function is traced. With mutable-array checks off
    (JAX 0.7.1's default) it is worse: the caller silently receives an Array snapshot, and writes
    to it no longer reach the ref.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(x_ref):
        x_ref[...] += 1.0
        return x_ref

    step(jax.new_ref(jnp.zeros(3)))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(x_ref):
        x_ref[...] += 1.0
        return x_ref[...]

    step(jax.new_ref(jnp.zeros(3)))
    ```
    Return the ref's value (`x_ref[...]`), or nothing: the caller already holds the ref and sees
    the update. For a scan, keep the ref out of the carry and close over it (the `foreach`
    recipe).

    ## Known limits
    Only refs the analysis can see are reported: a ref returned through a helper defined in
    another module, or held by an object of a class defined in another module, is missed
    (but for Flax NNX: a class of another module whose bases reach `nnx.Module` or
    `nnx.Variable` is one when the whole tree is checked, docs/project.md).
    Objects of the module's classes (dataclasses, `NamedTuple`s, registered pytrees, plain
    classes) holding refs are reported with the path (`at .total of the result`).
    Flax NNX objects holding refs (a Module created with refs on, a Variable with `ref=True`,
    `nnx.with_vars(m, ref=True)`: docs/flax-nnx.md) count as refs; `nnx.jit` may return them
    and is not checked.
    Inside a Pallas kernel, which JAX traces with mutable-array checks off, a `fori_loop` or
    `while_loop` body may carry a ref through and is not reported.

    ## JAX versions
    0.7.2 and later raise at trace time (`lax.cond` raises on every version). 0.7.1 (with
    `jax_mutable_array_checks` off, its default) returns an Array snapshot instead, or fails with
    internal errors (`No ir_type_handler for aval type AbstractRef`, `AssertionError`).

    ## Runtime message
    `ValueError: function step at ... traced for jit returned a mutable array reference of type
    Ref{float32[3]}, but mutable array references cannot be returned.`
    """

    code = "REF001"
    name = "ref-returned"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        old = analysis.settings.target_jax_version < (0, 7, 2)
        for t in analysis.traced_constructors:
            role = api.API[t.transform].role
            if not api.role_info(role).no_ref_outputs:
                continue
            ctor = analysis.text_of(t.transform_node.args[0].value)
            msg = (f"{ctor} itself is traced as {role_word(role)}: the function returns the "
                   f"ref it creates, and refs cannot be returned from traced functions — call "
                   f"{ctor} outside the transform, or return the new ref's value from a "
                   f"function of your own")
            if old:
                msg += ". JAX 0.7.1 does not raise: the caller silently gets an Array snapshot"
            yield Finding(t.node, msg)
        for fact in analysis.returns:
            kinds = fact.func.role_kinds()
            if kinds and analysis.unchecked_trace(fact.func):
                # Inside a Pallas kernel a loop may carry a ref through (checks are off).
                kinds = {k for k in kinds if not api.role_info(k).carries_refs_unchecked}
            # The first transform applied to the function traces its body first, and its error
            # is JAX's (`@jax.custom_vjp def f` then `if jit: f = jax.jit(f)`: the primal's).
            role = next((r.kind for r in fact.func.roles.values()
                         if r.kind in kinds and r.kind in RETURN_ROLES), None)
            if role is None or fact.expr is None:
                continue
            refs = list(iter_refs(fact.value))
            if not refs:
                continue
            ref, path = refs[0]
            inside = f" at {path} of the result" if path else ""
            if ref.tree:
                yield Finding(fact.expr, _nnx_message(analysis, fact, role, ref, inside),
                              related_node=ref.node if ref.origin == "created" else None,
                              related_message="created here")
                continue
            if ref.name:
                subject = ref.name
                advice = f"return its value {ref.name}[...] instead, or nothing"
            else:
                subject = "a ref"
                advice = "return the ref's value (read it with [...]) instead, or nothing"
            msg = (f"{subject} is returned from {role_word(role)}{inside}"
                   f"{where_from(analysis, ref)}; refs cannot be returned from traced functions "
                   f"— {advice}")
            msg += api.role_info(role).return_hint
            if old:
                msg += ". JAX 0.7.1 does not raise: the caller silently gets an Array snapshot"
            yield Finding(fact.expr, msg, related_node=ref.node if ref.origin == "created"
                          else None, related_message="created here")


def _nnx_message(analysis, fact, role, ref, inside) -> str:
    """A Flax NNX object holding refs returned from a traced function."""
    words = nnx_words(analysis)
    subject = ref.name or nnx_what(ref)
    what = f" ({nnx_what(ref)} holding refs)" if ref.name else " holding refs"
    line = analysis.line_of(ref.node) if ref.origin == "created" and ref.node else None
    where = f", created on line {line}," if line and ref.name else ""
    held = "its value is a ref" if ref.tree == "variable" else "its Variables are refs"
    msg = (f"{subject}{what}{where} is returned from {role_word(role)}{inside}; {held}, and "
           f"refs cannot be returned from traced functions")
    if role == api.Role.JIT:
        obj = ref.name or "model"
        off = "without `ref=True`" if ref.kwargs.get("ref") else f"with refs off (`{words['off']}`)"
        msg += (f" — use `nnx.jit`, which returns NNX objects holding refs, or create it {off} "
                f"and convert it after the call: `{obj} = {words['to_refs'].format(obj)}`")
    else:
        msg += " — return arrays, not the object" + api.role_info(role).return_hint
    return msg
