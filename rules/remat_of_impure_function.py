from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE, ref_name

cst = lazy("reflint.nodes")

NO_REMAT_KIND = api.NO_REMAT_KINDS[0]


class RematOfImpureFunction(Rule):
    """`jax.checkpoint` / `jax.remat` applied to a function that writes a Ref it did not create.

    ## What it does
    Reports `jax.checkpoint` and `jax.remat` (as a decorator, in call form, or through
    `functools.partial(jax.checkpoint, policy=...)`) applied to a function that writes
    (`x_ref[...] = v`, `x_ref[...] += v`, `jax.ref.set` / `swap` / `addupdate`) a ref it takes as
    an argument or closes over — directly or in a helper it calls. The finding is on the
    decorator or the `checkpoint` call. A checkpointed function that only writes refs it
    creates itself is pure and not reported, nor is a write to a ref created with
    `jax.new_ref(..., kind='no_grad_no_remat')` (JAX 0.10+).

    ## Why is this bad?
    Rematerialization re-runs the function in the backward pass instead of storing its
    intermediates, which is only correct for pure functions. Under `jax.grad`, JAX 0.9 and
    later re-run the write as well, silently: `x_ref[...] += 1` adds 2, and nothing says so.
    JAX 0.7–0.8 refuse the program with `NotImplementedError: Effects not supported in
    partial-eval of checkpoint/remat`.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    calls_ref = jax.new_ref(0)

    @jax.checkpoint
    def layer(x):
        calls_ref[...] += 1
        return jnp.sin(x)

    g = jax.grad(layer)(1.0)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    calls_ref = jax.new_ref(0)

    @jax.checkpoint
    def layer(x):
        return jnp.sin(x)

    def step(x):
        calls_ref[...] += 1
        return layer(x)

    g = jax.grad(step)(1.0)
    ```

    ## Known limits
    The rule does not check that the function is differentiated: without `grad` the write
    runs once and nothing goes wrong, but a checkpointed function exists to be differentiated.
    A checkpointed function that only *reads* a ref argument is not reported, although JAX
    ≤0.8 rejects it under `grad` (`NotImplementedError ... [ReadEffect(0)]`); 0.9+ accept it.
    A checkpoint picked at run time from a table of transforms
    (`{"jit": jax.jit, "remat": jax.remat}[name]`, the way JAX's own tests run one function
    under each transform) is not reported.
    `kind='no_grad_no_remat'` is recognised only where the ref's creation is visible in the
    module. `flax.linen.remat` and other wrappers are not recognised.

    ## JAX versions
    0.7.1–0.8.0: `NotImplementedError` under `grad` (and `jit(grad)`). 0.9.0–0.10.2: no error;
    the write is replayed in the backward pass (a `+= 1` ends at 2). Only 0.10.2's
    `new_ref(..., kind='no_grad_no_remat')` avoids the replay. Without `grad` every version
    runs the write once. On 0.7.1 even a pure function with an internal ref fails under
    `grad`.

    ## Runtime message
    No error at run time on 0.9.0–0.10.2 (the write silently happens twice). On 0.7.1–0.8.0:
    `NotImplementedError: Effects not supported in partial-eval of checkpoint/remat:
    [ReadEffect(0), WriteEffect(0)]`.
    """

    code = "REF006"
    name = "remat-of-impure-function"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        writes = [a for a in analysis.accesses if a.is_write]
        if not writes:
            return
        for info in analysis.traced_functions():
            # Not a checkpoint picked from a table of transforms at run time
            # (`{"jit": jax.jit, "remat": jax.remat}[name]`): that is a test running one
            # function under each transform, not a layer checkpointed to be differentiated.
            roles = [r for r in info.roles.values() if api.role_info(r.kind).remat
                     and not (r.transform is not None and r.transform.via)]
            if not roles:
                continue
            extent = analysis.trace_extent(info)
            impure = None
            for acc in writes:
                if id(acc.func) not in extent:
                    continue
                origins = analysis.ref_origins(acc.ref, info)
                if not origins or any(s not in ("outside", "argument") for s, _ in origins):
                    continue
                if self._no_remat_kind(analysis, [root for _, root in origins]):
                    continue
                impure = (acc, origins[0])
                break
            if impure is None:
                continue
            seen = set()
            for role in roles:
                if id(role.node) in seen:
                    continue
                seen.add(id(role.node))
                acc, origin = impure
                yield Finding(role.node, self._message(analysis, _spelling(analysis, role.node),
                                                       info, acc, origin),
                              related_node=acc.node, related_message="the write")

    @staticmethod
    def _no_remat_kind(analysis, roots) -> bool:
        created = []
        for root in roots:
            found = analysis.creations_of(root)
            if found is None:
                return False
            created.extend(found)
        for ref in created:
            kind = ref.kwargs.get("kind")
            if not (isinstance(kind, cst.SimpleString) and
                    kind.evaluated_value in api.NO_REMAT_KINDS):
                return False
        return bool(created)

    @staticmethod
    def _message(analysis, spelling, info, acc, origin) -> str:
        name = ref_name(analysis, acc.ref_expr, acc.ref)
        status, root = origin
        if status == "argument":
            src = "a ref argument"
        elif root.origin == "created" and root.node is not None:
            src = f"a ref created outside it, on line {analysis.line_of(root.node)}"
        else:
            src = "a ref it closes over"
        line = analysis.line_of(acc.node)
        v = analysis.settings.target_jax_version
        if v >= (0, 9):
            runtime = ("under jax.grad the backward pass re-runs it and silently repeats the "
                       "write (no error)")
        else:
            runtime = ("under jax.grad JAX fails with `NotImplementedError: Effects not "
                       "supported in partial-eval of checkpoint/remat`")
        fix = "move the write out of the checkpointed function"
        if v >= (0, 10):
            fix += f", or create the ref with kind='{NO_REMAT_KIND}'"
        return (f"{spelling} is applied to {info.name}, which writes {name} ({src}) on line "
                f"{line}; rematerialization re-runs the function, so {runtime}. To fix, {fix}")


def _spelling(analysis, node) -> str:
    """How the checkpoint transform is written at ``node`` (for messages)."""
    expr = node
    if isinstance(expr, cst.Call):
        func = analysis.value_of(expr.func)
        if getattr(func, "qualname", None) == "functools.partial" and expr.args:
            expr = expr.args[0].value
        else:
            expr = expr.func
    text = analysis.text_of(expr)
    return text if len(text) <= 30 and "\n" not in text else "jax.checkpoint"
