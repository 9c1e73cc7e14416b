from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import iter_refs

from ._common import REF_EVIDENCE, ref_name, where_from

cst = lazy("reflint.nodes")


class VjpOfRefWithoutWithRefs(Rule):
    """The VJP function of `jax.vjp(f, ..., x_ref, ...)` is called without `with_refs`.

    ## What it does
    Reports a call of the VJP function returned by `jax.vjp` when a primal argument of that
    `jax.vjp` call is a Ref (or a pytree holding one) and the VJP function is called directly,
    not through `vjp_fn.with_refs(...)`, which binds the gradient ref the ref's gradient is
    accumulated into. Also reports a `with_refs(...)` call whose number of entries differs from
    the number of primal arguments of its `jax.vjp`, and (JAX 0.11 and later) one that asks for a
    Ref's gradient as a value with `jax.ad.GradValue()`.

    ## Why is this bad?
    The gradient with respect to a Ref-typed input must itself live in a Ref, so the VJP
    function cannot return it as a value. JAX 0.11 and later raise at the call ("its gradient
    must be accumulated into a ref ... `with_refs`"). JAX 0.10 and earlier cannot differentiate
    with respect to a Ref at all and fail with the obscure "Expected cotangent type
    Ref{float32[]} but got float32[]". Bind one entry per primal argument with `with_refs`: a
    gradient ref for each ref argument, `jax.ad.GradValue()` (or `jax.ad.DontWant()`) for the
    others.

    ## Example
    ```python
    import jax


    def f(x_ref):
        return x_ref[...] ** 2


    y, f_vjp = jax.vjp(f, jax.new_ref(2.0))
    f_vjp(1.0)
    ```

    ## Use instead
    ```python
    import jax


    def f(x_ref):
        return x_ref[...] ** 2


    y, f_vjp = jax.vjp(f, jax.new_ref(2.0))
    x_grad_ref = jax.new_ref(0.0)
    f_vjp.with_refs(x_grad_ref)(1.0)
    ```

    ## Known limits
    Only VJP functions the analysis follows from their `jax.vjp` call are checked (through
    variables, tuple unpacking and constant indexing, in the same module); a VJP function
    passed to another module's function, or a `jax.vjp` call with `*args`, is not.

    ## JAX versions
    `with_refs` exists from JAX 0.11.0; 0.12.0.1 raises the `ValueError` below at the direct
    call. On 0.10.2 and earlier every VJP with respect to a Ref fails, with or without a bound
    gradient ref (`with_refs` does not exist there): read the ref's value and differentiate the
    value instead.

    A `with_refs` call with the wrong number of entries fails on every version: 0.10.2 raises an
    `Exception` with no message, 0.11.2 and 0.12.0.1 "unexpected tree structure". Measured on
    0.10.2, 0.11.2 and 0.12.0.1 (the forward pass, `jax.vjp(f, x_ref)` itself, works on all).

    ## Runtime message
    JAX 0.12: `ValueError: the argument at position args[0] of the differentiated function f
    ... is Ref-typed, so its gradient must be accumulated into a ref ... with_refs`. JAX 0.10.2:
    `ValueError: Expected cotangent type Ref{float32[]} but got float32[]`.
    """

    code = "REF017"
    name = "vjp-of-ref-without-with-refs"
    triggers = (REF_EVIDENCE, r"\bvjp\b")

    def check(self, analysis):
        version = analysis.settings.target_jax_version
        for w in analysis.with_refs_calls:
            got = self._bad_entries(analysis, w, version)
            if got is not None:
                yield Finding(w.node, got, related_node=w.vjp.node,
                              related_message="jax.vjp called here")
        for app in analysis.vjp_applications:
            if app.with_refs is not None:
                continue
            for i, (value, expr) in enumerate(app.vjp.primals):
                refs = list(iter_refs(value))
                if not refs:
                    continue
                ref, path = refs[0]
                name = ref_name(analysis, expr, ref) if expr is not None else f"argument {i}"
                line = analysis.line_of(app.vjp.node)
                at = f" on line {line}" if line else ""
                head = (f"the VJP function of jax.vjp{at} is called directly, but primal "
                        f"argument {i} ({name}{path}) is a Ref{where_from(analysis, ref)}")
                if version >= (0, 11):
                    msg = (f"{head}; its gradient must be accumulated into a ref, and JAX "
                           f"raises `ValueError: ... is Ref-typed, so its gradient must be "
                           f"accumulated into a ref` — bind one with "
                           f"`vjp_fn.with_refs(grad_ref, ...)` (one entry per primal argument; "
                           f"jax.ad.GradValue() for the others)")
                else:
                    msg = (f"{head}; JAX before 0.11 cannot differentiate with respect to a "
                           f"Ref and fails with `ValueError: Expected cotangent type Ref{{...}} "
                           f"but got ...` — pass its value ({name}[...]) to jax.vjp instead")
                yield Finding(app.node, msg, related_node=app.vjp.node,
                              related_message="jax.vjp called here")
                break

    @staticmethod
    def _bad_entries(analysis, w, version):
        """Why the entries of a with_refs call are rejected, or None."""
        primals = w.vjp.primals
        if w.entries is None:
            return None
        if len(w.entries) != len(primals):
            runtime = ("JAX raises `ValueError: unexpected tree structure in the arguments to a "
                       "VJP function's `with_refs` method`" if version >= (0, 11) else
                       "JAX raises an `Exception` with no message")
            return (f"with_refs is given {len(w.entries)} entr"
                    f"{'y' if len(w.entries) == 1 else 'ies'} but jax.vjp has {len(primals)} "
                    f"primal argument{'s' if len(primals) != 1 else ''}; {runtime} — pass one "
                    f"entry per primal argument: a gradient ref, jax.ad.GradValue() or "
                    f"jax.ad.DontWant()")
        if version < (0, 11):
            return None  # every VJP with respect to a Ref fails there (REF016)
        for i, ((arg, _), (value, expr)) in enumerate(zip(w.entries, primals)):
            refs = list(iter_refs(value))
            if not refs or not isinstance(arg.value, cst.Call):
                continue
            entry = api.lookup(getattr(analysis.value_of(arg.value.func), "qualname", None))
            if entry is None or entry.name != "GradValue":
                continue
            name = ref_name(analysis, expr, refs[0][0]) if expr is not None else f"argument {i}"
            return (f"with_refs asks for the gradient of {name}, a Ref, as a value "
                    f"(jax.ad.GradValue()), but a Ref's gradient must be accumulated into a "
                    f"ref; JAX raises `ValueError: ... which is Ref-typed, can't be returned "
                    f"as a value` — pass a gradient ref (or jax.ad.DontWant()) for it")
        return None
