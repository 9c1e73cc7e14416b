"""RefError classes (one per rule code) and translation of JAX's own errors.

Every check in :mod:`reflint.runtime` raises a subclass of :class:`RefError`.
The message always starts with ``"<code> <name>: "`` so that tools (and the
fixture harness) can read the code from the first line.
"""

from __future__ import annotations

import re

from reflint.codes import CODES

__all__ = [
    "RefError",
    "RefReturned",
    "RefPassedTwice",
    "RefClosedOverAndPassed",
    "FreezeOutsideCreationScope",
    "MappedWriteToClosedOverRef",
    "RematOfImpureFunction",
    "RefUsedAsArray",
    "DifferentiatedValueWrittenToRef",
    "RefOfRef",
    "UseAfterFreeze",
    "CustomVjpFwdForeignRef",
    "TracedStateLeak",
    "ArrayItemAssignment",
    "RedundantDonation",
    "UnavailableJaxApi",
    "GradWithRespectToRef",
    "VjpOfRefWithoutWithRefs",
    "KernelReturnsValue",
    "OutputRefRebound",
    "RefViewPassedToTransform",
    "RefWrittenInWhileCondAndBody",
    "AccumulatedWithoutInit",
    "InputRefWritten",
    "ERROR_CLASSES",
    "translate",
]


class RefError(Exception):
    """Base class: a misuse of a JAX mutable array reference was detected.

    ``code`` is the stable rule code (``"REF004"``) and ``name`` its kebab-case
    name (``"freeze-outside-creation-scope"``).  ``str(err)`` starts with both.
    """

    code: str = ""
    name: str = ""

    def __init__(self, detail: str):
        self.detail = detail
        super().__init__(f"{self.code} {self.name}: {detail}")


def _make(code: str, cls_name: str, doc: str) -> type[RefError]:
    cls = type(cls_name, (RefError,), {"code": code, "name": CODES[code], "__doc__": doc,
                                       "__module__": __name__})
    return cls


RefReturned = _make("REF001", "RefReturned", "A ref was returned from jit or a control-flow body.")
RefPassedTwice = _make("REF002", "RefPassedTwice", "The same ref was passed twice as an argument.")
RefClosedOverAndPassed = _make(
    "REF003", "RefClosedOverAndPassed", "A ref was both closed over and passed as an argument.")
FreezeOutsideCreationScope = _make(
    "REF004", "FreezeOutsideCreationScope", "jax.freeze of a ref created outside the current trace.")
MappedWriteToClosedOverRef = _make(
    "REF005", "MappedWriteToClosedOverRef",
    "A vmap/pmap/shard_map body wrote to a ref it closes over.")
RematOfImpureFunction = _make(
    "REF006", "RematOfImpureFunction",
    "A jax.checkpoint/jax.remat function wrote to a ref it did not create.")
RefUsedAsArray = _make("REF007", "RefUsedAsArray", "An unread ref was used where an Array is expected.")
DifferentiatedValueWrittenToRef = _make(
    "REF008", "DifferentiatedValueWrittenToRef",
    "A differentiated value was written into a non-differentiated ref.")
RefOfRef = _make("REF009", "RefOfRef", "A ref was created whose initial value is a ref.")
UseAfterFreeze = _make("REF010", "UseAfterFreeze", "A ref was used after jax.freeze.")
CustomVjpFwdForeignRef = _make(
    "REF011", "CustomVjpFwdForeignRef",
    "A custom_vjp fwd rule returned a ref that is not one of its arguments.")
TracedStateLeak = _make("REF012", "TracedStateLeak", "A traced ref escaped the trace that created it.")
ArrayItemAssignment = _make(
    "REF013", "ArrayItemAssignment", "Item assignment on an immutable jax.Array.")
RedundantDonation = _make(
    "REF014", "RedundantDonation", "donate_argnums covers a ref argument (refs are always donated).")
UnavailableJaxApi = _make(
    "REF015", "UnavailableJaxApi", "A Ref API name that the target JAX version does not have.")
GradWithRespectToRef = _make(
    "REF016", "GradWithRespectToRef",
    "jax.grad (or value_and_grad/jacrev/jacfwd/hessian, or jax.vjp on JAX <= 0.10) was asked "
    "to differentiate with respect to a Ref.")
VjpOfRefWithoutWithRefs = _make(
    "REF017", "VjpOfRefWithoutWithRefs",
    "The VJP function of a Ref-typed argument was applied without binding a gradient ref "
    "with .with_refs(...), or with_refs got entries that do not match the primal arguments.")

KernelReturnsValue = _make(
    "REF018", "KernelReturnsValue", "A Pallas kernel returned a value instead of returning None.")
OutputRefRebound = _make(
    "REF019", "OutputRefRebound",
    "An output ref of a Pallas kernel is never written (rebound instead of written?).")
