from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import RefVal, iter_refs

from ._common import REF_EVIDENCE, role_word, where_from

# The calls that reject a ref both closed over and passed.
CALL_KINDS = api.names_where(lambda a: a.checks_closure)


class RefClosedOverAndPassed(Rule):
    """A traced function closes over a Ref that is also passed to it as an argument.

    ## What it does
    Reports a call to a jit-compiled function, a custom_vjp function, or a `lax.scan` /
    `cond` / `switch` / `while_loop` / `fori_loop` / `map` body, when the function reads a Ref
    from an enclosing scope (a closure or a module global) and the same Ref is also among the
    call's arguments or carried operands. A Ref bound to the function with `functools.partial`
    counts as closed over, as it does for JAX: `jax.jit(partial(f, x_ref))(x_ref)`.

    ## Why is this bad?
    Inside the function the ref would be reachable under two names — the closure and the
    parameter — which is aliasing, and JAX forbids it. JAX raises at trace time; with checks
    off, XLA fails at execution with `Attempt to donate the same buffer twice`. For `scan` and
    `fori_loop` carries JAX reports it misleadingly, as a returned ref.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))

    @jax.jit
    def add_from_global(y_ref):
        y_ref[...] += x_ref[...]

    add_from_global(x_ref)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))

    @jax.jit
    def add_into(y_ref, x_ref):
        y_ref[...] += x_ref[...]

    y_ref = jax.new_ref(jnp.ones(3))
    add_into(y_ref, x_ref)
    ```
    Either pass the ref or close over it, not both.

    ## Known limits
    The closed-over ref must be visible in this module (a global or a variable of an enclosing
    function). An object holding refs (an instance of a class of the module, a dataclass, a
    `NamedTuple`) closed over counts with its fields. A Flax NNX object
    holding refs counts as closed over when the function reads it (or one of its Variables)
    from an enclosing scope; `nnx.jit` rejects this too. A name the enclosing function binds
    several times is read at the calls of the function when it runs only there (a local def,
    or a lambda called where it is written: `jax.jit(lambda a: f(a, m))(m)`); otherwise
    every value it may hold.

    ## JAX versions
    0.7.2+: a targeted error for jit and cond; for scan/fori carries the error talks about a
    returned ref. 0.7.1 (checks off): XLA `Attempt to donate the same buffer twice`.

    ## Runtime message
    `ValueError: when tracing add_from_global at ... for jit, a mutable array reference of type
    Ref{float32[3]} was both closed over and passed as the argument y_ref`
    """

    code = "REF003"
    name = "ref-closed-over-and-passed"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        for call in analysis.traced_calls:
            kinds = [t.kind for t in call.transforms] or [call.kind]
            if not any(k in CALL_KINDS for k in kinds):
                continue
            passed = {}
            for value, expr in call.operands:
                for ref, _ in iter_refs(value):
                    passed.setdefault(ref.key, (ref, expr))
            if not passed:
                continue
            found = _aliased(call, passed)
            if found is not None:
                target, name, ref, bound = found
                what = role_word(kinds[-1])
                if bound:
                    msg = (f"{target.name} ({what}) gets {name} bound with functools.partial "
                           f"and is also passed it as an argument{where_from(analysis, ref)}; "
                           f"JAX treats a partial's arguments as closed over, so the ref would "
                           f"be aliased — pass it or bind it, not both")
                else:
                    msg = (f"{target.name} ({what}) closes over {name} and is also passed it "
                           f"as an argument{where_from(analysis, ref)}; the ref would be "
                           f"aliased — pass it or close over it, not both")
                yield Finding(call.node, msg)


def _aliased(call, passed):
    """(target, name, ref, bound_by_partial) for the first ref that a traced target holds
    outside its arguments — closed over, or bound with functools.partial (JAX treats a
    partial's arguments as closed over: `jit(partial(f, r))(r)`) — and that the call also
    passes; None if there is none."""
    for target in call.targets:
        held = [(name, b.value, True)
                for name, b in call.bindings.get(id(target), {}).items() if b.partial]
        held += [(name, value, False) for name, (value, _node) in target.closure_refs.items()]
        for name, value, bound in held:
            if isinstance(value, RefVal) and value.tree and not bound:
                # A closed-over NNX object: the object itself (its attributes read through
                # the closure are entries of their own, `model.bias`).
                refs = [(value, "")]
            else:
                refs = iter_refs(value)
            for ref, _ in refs:
                if ref.key in passed and ref.unique:
                    return target, name, ref, bound
    return None
