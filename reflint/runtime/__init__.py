"""reflint.runtime: checked JAX ref primitives and a runner (``python -m reflint.runtime``).

Importing this package changes nothing in JAX.  Checks are switched on with
:func:`install` / :func:`uninstall`, the :func:`checks` context manager, the
pytest fixture in :mod:`reflint.runtime.pytest_plugin`, or by running a script
with ``python -m reflint.runtime SCRIPT [ARGS...]`` (``reflint run``).

The primitives (:func:`new_ref`, :func:`empty_ref`, :func:`freeze`, :func:`get`,
:func:`swap`, :func:`set`, :func:`addupdate`) call the installed JAX's own and
always check, installed or not.
"""

from __future__ import annotations

from reflint.runtime._api import API_NAMES
from reflint.runtime._checks import (
    REGISTRY,
    addupdate,
    checks,
    empty_ref,
    freeze,
    get,
    install,
    is_installed,
    new_ref,
    ref_set,
    swap,
    uninstall,
)
from reflint.runtime._main import main
from reflint.runtime.errors import (
    ERROR_CLASSES,
    AccumulatedWithoutInit,
    InputRefWritten,
    ArrayItemAssignment,
    CustomVjpFwdForeignRef,
    DifferentiatedValueWrittenToRef,
    FreezeOutsideCreationScope,
    GradWithRespectToRef,
    KernelReturnsValue,
    MappedWriteToClosedOverRef,
    OutputRefRebound,
    RefViewPassedToTransform,
    RefWrittenInWhileCondAndBody,
    RedundantDonation,
    UnavailableJaxApi,
    RefClosedOverAndPassed,
    RefError,
    RefOfRef,
    RefPassedTwice,
    RefReturned,
    RefUsedAsArray,
    RematOfImpureFunction,
    TracedStateLeak,
    UseAfterFreeze,
    VjpOfRefWithoutWithRefs,
    translate,
)

set = ref_set  # noqa: A001 - mirrors jax.ref.set

#: The one place listing codes that ``reflint run`` cannot enforce (reliably) at run time,
#: with the reason.  Their fixtures are only checked to run (exit 0, or fail with one of
#: their expected codes when JAX happens to raise a translatable error).
NOT_ENFORCEABLE: dict[str, str] = {
    "REF012": "traced-state-leak is a property of where Python stores a traced value; it is "
              "seen at run time only if the leaked ref is used later (JAX's "
              "UnexpectedTracerError naming a Ref is translated), never at the leak itself.",
    "REF013": "item assignment on a jax.Array is a static hint: JAX's own TypeError (\"JAX "
              "arrays are immutable\") is translated when the line runs, but code that means "
              "a ref and builds an Array elsewhere is not detectable at run time.",
    "REF014": "donate_argnums on a ref argument is harmless and accepted by JAX unless the "
              "function also returns an Array (JAX >= 0.8 then fails at compile time, which "
              "is translated); the redundant-but-working case cannot be told apart at run "
              "time without rejecting valid programs.",
    "REF015": "unavailable-jax-api is about the JAX version the code targets, not the one "
              "installed: the installed JAX simply has the name or raises AttributeError.",
}

#: Codes whose check is added by reflint (JAX does not raise, or raises an internal error).
ADDED_BY_REFLINT: tuple[str, ...] = ("REF004", "REF005", "REF006", "REF007", "REF009", "REF010",
                                      "REF016")
#: Codes that JAX already raises clearly; reflint re-raises them as the matching RefError.
TRANSLATED_FROM_JAX: tuple[str, ...] = ("REF001", "REF002", "REF003", "REF005", "REF007",
                                        "REF008", "REF011", "REF016", "REF017", "REF020",
                                        "REF021")

__all__ = [
    "API_NAMES", "ADDED_BY_REFLINT", "ERROR_CLASSES", "NOT_ENFORCEABLE", "REGISTRY",
    "TRANSLATED_FROM_JAX", "addupdate", "checks", "empty_ref", "freeze", "get", "install",
    "is_installed", "main", "new_ref", "set", "swap", "translate", "uninstall",
    "RefError", "RefReturned", "RefPassedTwice", "RefClosedOverAndPassed",
    "FreezeOutsideCreationScope", "MappedWriteToClosedOverRef", "RematOfImpureFunction",
    "RefUsedAsArray", "DifferentiatedValueWrittenToRef", "RefOfRef", "UseAfterFreeze",
    "CustomVjpFwdForeignRef", "TracedStateLeak", "ArrayItemAssignment", "RedundantDonation",
    "UnavailableJaxApi", "GradWithRespectToRef", "VjpOfRefWithoutWithRefs",
    "KernelReturnsValue", "OutputRefRebound", "RefViewPassedToTransform",
    "RefWrittenInWhileCondAndBody", "AccumulatedWithoutInit", "InputRefWritten",
]