RefViewPassedToTransform = _make(
    "REF020", "RefViewPassedToTransform",
    "A ref view (x_ref.at[...], .reshape(...)) was passed to a transform that rejects it.")
RefWrittenInWhileCondAndBody = _make(
    "REF021", "RefWrittenInWhileCondAndBody",
    "A while_loop's condition and body share a ref (both write it, or eagerly: both use it).")

AccumulatedWithoutInit = _make(
    "REF028", "AccumulatedWithoutInit",
    "A Pallas kernel reads (accumulates into) an output ref before anything writes it.")
InputRefWritten = _make(
    "REF029", "InputRefWritten",
    "A Pallas kernel writes an input ref (not aliased to an output) and never its outputs.")

ERROR_CLASSES: dict[str, type[RefError]] = {
    c.code: c for c in (
        RefReturned, RefPassedTwice, RefClosedOverAndPassed, FreezeOutsideCreationScope,
        MappedWriteToClosedOverRef, RematOfImpureFunction, RefUsedAsArray,
        DifferentiatedValueWrittenToRef, RefOfRef, UseAfterFreeze, CustomVjpFwdForeignRef,
        TracedStateLeak, ArrayItemAssignment, RedundantDonation, UnavailableJaxApi,
        GradWithRespectToRef, VjpOfRefWithoutWithRefs, KernelReturnsValue, OutputRefRebound,
        RefViewPassedToTransform, RefWrittenInWhileCondAndBody, AccumulatedWithoutInit,
        InputRefWritten)
}

#: The way out of REF016, shared by the translated JAX errors and reflint's own check.
REF016_ADVICE = (
    "Differentiate the value instead: jax.grad(f)(w_ref[...]) with f taking an Array (then "
    "write the update back with w_ref[...] -= lr * g); or, on JAX >= 0.11, use "
    "`y, f_vjp = jax.vjp(f, w_ref)` and bind a gradient ref: "
    "`f_vjp.with_refs(g_ref)(ct)` accumulates the gradient into g_ref. Refs at positions "
    "that are not differentiated (outside argnums) are fine.")

