from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.diagnostics import UNSAFE, Edit, Fix
from reflint.rule import Finding, Rule
from reflint.values import ArrayVal

from ._common import ref_name
from .array_item_assignment import _is_local

cst = lazy("reflint.nodes")
_analysis = lazy("reflint.analysis")


class DiscardedFunctionalUpdate(Rule):
    """A functional update (`x.at[i].set(v)`) whose result is thrown away.

    ## What it does
    Reports an expression statement `x.at[i].set(v)` (or `.add`, `.multiply`, `.divide`,
    `.power`, `.min`, `.max`, `.apply`) when `x` is not a ref: the value read from a ref
    (`x_ref[...].at[i].set(v)`); the result of a `jax.numpy`/`jax.lax`/`jax.random` call, of
    arithmetic, of an Array method (`.astype`, `.sum`), of another functional update, of a
    local function that returns one, or of a `fori_loop`/`while_loop` whose init is one; a name every binding of which is one of those, or a
    parameter annotated `jax.Array` (or jaxtyping's `Float[Array, ...]`); a parameter of a
    nested or private function, or the carry of a `fori_loop`/`scan`/`while_loop` body, whose
    every call passes one (the loop's init); anything taken from a loop body's carry or a
    loop's result (`tb = carry[6]`, `i, tb = _unpack(carry)` through a local helper: a carry
    holds no ref, JAX rejects one); an attribute of `self` (or an item of one:
    `self.bufs[name][layer]`) that its class declares an Array or a container of Arrays
    (`history: jax.Array | None`, `self.bufs: dict[str, list[jax.Array]] = {}`), when the
    module stores no ref it knows of into it; or a name that a use seeing the same value shows is
    no ref, because a ref there would raise: an operand of arithmetic, an argument of a
    `jax.numpy`/`lax`/`nn` function, `.sum()`/`.astype()`, a value stored into a ref, an
    argument of a local function that uses its parameter so (`logits.at[0].set(-inf)` followed
    by `jax.nn.softmax(logits)`). `x_ref.at[i].set(v)` on a ref itself is not reported: it is a
    write.

    ## Why is this bad?
    `.at[i].set(v)` on an Array does not change it: it returns an updated copy. As a statement
    the copy is dropped, and nothing happens, silently: `x_ref[...].at[i].set(v)` reads the
    ref, builds a new array and discards it, so the ref keeps its old value. Write into the ref
    (`x_ref[i] = v`), or rebind the name (`x = x.at[i].set(v)`).

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    x_ref[...].at[0].set(1.0)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.zeros(3))
    x_ref[0] = 1.0
    ```

    ## Fix safety
    The fix assigns the result back: `x_ref[...] = x_ref[...].at[0].set(1.0)`, or
    `x = x.at[0].set(1.0)` for a local name (none for a global or closed-over name, which the
    assignment would make local). It is unsafe: the update, which never happened, now does.

    ## Known limits
    A receiver that may be a ref is never reported: a parameter of a public function whose uses
    are valid on a ref (`.shape`, indexing, passing it to another module's function), a value
    of an unknown call or of another module, an attribute the class does not declare an Array
    (`self.cache`), or declares one but names like a ref (`self.o_ref: jax.Array`: JAX's
    kernels annotate refs so), an attribute of another object, a name whose only
    telling use is in a branch whose test mentions it (`if isinstance(x, Ref)`), or that is
    bound to an unknown value and to a fresh Array on different paths. Uses that a ref survives
    prove nothing: comparisons (`x_ref == 0` is `False` at top level), `.shape`/`.dtype`,
    `jnp.asarray`, `lax.stop_gradient`, NumPy and `math`. In a file that uses Flax NNX and may
    make Variables holding refs (`ref=True`, `nnx.use_refs` ...) uses prove nothing: a
    Variable does arithmetic, and one holding a ref writes through `.at[i].set(v)` on JAX 0.12
    (flax 0.12.12); there, and in a file that uses Pallas (a loop in a kernel may carry a ref:
    JAX's checks are off), a loop's carry proves nothing either. A declaration is taken at its
    word, as a parameter's annotation is. The rule takes the program to be otherwise right (a use that would raise
    on a ref is taken to run). Statements under `with self.assertRaises(...)`/`pytest.raises`/
    `warns` (a test calling the update for its error) are not reported. A result discarded
    in other ways (an unused variable, a dropped return value) is not reported.

    ## JAX versions
    Silent on JAX 0.10.2 and 0.12.0.1 (measured): the ref and the array keep their values, at
    top level and under `jit`. On a ref, `x_ref.at[i].set(v)` writes it on both lines when the
    ref is traced (an argument of a jitted function, a Pallas kernel's ref, `run_state`), and
    for a concrete ref (top level, closed over by `jit`) raises `NotImplementedError` on
    0.10.2 and writes on 0.12.0.1; `.add`/`.multiply` on a ref raise (`AttributeError`, or
    `NotImplementedError` on a concrete ref on 0.10.2). So a receiver that may be a ref is left
    alone on every target version, and the rule is the same for all of them.

    ## Runtime message
    None: JAX accepts the statement and the program computes with the old value. `reflint run`
    cannot see a dropped value either (no run-time check).
    """

    code = "REF023"
    name = "discarded-functional-update"
    fixable = UNSAFE
    triggers = r"\bat\s*\["

    def check(self, analysis):
        for func, stmt, call, blocks in _discarded_updates(analysis):
            receiver = call.func.value.value.value
            value = analysis.value_of(receiver)
            if not isinstance(value, ArrayVal) and not analysis.not_a_ref(receiver, func, stmt):
                continue  # may be a ref (`plgpu.remote_ref(...)`), whose update writes
            if _expects_error(blocks):
                continue
            method = call.func.attr.value
            inner = receiver.value if isinstance(receiver, cst.Subscript) else None
            ref = analysis.ref_of(inner) if inner is not None else None
            text = analysis.text_of(receiver)
            if len(text) > 40 or "\n" in text:
                text = "the array"
            if ref is not None:
                name = ref_name(analysis, inner, ref)
                msg = (f"`{text}.at[...].{method}(...)` reads {name} and builds an updated copy "
                       f"that this statement drops: {name} is unchanged. Write into the ref "
                       f"(`{name}[...] = ...`) instead")
            else:
                msg = (f"`{text}.at[...].{method}(...)` returns an updated copy that this "
                       f"statement drops: `{text}` is unchanged. Assign the result "
                       f"(`x = x.at[...].{method}(...)`)")
            yield Finding(stmt, msg, fix=_fix_factory(stmt, receiver, func, ref is not None))


