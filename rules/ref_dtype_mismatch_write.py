from __future__ import annotations

from reflint._lazy import lazy
from reflint.diagnostics import SAFE, UNSAFE, Edit, Fix
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE, ref_name

cst = lazy("reflint.nodes")
_dtypes = lazy("reflint.analysis.dtypes")


class RefDtypeMismatchWrite(Rule):
    """A value of one dtype is written into a Ref of another.

    ## What it does
    Reports a write into a Ref (`x_ref[...] = v`, `x_ref[i] += v`, `jax.ref.set`, `swap`,
    `addupdate`) when the ref's dtype and the written value's dtype are both known and differ.
    The ref's dtype is its initial value's (`jax.new_ref(0)` is an int32 ref,
    `jax.new_ref(jnp.zeros(3))` a float32 one) or the `jax.ShapeDtypeStruct` given to
    `jax.empty_ref`; the value's comes from the shared dtype domain (Python literals,
    `jnp` constructors and their `dtype=`, `astype`, reads of other refs, arithmetic with
    JAX's promotion rules), and for a parameter of the function the write is in (never
    rebound there), the Arrays every call of it passes (`jax.vmap(fill)(ref, jnp.ones(3))`
    writing `r[...] = x` in `fill`). For `x_ref[...] op= v` the value is `x_ref[...] op v`.

    ## Why is this bad?
    A Ref's dtype is fixed when it is created, and a write must match it exactly: JAX does
    not cast, not even a Python scalar. `total = jax.new_ref(0)` makes an int32 ref, so
    `total[...] += loss` fails with "Invalid dtype for `swap`" when the line is traced, far
    from the cause; `acc[...] = 0` into a float32 ref fails the same way. The fix belongs where
    the dtype was decided: `jax.new_ref(0.0)`, or an explicit `dtype=` on the initial array.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    total = jax.new_ref(0)
    loss = jnp.mean(jnp.ones(3))
    total[...] += loss
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    total = jax.new_ref(0.0)
    loss = jnp.mean(jnp.ones(3))
    total[...] += loss
    ```

    ## Fix safety
    When the written value is an integer literal and the ref holds floats (`acc[...] = 0`),
    the fix writes the same number as a float (`acc[...] = 0.0`): safe, the original always
    fails. When the ref was created from an integer literal and is written with floats
    (`jax.new_ref(0)`), the fix creates it from a float (`jax.new_ref(0.0)`): unsafe, since
    the ref's dtype changes for every other use too.

    ## Known limits
    Only dtypes the domain knows are compared: values of unknown calls, parameters of
    functions whose callers the analysis does not see (or whose calls pass different dtypes),
    and Pallas kernel refs (operands, outputs, scratch buffers: their dtypes are not connected
    to the `out_shape` / `scratch_shapes` / operands of the launch) are not checked.
    In a file that mentions `x64` (`jax_enable_x64`), where the default widths may be 64-bit,
    only a write of another kind is reported (floats into an integer or bool ref, integers
    into a bool one, complex into a float one): `jax.new_ref(0)` is an integer ref and
    `x * 2.0` a float with 64-bit types on or off, but whether a literal is 32 or 64 bits wide
    is not known there. Shapes are not compared. A name bound to refs of different dtypes on different
    paths (a notebook re-running `x_ref = jax.new_ref(...)` in several cells) is one merged
    ref of no known dtype: its writes are not checked (JAX's docs/array_refs.py). Planted
    measure (integer refs planted at every float ref creation of the Ref code in JAX, Flax and
    six third-party repositories that is written with a float): 23 of 29 reported; the misses
    are values of unknown calls, Pallas pipeline refs, and that merged ref.

    ## JAX versions
    The same on JAX 0.10.2 and 0.12.0.1 (measured): every dtype mismatch raises at trace time,
    at top level and under `jit`, `scan` or Pallas' interpreter; `bf16_ref[...] += 1.0` is
    fine (the sum stays bfloat16), `f32_ref[...] = np.ones(3)` is fine (NumPy's float64 is
    canonicalized to float32 with 64-bit types off).

    ## Runtime message
    `ValueError: Invalid dtype for `swap`. Ref dtype: int32. Value dtype: float32.` (for
    `jax.ref.addupdate`: "Invalid dtype for `addupdate`. Ref dtype: int32. Value shape:
    float32."). `reflint run` reports it as REF022 at the write, with the ref's creation site.
    """

    code = "REF022"
    name = "ref-dtype-mismatch-write"
    fixable = SAFE
    triggers = REF_EVIDENCE

    def check(self, analysis):
        # A file that may enable 64-bit types: only a change of kind (an integer ref written
        # with floats) is sure; widths (int32 or int64) are not.
        kinds_only = analysis.x64_possible
        for acc in analysis.accesses:
            if not acc.is_write or acc.value_expr is None or acc.ref.tree:
                continue
            ref_av = analysis.ref_aval(acc.ref, kinds_only=kinds_only)
            if ref_av is None:
                continue
            value = analysis.aval_of(acc.value_expr, kinds_only=kinds_only, scope=acc.func)
            if value is None:
                continue
            written = value
            if acc.kind == "augitem":
                written = _augmented(acc.node, ref_av, value)
                if written is None:
                    continue
            if not written.differs(ref_av.dtype):
                continue
            if kinds_only and _dtypes.kind_of(written.dtype) == _dtypes.kind_of(ref_av.dtype):
                continue
            name = ref_name(analysis, acc.ref_expr, acc.ref)
            created = _creation(analysis, acc.ref)
            where = ""
            if created is not None:
                line = analysis.line_of(created.node)
                init = created.init_expr
                text = analysis.text_of(init) if init is not None else ""
                if line and text and len(text) <= 40:
                    where = f" (created on line {line} from `{text}`)"
                elif line:
                    where = f" (created on line {line})"
            what = "the result" if acc.kind == "augitem" else "the value"
            ref_desc = _KIND_NAMES[_dtypes.kind_of(ref_av.dtype)] if kinds_only else \
                ref_av.dtype
            article = "an" if ref_desc[0] in "aiu" else "a"
            value_desc = f"a{'n' if kinds_only and _dtypes.kind_of(written.dtype) == 1 else ''} " \
                f"{_KIND_NAMES[_dtypes.kind_of(written.dtype)]} value" if kinds_only else \
                written.describe()
            msg = (f"{what} written into {name} is {value_desc}, but {name} is "
                   f"{article} {ref_desc} ref{where}: JAX raises \"Invalid dtype for "
                   f"`{'addupdate' if acc.kind == 'addupdate' else 'swap'}`\" when it traces "
                   f"this write. Create the ref with the dtype it holds, or cast the value "
                   f"(`.astype(...)`)")
            yield Finding(acc.node, msg,
                          related_node=created.node if created is not None else None,
                          related_message="the ref is created here",
                          fix=None if kinds_only else
                          _fix_factory(acc, ref_av, written, created))


