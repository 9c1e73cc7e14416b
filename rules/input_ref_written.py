from __future__ import annotations

from reflint.rule import Finding, Rule

from ._common import REF_EVIDENCE
from ._kernel_refs import item_writes, kernel_io, name_uses


class InputRefWritten(Rule):
    """A Pallas kernel writes one of its input refs and never writes its outputs.

    ## What it does
    Reports a write (`x_ref[...] = v`, `x_ref[...] += v`) to an input ref of a `pl.pallas_call`
    kernel when that input is not aliased to an output (`input_output_aliases`) and the kernel
    never writes any of its output refs (no store, no use but `.shape`/`.dtype`).

    ## Why is this bad?
    A kernel's input refs are copies of the operands (blocks in VMEM, or a buffer the call owns):
    writing them does not change the caller's array, and the value written is dropped when the
    kernel ends. Meanwhile the outputs, never written, are uninitialised. The author meant to
    write the output, or to update the input in place, which needs `input_output_aliases` and
    writing the aliased output ref. JAX says nothing (jax-ml/jax#24656): the result is garbage
    on device and NaN under `interpret=True` (measured on JAX 0.10.2, CPU).

    ## Example
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def double(x_ref, o_ref):
        x_ref[...] = x_ref[...] * 2.0

    out = pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                         interpret=True)(jnp.ones(8))
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    out = pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                         interpret=True)(jnp.ones(8))
    ```

    ## Fix safety
    No fix: the write may belong in an output ref, or the input may need aliasing.

    ## Known limits
    Only `pl.pallas_call` kernels whose every launch the analysis sees are checked (also
    through a transform: `jax.vmap(pl.pallas_call(...))(x)`), with positional operands, a
    countable `scratch_shapes`, a literal `input_output_aliases`, and as many ref parameters as
    operands, outputs and scratch buffers together. The outputs are counted from `out_shape`
    (a `ShapeDtypeStruct` or `.like(x)`, `jax.typeof(x)`, a memory space's or semaphore's
    allocation, an Array, a literal tuple or list of them, `[s] * 2`, also through a name the
    launching function binds); where it cannot be counted (a parameter, a pytree), from the
    kernel's parameters when each receives a ref (none bound by `functools.partial`, none with
    a default). A kernel that writes an input and some output is not reported (the input may
    be used as scratch).

    ## JAX versions
    Every version: JAX accepts the kernel silently (0.10.2 and 0.12.0.1 under
    `interpret=True` on CPU: the output is all NaN and the operand unchanged).

    ## Runtime message
    None: JAX is silent. `reflint run` checks the kernel's traced program: an input written
    while no output is, fails with `REF029 input-ref-written: input 0 of the Pallas kernel ...
    is written, but no output is ...`.
    """

    code = "REF029"
    name = "input-ref-written"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        for info in analysis.kernel_functions():
            io = kernel_io(analysis, info)
            if io is None or not io.outputs:
                continue
            written = item_writes(analysis)
            if not any(name in written for k, name in enumerate(io.inputs)
                       if k not in io.aliased_inputs):
                continue  # no input written through an item anywhere: nothing to walk
            if any(kind != "meta" for out in io.outputs
                   for kind, _ in name_uses(analysis, info, out)):
                continue
            for k, name in enumerate(io.inputs):
                if k in io.aliased_inputs:
                    continue
                writes = [node for kind, node in name_uses(analysis, info, name)
                          if kind in ("store", "augstore")]
                if not writes:
                    continue
                stmt = writes[0]
                target = stmt.target if hasattr(stmt, "target") else stmt.targets[0].target
                outs = ", ".join(io.outputs)
                yield Finding(
                    target,
                    f"{name} is an input ref of the Pallas kernel {info.name}, not aliased to "
                    f"an output: the write is dropped, and the kernel never writes its output "
                    f"{outs} (uninitialised: garbage, NaN under interpret=True); write the "
                    f"output ref, or alias the input with input_output_aliases")
                break