# (code, compiled pattern, advice) — the first match wins, so specific patterns come first.
# Texts are JAX's own (runtime-truth-messages.md for 0.7.1 … 0.10.2; docs/jax-versions.md for
# 0.11.2 and 0.12.0.1).
_RULES: list[tuple[str, re.Pattern[str], str]] = [
    ("REF017", re.compile(r"is Ref-typed, so its gradient must be accumulated into a ref"
                          r"|which is Ref-typed, can't be returned as a value"
                          r"|unexpected tree structure in the arguments to a VJP function's "
                          r"`with_refs` method"),
     "Bind a gradient ref for every Ref-typed primal before applying the VJP function: "
     "`f_vjp.with_refs(g_ref)(ct)` (one entry per primal argument of the differentiated "
     "function, each a Ref, jax.ad.GradValue() or jax.ad.DontWant()); the gradient is added "
     "into g_ref."),
    # 0.11+: JAX's own clear message ("grad cannot ...", "jacrev cannot ..."); 0.7.1 ... 0.10.2:
    # the cotangent-type error that jax.grad and a VJP of a Ref-typed argument fail with.
    ("REF016", re.compile(r"\b\w+ cannot differentiate with respect to a Ref-typed argument"
                          r"|Expected cotangent type Ref\{"
                          # jax.linearize(f, x_ref) then applying the linear function
                          r"|Got tangent aval \S+ for primal aval Ref\{"),
     "Differentiating with respect to a Ref is not supported: the gradient of a ref must "
     "itself be accumulated into a ref. " + REF016_ADVICE),
    ("REF011", re.compile(r"custom_vjp fwd function .* returned a mutable array reference", re.S),
     "A custom_vjp fwd rule may return (as residuals) only refs that are its own arguments."),
    ("REF001", re.compile(r"returned a mutable array reference|Cannot return `?Refs?`?s? from", re.S),
     "Don't return refs from jit or control-flow bodies: return ref[...] (an Array), or pass "
     "the ref in as an argument and write into it."),
    # Eagerly, while_loop is traced as a jit of cond and body whose arguments are the refs they
    # close over: one ref closed over by both is "passed twice" to `while`.
    ("REF021", re.compile(r"only one reference to a mutable array may be passed as an argument "
                          r"to a function, but when tracing while at"
                          r"|Cannot write to the same ref in both cond and body of while loop"),
     "Keep the while_loop condition free of refs the body uses (compute it from the carry)."),
    ("REF020", re.compile(r"TransformedRefs are not allowed"),
     "Pass the ref itself (not a view such as x_ref.at[...]) and index it inside the "
     "function."),
    ("REF002", re.compile(r"only one reference to a mutable array may be passed"
                          r"|Attempt to donate the same buffer twice"
                          r"|Cannot pass the same ref into a mpmd map multiple times"),
     "Pass each ref at most once per call; pass two distinct refs, or pass it once and use it "
     "twice inside."),
    ("REF003", re.compile(r"was both closed over and passed"),
     "Either close over the ref or pass it as an argument, not both."),
    ("REF005", re.compile(r"with vmapped value on an unbatched array reference"),
     "Pass the ref as an argument of the mapped function (with a mapped axis), or write from "
     "outside the mapped function."),
    ("REF008", re.compile(r"with a differentiated value on a non-differentiated array reference"
                          # jax.ref.addupdate's JVP rule (0.7.1 ... 0.10.2) lacks swap's check
                          # and binds addupdate on the symbolic-zero tangent of the ref
                          r"|argument to addupdate as a JAX value\. The problematic value is of "
                          r"type <class '[\w.]*\.Zero'> and was passed to addupdate at position 0"),
     "Write jax.lax.stop_gradient(value) into a plumbing ref, or make the ref an argument of "
     "the differentiated function (jax.vjp(...).with_refs on JAX >= 0.9)."),
    ("REF006", re.compile(r"Effects not supported in partial-eval of `?checkpoint`?/`?remat`?"),
     "Don't apply jax.checkpoint/jax.remat to a function that reads or writes refs it did "
     "not create; move the ref access outside the rematerialized function."),
    ("REF018", re.compile(r"The kernel function in (?:the pallas_call|core_map|mpmd_map) .*"
                          r"should\s+return None", re.S),
     "A Pallas kernel returns nothing: write its results into its output refs "
     "(o_ref[...] = value) instead of returning them."),
    ("REF010", re.compile(r"`(?:get|swap|addupdate)` must be called on `Ref` types"),
     "The ref was used after jax.freeze (or jax.free_ref); end a ref only after its last use."),
    ("REF007", re.compile(
        r"did you forget to unpack"
        r"|'(?:Abstract)?(?:Array|Transformed)?Ref' object has no attribute"
        r"|unsupported operand type\(s\) for .*'(?:Array|Transformed)?Ref'"
        # JAX 0.10: Array tracer + ref tracer; two plain tracers never fail this way
        r"|unsupported operand type\(s\) for \S+: '\w*Tracer' and '\w*Tracer'"
        r"|not supported between instances of .*'(?:Array|Transformed)?Ref'"
        r"|bad operand type for unary .*'(?:Array|Transformed)?Ref'"
        r"|argument must be .*not '(?:Array|Transformed)?Ref'"
        r"|must be real number, not (?:Array|Transformed)?Ref\b"
        r"|requires ndarray or scalar arguments, got <class '[\w.]*(?:Tracer|Ref)'>"
        # JAX >= 0.11: "sin got a Ref of type Ref{float32[2]} at position 0, but a Ref can't
        # be passed where an array is expected. Did you forget to read its value ...?"
        r"|got a Ref of type .*a Ref can't be passed where an array is expected"
        r"|__array__\(\) was called on traced array with shape Ref\{"
        # jax.random.* given a ref holding key data
        r"|unexpected PRNG key type <class '[\w.]*Ref'>", re.S),
     "Read the ref first: use x_ref[...] (or x_ref[idx]) to get an Array, then do math on it."),
    ("REF013", re.compile(r"JAX arrays are immutable and do not support in-place item assignment"),
     "jax.Array is immutable: use x.at[idx].set(v), or keep the state in a ref "
     "(x_ref = jax.new_ref(x); x_ref[idx] = v)."),
    ("REF014", re.compile(r"is already aliased with one output, thus it cannot be added as a "
                          r"buffer donor"),
     "Refs are always donated; remove the ref argument from donate_argnums."),
    ("REF012", re.compile(r"Encountered an unexpected tracer.*Ref\{", re.S),
     "A ref created inside a trace (jit, scan, ...) escaped it; keep traced refs inside the "
     "function that created them."),
    # Flax NNX (TraceContextError): an attribute of a closed-over Module/Pytree set in a trace.
    ("REF012", re.compile(r"Cannot mutate '[^']*' from different trace level"),
     "An NNX object created outside the trace cannot be changed inside it: pass it as an "
     "argument of an NNX transform (nnx.jit, nnx.vmap ...), or keep the value in a Variable "
     "holding a ref and write it with obj.attr[...] = value."),
]


def translate(exc: BaseException) -> RefError | None:
    """Return the RefError matching a JAX exception, or None.

    A RefError is returned as is.  The new error keeps JAX's message; callers
    chain the original with ``raise err from exc``.
    """
    if isinstance(exc, RefError):
        return exc
    if not isinstance(exc, Exception):
        return None
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the original error
        return None
    for code, pattern, advice in _RULES:
        if pattern.search(text):
            first = text.strip()
            return ERROR_CLASSES[code](f"{first}\n{advice} (JAX raised {type(exc).__name__}.)")
    return None
