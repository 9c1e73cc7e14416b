from __future__ import annotations

from reflint import api
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE, ref_name

# Roles of loop conditions that may not share refs with the rest of the loop.
COND_ROLES = frozenset(r for r, info in api.ROLES.items()
                       if info.shared_write_error or info.eager_shared_ref_error or
                       info.stale_read_error)


class RefWrittenInWhileCondAndBody(Rule):
    """The same Ref is written by both `cond_fun` and `body_fun` of a `lax.while_loop`.

    ## What it does
    Reports a write, in a `lax.while_loop` condition (or a function it calls), to a ref that
    the loop body also writes: both close over the same ref. Under `jit` it also reports a
    read, in the condition, of a ref the body writes: JAX evaluates the condition on the
    ref's value from before the loop, so the loop never sees the body's writes. When the loop
    runs outside `jit` (eagerly), it reports a ref the condition and the body merely both use:
    JAX fails there even if neither writes it.

    ## Why is this bad?
    JAX cannot order the condition's and the body's effects on one ref and refuses the loop:
    `NotImplementedError: Cannot write to the same ref in both cond and body of while loop`.
    Eagerly, `while_loop` is traced as a `jit` whose arguments are the refs both functions
    close over, so one ref shared by both is passed twice and JAX raises its aliasing error
    (`only one reference to a mutable array may be passed as an argument`).

    ## Example
    ```python
    import jax

    @jax.jit
    def count_steps():
        steps_ref = jax.new_ref(0)

        def cond(i):
            steps_ref[...] += 1
            return i < 3

        def body(i):
            steps_ref[...] += 1
            return i + 1

        jax.lax.while_loop(cond, body, 0)
        return steps_ref[...]

    count_steps()
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def count_steps():
        steps_ref = jax.new_ref(0)

        def cond(i):
            return i < 3

        def body(i):
            steps_ref[...] += 2
            return i + 1

        jax.lax.while_loop(cond, body, 0)
        return steps_ref[...]

    count_steps()
    ```
    Keep the condition free of writes (compute what it needs from the carry), or carry the
    count in the loop state.

    ## Known limits
    Refs are compared by identity as the analysis sees them: a ref passed in the carry (REF001)
    or reached through an unknown helper is not followed.

    ## JAX versions
    Measured on 0.10.2 and 0.12.0.1: under `jit`, writes in both fail
    (`NotImplementedError`); a condition reading a ref the body writes silently sees its
    pre-loop value (`x_ref[...] < 3` with the body adding 1 never ends; `(i < 10) & (x_ref[...]
    < 3)` runs 10 iterations); outside `jit`, any ref closed over by both fails (`ValueError`).
    A ref written by the condition and only read by the body is not reported.

    ## Runtime message
    `NotImplementedError: Cannot write to the same ref in both cond and body of while loop.`
    """

    code = "REF021"
    name = "ref-written-in-while-cond-and-body"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        if not analysis.accesses:
            return
        version = analysis.settings.target_jax_version
        for call in analysis.traced_calls:
            conds = [(t, r) for t in call.targets for r in COND_ROLES
                     if (r, id(call.node)) in t.roles]
            if not conds:
                continue
            eager = not analysis.is_traced(call.func)
            for cond, role in conds:
                info = api.role_info(role)
                write_error = api.by_version(info.shared_write_error, version)
                use_error = api.by_version(info.eager_shared_ref_error, version) if eager else ""
                read_error = "" if eager else api.by_version(info.stale_read_error, version)
                cond_extent = analysis.trace_extent(cond)
                others = set()
                for t in call.targets:
                    if t is not cond:
                        others |= analysis.trace_extent(t)
                others -= {id(cond)}
                body_uses = {}  # ref key -> is written
                for acc in analysis.accesses:
                    if id(acc.func) in others and acc.ref.unique:
                        body_uses[acc.ref.key] = body_uses.get(acc.ref.key, False) or \
                            acc.is_write
                reported = set()
                for acc in analysis.accesses:
                    if id(acc.func) not in cond_extent or acc.ref.key not in body_uses or \
                            acc.ref.key in reported or not acc.ref.unique:
                        continue
                    if acc.is_write and body_uses[acc.ref.key] and write_error:
                        error = write_error
                    elif use_error:
                        error = use_error
                    elif not acc.is_write and body_uses[acc.ref.key] and read_error:
                        error = read_error
                    else:
                        continue
                    reported.add(acc.ref.key)
                    name = ref_name(analysis, acc.ref_expr, acc.ref)
                    how = "writes" if acc.is_write else "reads"
                    body_how = "writes" if body_uses[acc.ref.key] else "reads"
                    yield Finding(acc.node, f"{cond.name} (a lax.while_loop condition) {how} "
                                            f"{name}, which the loop body also {body_how}; "
                                            f"{error} — keep the condition free of that ref "
                                            f"(compute it from the carry)",
                                  related_node=call.node, related_message="the loop")
