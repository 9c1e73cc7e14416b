from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import REF_EVIDENCE, role_word, where_from

# Roles whose outputs may not contain refs, in the order messages prefer them.
RETURN_ROLES = tuple(r for r in api.ROLE_ORDER if api.role_info(r).no_ref_outputs)


class RefReturned(Rule):
    """A Ref escapes a jit-compiled function, a control-flow body, or a custom_vjp primal.

    ## What it does
    Reports a `return` (or a lambda body) that gives back a Ref — directly, inside a returned
    tuple, list or dict, as a `lax.scan` carry or output, or a ref the function closes over —
    from a function traced by `jax.jit`, a `lax.scan` / `lax.map` / `lax.while_loop` /
    `lax.fori_loop` body, a `lax.cond` / `lax.switch` branch, or a `jax.custom_vjp` primal.

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
    another module, or stored in an object attribute other than `self.<name>`, is missed.
    Functions wrapped by `flax.nnx.jit` (which allows ref-holding modules) are not checked.
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
        for fact in analysis.returns:
            kinds = fact.func.role_kinds()
            if kinds and analysis.unchecked_trace(fact.func):
                # Inside a Pallas kernel a loop may carry a ref through (checks are off).
                kinds = {k for k in kinds if not api.role_info(k).carries_refs_unchecked}
            role = next((r for r in RETURN_ROLES if r in kinds), None)
            if role is None or fact.expr is None:
                continue
            refs = list(iter_refs(fact.value))
            if not refs:
                continue
            ref, path = refs[0]
            inside = f" at {path} of the result" if path else ""
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