def _expects_error(blocks) -> bool:
    """The statement runs inside `with self.assertRaises(...)`, `pytest.raises`, `warns`,
    `assertNoWarnings` ... (``blocks``: its enclosing compound statements in its function): a
    test calling the update for its error or warning."""
    for n in blocks:
        if type(n) is cst.With:
            for item in n.items:
                call = item.item
                name = _analysis.last_name(call.func) if isinstance(call, cst.Call) else ""
                if name.startswith("assert") or name in ("raises", "warns", "catch_warnings"):
                    return True
    return False


def _discarded_updates(analysis) -> list:
    """(function, statement, call, enclosing blocks) for every expression statement
    `X.at[i].method(...)` in a function's or the module's own statements (not a class
    body's)."""
    def build() -> list:
        out = []
        for node, scope, blocks in analysis.small_statements():
            if type(node) is not cst.Expr or not _is_at_update(node.value):
                continue
            info = analysis.module_info if scope is None else \
                analysis.function_of(scope) if type(scope) is cst.FunctionDef else None
            if info is not None:
                out.append((info, node, node.value, blocks))
        return out

    return analysis.cached("discarded updates", build)


def _is_at_update(expr) -> bool:
    if type(expr) is not cst.Call or type(expr.func) is not cst.Attribute:
        return False
    if expr.func.attr.value not in api.AT_UPDATE_METHODS:
        return False
    sub = expr.func.value
    return type(sub) is cst.Subscript and type(sub.value) is cst.Attribute and \
        sub.value.attr.value == "at"


def _fix_factory(stmt, receiver, func, is_ref_read):
    if not is_ref_read:
        if not isinstance(receiver, cst.Name):
            return None

    def make(analysis):
        if not is_ref_read and not _is_local(analysis, receiver.value, func):
            return None
        pos = analysis.position(stmt)
        if pos is None:
            return None
        code = analysis.module.code_for_node
        new = f"{code(receiver).strip()} = {code(stmt.value).strip()}"
        line, col, end_line, end_col = pos
        return Fix("Assign the updated array back", (Edit(line, col, end_line, end_col, new),),
                   UNSAFE)

    return make
