from __future__ import annotations

from reflint import api
from reflint.diagnostics import SAFE, UNSAFE
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE, read_fix_factory, ref_name, where_from


class RefUsedAsArray(Rule):
    """A Ref is used where an Array is expected, without reading it with `[...]`.

    ## What it does
    Reports a Ref used as an operand of arithmetic, comparison, unary or matmul operators
    (`x_ref + 1`, `-x_ref`, `x_ref @ w`, `x_ref == 0`), passed to a `jax.numpy`, `jax.lax`,
    `jax.nn`, `jax.scipy`, `jax.random`, NumPy or `math` function (`jnp.sin(x_ref)`, `np.asarray(x_ref)`,
    `lax.stop_gradient(x_ref)`), converted with `float()`/`int()`, asked for an Array-only
    method or attribute (`.sum()`, `.T`, `.reshape()`, `.astype()`), or rebound with an
    augmented assignment (`x_ref += 1`), or on the right of one (`x[...] += y_ref`), stored
    into a ref (`o_ref[...] = x_ref`, also in a Pallas kernel), formatted with a format spec
    (`f"{loss_ref:.4f}"`, `format(loss_ref, ".2f")`), or given to `jax.device_get` (which
    returns the ref itself) or `jax.device_put`. Valid uses are not reported: `.shape`, `.dtype`,
    `.ndim`, `.size`, `len()`, indexing, `is None`, passing the ref to functions that take refs.
    A Pallas `BlockSpec`'s index map (also given to a subclass of BlockSpec) receives the grid
    indices and then, under TPU's `PrefetchScalarGridSpec`, the scalar-prefetch refs: its
    parameters spelled as refs (`lengths_ref`) are refs, so `i + lengths_ref` is reported.

    ## Why is this bad?
    A Ref is not an Array: indexed reads and writes are about the only things it supports.
    JAX's errors are often cryptic (`'AbstractRef' object has no attribute '_add'`, `sin
    requires ndarray or scalar arguments`), and some uses are silently wrong: at top level
    `x_ref == 0` is `False` without comparing anything; `lax.stop_gradient(x_ref)` returns the
    ref itself, so later writes show through the "stopped" value; inside `jit`
    `jnp.asarray(x_ref)` of a ref argument returns the ref unread, and of a closed-over ref it
    never finishes (NumPy-style iteration over the ref does not stop under tracing).

    ## Example
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.arange(3.0))
    y = jnp.sin(x_ref)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    x_ref = jax.new_ref(jnp.arange(3.0))
    y = jnp.sin(x_ref[...])
    ```

    ## Fix safety
    The fix inserts the read, `x_ref` → `x_ref[...]` (parenthesized where precedence needs
    it). It is safe: the original code fails or computes nothing meaningful. For `x_ref += v`
    the fix (`x_ref[...] += v`) turns a rebinding into an in-place write; it is marked unsafe
    and applied only with `--unsafe-fixes`. A scalar-prefetch ref of an index map gets no fix:
    one element of it is the index (`lengths_ref[b]`), and which one is not known.

    ## Known limits
    Only refs the analysis can see are reported (see the shared analysis). On a traced ref
    (inside `jit`, a Pallas kernel, any traced function) `.reshape`, `.T`, `.transpose`,
    `.bitcast` and `.at` make ref views: they are not reported, and the view is a ref (math on
    it is). They are reported at top level, where a concrete Ref lacks them. In a Pallas kernel
    `x_ref[0]` of a parameter may be a row of a ref or a ref of a pytree of refs: its uses are
    not reported. Refs passed to functions of other libraries are not reported. Refs reached
    through objects (`weights.conv.weight`, a property returning `self._flags_ref`), tuples,
    dicts and `dict.values()` are followed; the function given to `jax.tree.map` over one
    tree is called with each leaf known to be a ref (an NNX module's Variables, whatever its
    other attributes), over several trees when every leaf is known to be a ref, and with
    `is_leaf=` with none (it may stop at `nnx.Variable`s, whose arithmetic reads the ref).
    A tuple of refs is a container: `(buf,) +
    scratches` is concatenation, not math on a ref.

    ## JAX versions
    Every version rejects math on an unread ref, with messages that changed: up to 0.9 `jnp.*`
    says "did you forget to unpack ([...]) the ref?"; 0.10.2 says `sin requires ndarray or
    scalar arguments`. Inside jit, operators fail with `'AbstractRef' object has no attribute
    '_add'`. `ref.T` / `ref.reshape` inside jit return a ref view from 0.7.2 on. `ref.ndim` and
    `ref.size` work at top level from 0.9 / 0.10.2. `x_ref == 0` is silently
    `False` at top level and raises `'AbstractRef' object has no attribute '_eq'` inside jit.
    JAX 0.12 says "sin got a Ref of type Ref{...} ... Did you forget to read its value with
    `ref[...]`?", also for `jnp.asarray(ref)` inside jit (silently a Ref-typed tracer on 0.10.2).
    Measured on 0.10.2 and 0.12.0.1: `x[...] += y_ref` raises `unsupported operand type(s) for
    +=`; a format spec raises `TypeError: unsupported format string passed to Ref.__format__`;
    `jax.device_get(ref)` silently returns the ref itself; `jax.device_put(ref)` raises
    `TypeError: No pxla_result_handler for type ... AbstractRef`.
    `jax.lax.optimization_barrier` takes refs from JAX 0.11 on (a bare `AssertionError` on
    0.10.2): it is reported only for older targets.

    `o_ref[...] = x_ref` fails on every version, at top level, inside jit and in a Pallas
    kernel (measured on 0.10.2 and 0.12.0.1, `interpret=True`).

    ## Runtime message
    `ValueError: Cannot store a Ref into another Ref. Did you forget to load from it using
    [...]?` for a ref stored into a ref;
    `ValueError: Attempting to pass a Ref Ref{float32[3]} to a primitive: sin -- did you forget
    to unpack ([...]) the ref?` (≤0.9), `TypeError: sin requires ndarray or scalar arguments`
    (0.10.2), `TypeError: unsupported operand type(s) for +: 'Ref' and 'int'` (top level), or
    nothing at all for `x_ref == 0`, `jnp.asarray(x_ref)` inside jit and `lax.stop_gradient`.
    """

    code = "REF007"
    name = "ref-used-as-array"
    fixable = SAFE
    triggers = REF_EVIDENCE

    def check(self, analysis):
        version = analysis.settings.target_jax_version
        for use in analysis.ref_uses:
            if use.ref.tree:  # an NNX Variable/module holding refs: Variables do arithmetic
                continue
            if use.kind == "call_arg" and api.accepts_refs(use.detail, version):
                continue  # e.g. lax.optimization_barrier takes refs from JAX 0.11
            name = ref_name(analysis, use.expr, use.ref)
            origin = where_from(analysis, use.ref)
            if use.kind == "binop":
                msg = f"{name} is a Ref used as an operand of `{use.detail}`"
            elif use.kind == "unary":
                msg = f"{name} is a Ref used as the operand of unary `{use.detail}`"
            elif use.kind == "compare":
                msg = f"{name} is a Ref compared with `{use.detail}`"
                if use.detail in ("==", "!="):
                    msg += (f" (JAX evaluates it to {use.detail == '!='} without comparing "
                            "values)")
            elif use.kind == "call_arg":
                fn = analysis.text_of(use.context.func)
                a = api.lookup(use.detail)
                msg = f"{name} is a Ref passed to {fn}, " + (
                    a.word if a is not None and a.family is api.Family.ARRAY and a.word
                    else "which expects an Array")
            elif use.kind == "format":
                msg = (f"{name} is a Ref formatted with a format spec{use.detail}; a Ref "
                       f"has none (`TypeError: unsupported format string passed to "
                       f"Ref.__format__`)")
            elif use.kind == "attr":
                msg = f"{name} is a Ref; `.{use.detail}` exists only on Arrays"
            elif use.kind == "builtin":
                msg = f"{name} is a Ref converted with {use.detail}()"
            elif use.kind == "stored":
                msg = (f"{name} is a Ref stored into another Ref (JAX: \"Cannot store a Ref "
                       f"into another Ref\")")
            elif use.kind == "augassign":
                msg = (f"{name} is a Ref updated with `{use.detail}`, which rebinds the name "
                       f"instead of writing the ref")
            else:  # pragma: no cover - all kinds are listed above
                msg = f"{name} is a Ref used as an Array"
            if _scalar_prefetch(use.ref):
                # An index map's SMEM ref: one element is the index (`lengths_ref[b]`); which
                # one is not the linter's to guess, so there is no fix.
                yield Finding(use.expr, f"{msg}{origin}; read an element of it, e.g. {name}[0]")
                continue
            msg += f"{origin}; read it first with {name}[...]"
            applicability = UNSAFE if use.kind == "augassign" else SAFE
            yield Finding(use.expr, msg, fix=read_fix_factory(use.expr, applicability))


def _scalar_prefetch(ref) -> bool:
    """A parameter of a BlockSpec's index map (api.Role.INDEX_MAP): a scalar-prefetch ref."""
    return ref.origin == "pallas" and ref.scope is not None and \
        ref.scope.has_role(api.Role.INDEX_MAP)
