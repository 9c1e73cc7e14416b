from __future__ import annotations

from reflint import api
from reflint._lazy import lazy
from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE
from ._kernel_refs import (augstore_in, kernel_io, kernel_scratch, name_uses, pipeline_io,
                           reads_own_item)

cst = lazy("reflint.nodes")


class AccumulatedWithoutInit(Rule):
    """A Pallas kernel accumulates into an output or scratch ref it never initialises.

    ## What it does
    Reports `o_ref[...] += v` (any augmented operator), or `o_ref[...] = o_ref[...] + v` (a
    store whose value reads the same ref), in a `pl.pallas_call` kernel when `o_ref` is an
    output or scratch ref of the kernel and the kernel never writes it otherwise: no other
    `o_ref[...] = ...` anywhere in the kernel (a `@pl.when(pl.program_id(k) == 0)` body
    included), the ref is not handed to anything (a DMA, a helper), and the output is not
    aliased to an input (`input_output_aliases`). Also in the body of a TPU
    `pltpu.emit_pipeline`, for its output blocks (copied out after each step, never in).

    ## Why is this bad?
    An output block (and a scratch buffer) starts uninitialised: Pallas does not copy the
    output array in before the kernel runs. `o_ref[...] += v` reads that block first. On a grid
    whose output index map ignores the reduction axis the block is revisited and the sum is
    meant to start from zero on the first visit; without the initialisation it starts from
    whatever the buffer held (`o_ref[...] = o_ref[...] * decay + v` reads it the same way).
    JAX says nothing: the result is garbage on device and NaN under `interpret=True`
    (measured on JAX 0.10.2, CPU).

    ## Example
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def row_sum(x_ref, o_ref):
        o_ref[...] += x_ref[...]

    x = jnp.ones((4, 8, 128), jnp.float32)
    out = pl.pallas_call(
        row_sum, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), grid=(4,),
        in_specs=[pl.BlockSpec((None, 8, 128), lambda k: (k, 0, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda k: (0, 0)), interpret=True)(x)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def row_sum(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[...]

    x = jnp.ones((4, 8, 128), jnp.float32)
    out = pl.pallas_call(
        row_sum, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), grid=(4,),
        in_specs=[pl.BlockSpec((None, 8, 128), lambda k: (k, 0, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda k: (0, 0)), interpret=True)(x)
    ```

    ## Fix safety
    No fix: where the initialisation goes (which grid axis, which value) is the author's call.

    ## Known limits
    Only `pl.pallas_call` kernels whose every launch the analysis sees are checked (also
    through a transform: `jax.vmap(pl.pallas_call(...))(x)`). Its scratch refs (the last
    parameters) need only a countable `scratch_shapes` (a list, or a name bound once to one,
    also in a grid spec); its outputs also need positional operands, a literal
    `input_output_aliases`, as many ref parameters as operands, outputs and scratch buffers
    together, and an `out_shape` it can count (a `ShapeDtypeStruct` or `.like(x)`,
    `jax.typeof(x)`, a memory space's allocation, an Array, a literal tuple or list of them,
    `[s] * 2`, also through a name the launching function binds) or, where it cannot (a
    parameter, a pytree), a kernel each of whose parameters receives a ref (none bound by
    `functools.partial`, none with a default): the outputs are then what the operands and
    scratch buffers leave. A store that
    reads the ref only for its shape or dtype (`jnp.zeros_like(o_ref[...])`,
    `o_ref[...].shape`) initialises it, and so does one that reads it only inside a selection
    (`jnp.where(k == 0, x, o_ref[...] + x)`, `lax.select`, `a if c else b`), which may leave
    the contents out on the first visit. Any other write
    of the ref, however conditional, counts as an initialisation (the rule does not check
    that the condition selects the first visit), and so does handing the ref to any function
    (an accumulation in a helper the kernel calls is not followed). A pipeline body is
    checked when its `in_specs` and `out_specs` are `BlockSpec`s the analysis can count;
    Mosaic GPU kernels are not checked.

    ## JAX versions
    Every version: JAX accepts the kernel silently (0.10.2 and 0.12.0.1 under
    `interpret=True` on CPU: all NaN; on device the buffer's previous contents).

    ## Runtime message
    None: JAX is silent. `reflint run` checks the kernel's traced program: an output (not
    aliased) or scratch buffer whose first operation is a read (or a loop, `fori_loop`'s, whose
    body reads it first) whose value reaches no selection (`jnp.where`), with no earlier
    write, fails
    with `REF028 accumulated-without-init: output 0 of the Pallas kernel ... is read ...
    before anything writes it`.
    """

    code = "REF028"
    name = "accumulated-without-init"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        for info in analysis.kernel_functions():
            io = kernel_io(analysis, info) or pipeline_io(analysis, info)
            if io is not None:
                outputs, scratch, aliased = io.outputs, io.scratch, io.aliased_outputs
            else:  # the outputs unknown (a pytree out_shape, aliases in a variable...)
                outputs, scratch, aliased = (), kernel_scratch(analysis, info), ()
                if not scratch:
                    continue
            what_fn = "Pallas pipeline body" if analysis.kernel_entries_of(info)[0].api_name \
                == api.EMIT_PIPELINE else "Pallas kernel"
            for k, name in enumerate(outputs + scratch):
                is_output = k < len(outputs)
                if is_output and k in aliased:
                    continue
                if not augstore_in(analysis, info, name):
                    continue  # no `name[...] += ...` (or `= name[...] ...`) in the kernel
                uses = name_uses(analysis, info, name)
                # A store whose value reads the ref accumulates too; any other store, or the
                # ref handed on, may initialise it.
                kinds = [("augstore" if kind == "store" and reads_own_item(node, name) else kind,
                          node) for kind, node in uses]
                if any(kind in ("store", "other") for kind, _ in kinds):
                    continue
                first = next((node for kind, node in kinds if kind == "augstore"), None)
                if first is None:
                    continue
                stmt = first
                if type(stmt) is cst.AugAssign:
                    how, target = f"`{_op(stmt)}`", stmt.target
                else:  # `name[i] = ... name[j] ...`: the target writing the ref
                    how = f"a store of its own contents (`{name}[...] = {name}[...] ...`)"
                    target = next(a.target for a in stmt.targets
                                  if type(a.target) is cst.Subscript and
                                  type(a.target.value) is cst.Name and
                                  a.target.value.value == name)
                what = "output" if is_output else "scratch"
                yield Finding(
                    target,
                    f"{name} is {'an' if is_output else 'a'} {what} ref of the {what_fn} "
                    f"{info.name} updated with {how} but never initialised: its "
                    f"buffer starts uninitialised, so the result is garbage (NaN under "
                    f"interpret=True); write it first, e.g. under "
                    f"@pl.when(pl.program_id(axis) == 0)")
                break


def _op(stmt) -> str:
    from reflint.analysis import op_text

    return op_text(stmt.operator)
