"""Stable rule codes and names: a public interface (docs, noqa comments, CI configs)."""

CODES: dict[str, str] = {
    "REF001": "ref-returned",
    "REF002": "ref-passed-twice",
    "REF003": "ref-closed-over-and-passed",
    "REF004": "freeze-outside-creation-scope",
    "REF005": "mapped-write-to-closed-over-ref",
    "REF006": "remat-of-impure-function",
    "REF007": "ref-used-as-array",
    "REF008": "differentiated-value-written-to-ref",
    "REF009": "ref-of-ref",
    "REF010": "use-after-freeze",
    "REF011": "custom-vjp-fwd-foreign-ref",
    "REF012": "traced-state-leak",
    "REF013": "array-item-assignment",
    "REF014": "redundant-donation",
    "REF015": "unavailable-jax-api",
    "REF016": "grad-with-respect-to-ref",
    "REF017": "vjp-of-ref-without-with-refs",
    "REF018": "kernel-returns-value",
    "REF019": "output-ref-rebound",
    "REF020": "ref-view-passed-to-transform",
    "REF021": "ref-written-in-while-cond-and-body",
    "REF028": "accumulated-without-init",
    "REF029": "input-ref-written",
    "REF900": "parse-error",
    "REF901": "unknown-noqa-code",
    "REF902": "unused-noqa",
    "REF903": "internal-error",
    "REF904": "not-checked",
}

# Codes not produced by a rule module: reported by the engine itself.
META_CODES = frozenset({"REF900", "REF901", "REF902", "REF903", "REF904"})

# Codes that always report, whatever the selection: reflint's own failure on a file and a file
# it did not check (docs/guarantees.md). `# noqa` cannot hide them either (they are reported
# at line 1 for the whole file).
ALWAYS_CODES = frozenset({"REF903", "REF904"})

# Codes that are off unless named exactly (`--extend-select REF902`, `--report-unused-noqa`):
# prefixes and ALL do not select them.
OPT_IN_CODES = frozenset({"REF902"})
