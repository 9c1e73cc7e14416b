from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.diagnostics import UNSAFE, Edit, Fix
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE, created_with_kind, module_spelling, ref_name

cst = lazy("reflint.nodes")


class DifferentiatedValueWrittenToRef(Rule):
    """A value that depends on differentiated inputs is written into a ref JAX does not differentiate.

    ## What it does
    Inside a function differentiated by `jax.grad`, `value_and_grad`, `jacrev`, `jacfwd`,
    `hessian`, `jvp`, `vjp` or `linearize` — or a helper, loop body or branch it calls — reports
    a write (`ref[...] = v`, `ref[...] += v`, `jax.ref.set/swap/addupdate`) of a value that
    depends on the differentiated inputs into a Ref that is closed over or passed as a
    non-differentiated argument. Values computed only from other inputs, constants, shapes,
    comparisons, or wrapped in `jax.lax.stop_gradient` are fine, and so are refs created inside
    the differentiated function.

    ## Why is this bad?
    JAX can only differentiate through refs it created itself. A ref from outside carries no
    tangent, so storing a differentiated value in it is rejected when the function is traced.
    The error's advice ("Move the array reference to be an argument of the differentiated
    function?") does not help when the ref already is an argument: JAX cannot differentiate
    with respect to a ref. If the ref only records the value (a log, a statistic), store
    `jax.lax.stop_gradient(value)`.

    ## Example
    ```python
    import jax

    def loss(x, log_ref):
        y = x * x
        log_ref[...] = y
        return y

    jax.grad(loss)(1.0, jax.new_ref(0.0))
    ```

    ## Use instead
    ```python
    import jax

    def loss(x, log_ref):
        y = x * x
        log_ref[...] = jax.lax.stop_gradient(y)
        return y

    jax.grad(loss)(1.0, jax.new_ref(0.0))
    ```

    ## Fix safety
    The fix wraps the written value in `jax.lax.stop_gradient(...)` (spelled through the
    module's own `jax` or `jax.lax` import; no fix without one). It is unsafe: it is right when
    the ref records a value, but if you meant gradients to flow through the ref, restructure the
    code instead (create the ref inside the differentiated function).

    ## Known limits
    The dependence analysis follows assignments, arithmetic and calls inside one module. It
    does not see writes through method-style ref APIs, refs held by objects of classes of
    other modules, `argnums` that are not literal integers, or functions passed to
    higher-order functions the analysis does not know. Flax NNX: a module's method writing
    its own Variables (`self.mean[...] = x.mean(0)`) is followed through the call. Flax's
    `BatchNorm(use_running_average=False)` is not reported: flax 0.12.12 wraps its statistics
    of ref Variables in `stop_gradient` (flax 0.12.8 did not and fails under `jax.grad`);
    Dropout's RNG counters fail with Flax's `TraceContextError`, not modelled. A value
    computed by a function of integer dtype that reflint does not recognize is treated as
    differentiated.

    ## JAX versions
    Every version from 0.7.1 to 0.10.2 raises the same error, with or without `jit`, for
    closed-over refs and ref arguments alike. `jax.ref.addupdate` of a differentiated value
    fails with a `TypeError` about `ad_util.Zero` instead (0.10.2).

    ## Runtime message
    `Exception: performing a set/swap operation with a differentiated value on a
    non-differentiated array reference of type Ref{float32[]}. Move the array reference to be
    an argument of the differentiated function?`
    """

    code = "REF008"
    name = "differentiated-value-written-to-ref"
    fixable = UNSAFE
    triggers = REF_EVIDENCE

    def check(self, analysis):
        for w in analysis.differentiation().writes:
            acc = w.access
            if created_with_kind(analysis, acc.ref, api.NO_GRAD_KINDS):
                continue  # `new_ref(..., kind="no_grad_no_remat")` takes differentiated values
            target = ref_name(analysis, acc.ref_expr, acc.ref)
            value = analysis.text_of(acc.value_expr)
            if len(value) > 40 or "\n" in value:
                value = "the written value"
            else:
                value = f"`{value}`"
            inputs = ", ".join(f"`{n}`" for n in sorted(w.inputs))
            transform = api.role_info(w.transform).spelled or str(w.transform)
            if value == inputs and acc.func is w.root:
                head = f"{value}, differentiated by {transform} (in {w.root.name}), is written"
            else:
                head = (f"{value} depends on {inputs}, differentiated by {transform} "
                        f"(in {w.root.name}), and is written")
                if acc.func is not w.root:
                    head = (f"{value} depends on {inputs}, differentiated by {transform} "
                            f"(in {w.root.name}, which calls {acc.func.name}), and is written")
            kind = (f"a non-differentiated argument of {w.root.name}" if w.ref_kind == "argument"
                    else "a ref from outside the differentiated function")
            msg = (f"{head} into {target}, {kind}; JAX raises 'performing a set/swap operation "
                   f"with a differentiated value on a non-differentiated array reference' when "
                   f"tracing — store jax.lax.stop_gradient(...) of the value if the ref only "
                   f"records it")
            yield Finding(acc.node, msg, related_node=w.transform_node,
                          related_message=f"differentiated by {transform} here",
                          fix=_stop_gradient_fix(acc.value_expr, acc.func))


def _stop_gradient_fix(expr, func):
    def make(analysis):
        spelled = module_spelling(analysis, "jax.lax.stop_gradient", func)
        if spelled is None:
            return None
        pos = analysis.position(expr)
        if pos is None:
            return None
        line, col, end_line, end_col = pos
        bare_tuple = isinstance(expr, cst.Tuple) and not expr.lpar
        open_text = f"{spelled}((" if bare_tuple else f"{spelled}("
        close_text = "))" if bare_tuple else ")"
        return Fix(f"Wrap the value in {spelled}(...)",
                   (Edit(line, col, line, col, open_text),
                    Edit(end_line, end_col, end_line, end_col, close_text)), UNSAFE)

    return make
