from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import REF_EVIDENCE, role_word, via


class RefViewPassedToTransform(Rule):
    """A ref view (`x_ref.at[1:6]`, `.reshape(...)`) is passed to a transform that rejects it.

    ## What it does
    Reports an argument of a traced call that is a view of a ref — `x_ref.at[...]`,
    `.reshape(...)`, `.bitcast(...)`, `.transpose(...)` (JAX's `TransformedRef`) — where the
    transform rejects views: `jax.vmap`, inside `jit` or not. Which transforms reject them is
    the registry's (`RoleInfo.view_operand_error`, by JAX version).

    ## Why is this bad?
    A view is not a ref of its own: it is the underlying ref plus the indexing or reshaping to
    apply, and `vmap` cannot batch it: `TypeError: ... TransformedRefs are not allowed`.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def add_rows(xs):
        x_ref = jax.new_ref(jnp.zeros((7, 3)))

        def add_row(row_ref, x):
            row_ref[...] += x

        jax.vmap(add_row)(x_ref.at[1:6], xs)
        return x_ref[...]

    add_rows(jnp.ones((5, 3)))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def add_rows(xs):
        x_ref = jax.new_ref(jnp.zeros((7, 3)))
        x_ref[1:6] += xs
        return x_ref[...]

    add_rows(jnp.ones((5, 3)))
    ```
    Index the ref where the values are written (or pass the whole ref, mapped over an axis).
    `jit`, `jax.checkpoint`, `lax.cond`, `lax.scan` and `shard_map` take views as operands.

    ## Known limits
    Only views whose making the analysis sees (`v = x_ref.at[1:6]`, then `f(v)`) are reported.
    A view closed over by the mapped function (rather than passed) is not reported.

    ## JAX versions
    Measured on 0.10.2 and 0.12.0.1: `vmap` raises `TypeError: When tracing ... for vmap,
    TransformedRefs are not allowed`. On JAX 0.10 a concrete Ref (outside `jit`) has no view
    at all (`x_ref.at` raises a bare `NotImplementedError`); inside `jit`, and on 0.12
    everywhere, `jit` / `remat` / `cond` / `scan` / `shard_map` accept views.

    ## Runtime message
    `TypeError: When tracing add_row at ... for vmap, TransformedRefs are not allowed, but got
    a TransformedRef with name row_ref.ref.`
    """

    code = "REF020"
    name = "ref-view-passed-to-transform"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        version = analysis.settings.target_jax_version
        seen = set()
        for call in analysis.traced_calls:
            error, role = _error(call, version)
            if not error:
                continue
            for value, expr in call.operands:
                if expr is None or id(expr) in seen:
                    continue
                view = next((r for r, _ in iter_refs(value) if r.view), None)
                if view is None:
                    continue
                seen.add(id(expr))
                text = analysis.text_of(expr)
                if len(text) > 40 or "\n" in text:
                    text = "the argument"
                base = f" (a view {view.name}{view.view} of {view.name})" if view.name else \
                    " (a ref view)"
                yield Finding(expr, f"{text}{base} is passed to {role_word(role)}"
                                    f"{via(call.transforms)}; "
                                    f"{error} — pass the ref itself and index it inside the "
                                    f"function")


def _roles(call) -> list:
    """The roles a traced call gives its function(s), outermost first."""
    roles = [api.API[t.kind].role for t in reversed(call.transforms)
             if t.kind in api.API and api.API[t.kind].role is not None]
    a = api.API.get(call.kind)
    if a is not None and not call.transforms:
        roles += [c.role for c in a.callees if c.role is not None]
    return roles


def _error(call, version):
    """(JAX's error for a view operand of ``call``, the role) or ("", None)."""
    for role in _roles(call):
        error = api.by_version(api.role_info(role).view_operand_error, version)
        if error:
            return error, role
    return "", None
