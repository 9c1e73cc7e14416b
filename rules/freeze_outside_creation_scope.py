from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE, ref_name, role_word

# Traces across which freezing an outer ref fails (measured; the registry's freeze_error).
# vmap, grad and an eager custom_vjp accept it, so they are not reported.
STAGING = api.roles_where("freeze_error")
_ORDER = api.in_role_order(STAGING)


class FreezeOutsideCreationScope(Rule):
    """`jax.freeze` inside a traced function, on a ref that function did not create.

    ## What it does
    Reports `jax.freeze(x_ref)` (any spelling: `jax.ref.freeze`, `from jax import freeze as
    f`...) inside a function traced by `jax.jit`, a `lax.scan` / `fori_loop` / `while_loop` /
    `map` body, a `cond` / `switch` branch, `jax.checkpoint`, `pmap` or `shard_map`, when the
    ref was not created inside that trace: a ref parameter of the traced function, or a ref it
    closes over. Freezing a ref in the trace that created it is fine, including in a helper
    called from it or in a helper that created the ref; so is freezing in eager code.

    ## Why is this bad?
    `jax.freeze` ends a ref's life and may only be called in the scope that created the ref
    (JAX docs). JAX does not say so: freezing a `jit` argument fails with `IndexError: list
    index out of range` (or, on 0.10.2, passes silently when the result is unused), freezing a
    closed-over ref with `KeyError: <number>`, and in a `scan` body with an empty
    `AssertionError` — none of which points at the freeze.

    ## Example
    ```python
    import jax

    @jax.jit
    def finish(x_ref):
        return jax.freeze(x_ref)

    value = finish(jax.new_ref(1.0))
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def finish(x_ref):
        return x_ref[...]

    x_ref = jax.new_ref(1.0)
    value = finish(x_ref)
    frozen = jax.freeze(x_ref)
    ```

    ## Known limits
    A freeze under `vmap` or `grad` alone of an outer ref is not reported: JAX accepts it and
    computes the right value. Refs whose origin the analysis cannot follow (returned from
    functions of other modules, stored in unfollowed containers, scan slices) are not
    reported. A helper called both inside and outside a trace is judged per trace, from the
    call sites of this module only.

    ## JAX versions
    Every version tested (0.7.1–0.10.2) fails the same way, except that 0.10.2 accepts a
    `jit` argument frozen with its result unused (and later writes to it in the same `jit`).
    A `cond` / `switch` branch freezing an outer ref fails with ``ValueError: safe_zip()
    argument 1 has length 0``, a `while_loop` body with ``ValueError: foreach() argument 2 is
    shorter than argument 1`` and `pmap` with ``AttributeError: 'AbstractRef' object has no
    attribute 'nospec'`` (measured on 0.10.2).

    ## Runtime message
    `IndexError: list index out of range` (a `jit` argument), `KeyError: 140694319524944` (a
    ref closed over by `jit`), `AssertionError` with no message (`scan`, `fori_loop`,
    `lax.map` bodies), or no error at all on 0.10.2 for a frozen `jit` argument whose result
    is unused.
    """

    code = "REF004"
    name = "freeze-outside-creation-scope"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        for fr in analysis.freezes:
            if not analysis.is_traced(fr.func):
                continue
            for scope in analysis.trace_scopes(fr.func):
                if not scope.roles:
                    continue
                origins = analysis.ref_origins(fr.ref, scope)
                if not origins or any(s not in ("outside", "argument") for s, _ in origins):
                    continue
                kinds = self._crossed_kinds(analysis, fr.ref, scope)
                if not kinds & STAGING:
                    continue
                yield Finding(fr.node, self._message(analysis, fr, scope, origins, kinds))
                break

    @staticmethod
    def _crossed_kinds(analysis, ref, scope) -> set:
        """Role kinds of the traces between the freeze and the ref's creation."""
        kinds: set = set()
        seen = {id(scope)}
        work = [scope]
        while work:
            f = work.pop()
            kinds |= f.role_kinds()
            for caller, _node in f.callers:
                for s in analysis.trace_scopes(caller):
                    if id(s) in seen:
                        continue
                    seen.add(id(s))
                    if any(st == "inside" for st, _ in analysis.ref_origins(ref, s)):
                        continue
                    work.append(s)
        return kinds

    @staticmethod
    def _message(analysis, fr, scope, origins, kinds) -> str:
        name = ref_name(analysis, fr.ref_expr, fr.ref)
        own = scope.role_kinds() & STAGING
        kind = next((k for k in _ORDER if k in own), None) or \
            next((k for k in _ORDER if k in kinds), api.Role.JIT)
        where = f"{scope.name} ({role_word(kind)})"
        status, root = origins[0]
        if status == "argument":
            what = "one of its ref arguments"
        elif root.origin == "created" and root.node is not None:
            what = f"a ref created outside it, on line {analysis.line_of(root.node)}"
        else:
            what = "a ref it closes over"
        v = analysis.settings.target_jax_version
        info = api.role_info(kind)
        table = info.freeze_argument_error if status == "argument" and \
            info.freeze_argument_error else info.freeze_error
        runtime = api.by_version(table, v) or "JAX fails with an internal error"
        call = analysis.text_of(fr.node.func)
        return (f"{call}({name}) in {where} freezes {what}, but a ref can only be frozen "
                f"in the scope that created it; {runtime}. Read it with {name}[...] here and "
                f"freeze it where it was created")