_KIND_NAMES = ("bool", "integer", "floating-point", "complex")


def _augmented(stmt, ref_av, value):
    op = type(stmt.operator)
    ref = _dtypes.AVal(ref_av.dtype, False, None)
    if op is cst.DivideAssign:
        return _dtypes._inexact(_dtypes.promote(ref, value))
    if op in (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.PowerAssign,
              cst.FloorDivideAssign, cst.ModuloAssign):
        return _dtypes.promote(ref, value)
    return None


def _creation(analysis, ref):
    if ref.origin != "created":
        return None
    for c in analysis.creations:
        if c.node is ref.node:
            return c
    return None


def _int_literal(expr) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, cst.Integer)


def _float_text(analysis, expr) -> str:
    text = analysis.text_of(expr)
    return text + ".0"


def _fix_factory(acc, ref_av, written, created):
    ref_kind = _dtypes._lattice_kind(ref_av.dtype)
    val_kind = _dtypes._lattice_kind(written.dtype)
    if acc.kind in ("setitem", "set", "swap") and _int_literal(acc.value_expr) and \
            ref_kind == 2 and val_kind == 1:
        target, applicability, what = acc.value_expr, SAFE, "Write the value as a float"
    elif created is not None and created.init_expr is not None and \
            _int_literal(created.init_expr) and ref_kind == 1 and val_kind == 2 and \
            written.dtype in ("float32", _dtypes.FLOATING):
        target, applicability, what = created.init_expr, UNSAFE, \
            "Create the ref from a float"
    else:
        return None

    def make(analysis):
        pos = analysis.position(target)
        if pos is None:
            return None
        line, col, end_line, end_col = pos
        new = _float_text(analysis, target)
        return Fix(what, (Edit(line, col, end_line, end_col, new),), applicability)

    return make
