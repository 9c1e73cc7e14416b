from __future__ import annotations

import functools

from reflint import api
from reflint._lazy import lazy
from reflint.rule import Finding, Rule
from reflint.values import ArrayVal, CaseVal, DictVal, RefSeqVal, RefVal, SeqVal

from ._common import REF_EVIDENCE

cst = lazy("reflint.nodes")


@functools.cache
def _not_none():
    """Expression types that never evaluate to None (built on first use: libcst is lazy)."""
    return (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
            cst.FormattedString, cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp,
            cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.BinaryOperation,
            cst.UnaryOperation, cst.Comparison, cst.Lambda)


class KernelReturnsValue(Rule):
    """A Pallas kernel returns a value instead of writing it into an output ref.

    ## What it does
    Reports a `return <value>` in a function given to `pl.pallas_call` (by call, decorator or
    `functools.partial`), `pl.kernel` / `plgpu.kernel`, or `pl.core_map`, when the returned
    value is certainly not `None`: a ref read, an Array, a ref, a literal, a tuple, arithmetic
    (also a lambda's body: `pl.pallas_call(lambda *refs: 0, ...)`), or a test parameter one of
    whose test cases is such a value (`@parameterized.named_parameters(("array", 0), ...)`,
    `@pytest.mark.parametrize("returns", [None, 0])`: the case that JAX rejects is named).
    `run_scoped` bodies are not reported: their return value is `run_scoped`'s result.

    ## Why is this bad?
    A kernel has no return value: its outputs are the output refs it receives, and it must
    write them (`o_ref[...] = value`). Returning the result instead of storing it is a common
    first mistake; JAX rejects the kernel when it traces it, with a message that does not say
    where the value should go.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def add_one(x_ref, o_ref):
        return x_ref[...] + 1.0

    out = pl.pallas_call(add_one, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                         interpret=True)(jnp.zeros(8))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def add_one(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    out = pl.pallas_call(add_one, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                         interpret=True)(jnp.zeros(8))
    ```

    ## Known limits
    Only kernels the analysis sees given to a Pallas entry point are checked. A `return` of
    a call whose result is unknown (`return helper(x_ref, o_ref)`, which may well return
    `None`) is not reported. Test cases are read from the decorator's displays only (not from
    a list named elsewhere, `*cases` or pytest's `indirect` values). `emit_pipeline` and
    `run_state` bodies are not checked (JAX's behaviour for their return values was not
    measured).

    ## JAX versions
    Every version with Pallas rejects it at trace time (measured on 0.10.2 under
    `interpret=True` on CPU); `pl.kernel` and `core_map` bodies get the same check
    ("The kernel function in core_map ... should return None"). Every value but `None` is
    rejected, empty containers included: `0`, `False`, `()`, `[]`, `{}` and `(None,)` (measured
    on 0.10.2).

    ## Runtime message
    `ValueError: The kernel function in the pallas_call add_one at example.py:5 should return
    None. It returns a PyTree: PyTreeDef(*)`
    """

    code = "REF018"
    name = "kernel-returns-value"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        seen = set()
        for entry in analysis.kernel_entries:
            info = entry.func
            if not entry.callee.returns_none or id(info) in seen:
                continue
            seen.add(id(info))
            word = api.API[entry.api_name].call_word or entry.api_name
            for fact in info.returns:
                if fact.expr is None:
                    continue
                when = ""
                if isinstance(fact.value, CaseVal):
                    # A test parameter: a value when one of its test cases gives one.
                    case = next((c for c in fact.value.alts if _certainly_a_value(
                        c[1], analysis.value_of(c[1]))), None)
                    if case is None:
                        continue
                    when = _when(analysis, fact.value, case)
                elif not _certainly_a_value(fact.expr, fact.value):
                    continue
                name = "the lambda" if info.is_lambda else info.name
                yield Finding(
                    fact.expr,
                    f"{name} is a Pallas kernel (given to {word}) and returns a value"
                    f"{when}: JAX requires a kernel to return None; write the result into an "
                    f"output ref instead (o_ref[...] = ...)")


def _when(analysis, value, case) -> str:
    """`` (`returns` is `0` in test case "array")``: the test case that makes it a value."""
    label, expr = case
    text = analysis.module.code_for_node(expr).strip()
    if len(text) > 40 or "\n" in text:
        text = ""
    what = f" (`{value.name}` is `{text}`" if text else f" (`{value.name}`"
    return what + (f" in test case \"{label}\")" if label else " in one of its test cases)")


def _certainly_a_value(expr, value) -> bool:
    if isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"):
        return expr.value != "None"
    if isinstance(value, (ArrayVal, RefVal, SeqVal, DictVal, RefSeqVal)):
        return True
    return isinstance(expr, _not_none())
