from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import REF_EVIDENCE, where_from


class CustomVjpFwdForeignRef(Rule):
    """A custom_vjp fwd rule returns a Ref that is not one of its own arguments.

    ## What it does
    Reports the `return` of a `jax.custom_vjp` forward rule (the `fwd` of `f.defvjp(fwd, bwd)`)
    whose output or residuals contain a Ref that the rule did not receive as an argument: a ref
    created inside `fwd`, closed over from an enclosing function, or a module-level ref.
    Returning a ref argument as a residual is allowed (the documented `stash_grads` pattern).

    ## Why is this bad?
    Residuals flow from the forward to the backward pass through JAX's tracing machinery, which
    can carry refs only when they are inputs of the custom_vjp function. JAX rejects any other
    ref when `fwd` is traced; with mutable-array checks off (JAX 0.7.1's default) the ref is
    accepted silently, and the backward pass may see a stale copy.

    ## Example
    ```python
    import jax

    @jax.custom_vjp
    def f(x):
        return x * 2.0

    def f_fwd(x):
        return x * 2.0, jax.new_ref(x)

    def f_bwd(res, g):
        return (2.0 * g,)

    f.defvjp(f_fwd, f_bwd)
    jax.grad(f)(1.0)
    ```

    ## Use instead
    ```python
    import jax

    @jax.custom_vjp
    def f(x):
        return x * 2.0

    def f_fwd(x):
        return x * 2.0, x

    def f_bwd(res, g):
        return (2.0 * g,)

    f.defvjp(f_fwd, f_bwd)
    jax.grad(f)(1.0)
    ```
    Return the ref's value (`r[...]`) as the residual, or make the ref an argument of the
    custom_vjp function and return that argument.

    ## Known limits
    Only `defvjp` on a function decorated with (or wrapped by) `jax.custom_vjp` in the same
    module is recognized; `flax.linen.custom_vjp` and `nnx.custom_vjp` are not checked. A ref
    reaching `fwd` through a container argument counts as an argument.

    ## JAX versions
    0.7.2 and later raise when `fwd` is traced (0.7.2 and 0.8.0 print a `functools.partial`
    wrapper instead of the function's name). 0.7.1, and any version with
    `jax_mutable_array_checks` off, accept it silently.

    ## Runtime message
    `ValueError: custom_vjp fwd function <function f_fwd> returned a mutable array reference of
    type Ref{float32[]} at output tree path [1] that was not an argument.`
    """

    code = "REF011"
    name = "custom-vjp-fwd-foreign-ref"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        old = analysis.settings.target_jax_version < (0, 7, 2)
        for fact in analysis.returns:
            fwd = fact.func
            if api.Role.CUSTOM_VJP_FWD not in fwd.role_kinds() or fact.expr is None:
                continue
            for ref, path in iter_refs(fact.value):
                where = _foreign(ref, fwd)
                if where is None:
                    continue
                inside = f" at output path {path}" if path else ""
                if ref.name:
                    what = f"{ref.name}{inside}, a ref {where}"
                    value = f"{ref.name}[...]"
                else:
                    what = f"a ref {where}{inside}"
                    value = "its value"
                msg = (f"custom_vjp fwd rule {fwd.name} returns {what}"
                       f"{where_from(analysis, ref)}; a fwd rule may return only refs it "
                       f"received as arguments — return {value} as the residual, or pass the "
                       f"ref in as an argument")
                if old:
                    msg += (". JAX 0.7.1 does not raise (mutable-array checks are off by "
                            "default) and the backward pass may see a stale value")
                else:
                    msg += (". JAX raises 'custom_vjp fwd function ... returned a mutable "
                            "array reference ... that was not an argument'")
                yield Finding(fact.expr, msg, related_node=ref.node if ref.origin == "created"
                              else None, related_message="created here")
                break


def _foreign(ref, fwd):
    """Why ``ref`` is not an argument of ``fwd`` (a phrase), or None when it is or is unknown."""
    if ref.origin == "created":
        if ref.scope is fwd:
            return "created inside it"
        if ref.scope is not None and fwd.encloses(ref.scope):
            return "created by a function nested in it"
        if ref.scope is not None and ref.scope.is_module:
            return "created at module level"
        if ref.scope is not None and ref.scope.encloses(fwd):
            return "it closes over"
        return None
    if ref.origin == "param" and ref.scope is not None and ref.scope is not fwd and \
            ref.scope.encloses(fwd):
        return "it closes over"
    return None
