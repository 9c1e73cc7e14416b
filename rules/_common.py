"""Small helpers shared by rules (wording, fixes). Analysis belongs in reflint.analysis."""

from __future__ import annotations

import functools

from reflint._lazy import lazy
from reflint import api
from reflint.rule import REF_TRIGGERS
from reflint.diagnostics import SAFE, Edit, Fix

cst = lazy("reflint.nodes")
_syntax = lazy("reflint.analysis.syntax")
_analysis = lazy("reflint.analysis")

# Text without which a module cannot contain a ref the analysis knows about (a constructor, a
# Ref annotation, NNX's to_refs, a Pallas kernel): the pre-filter trigger of every ref rule.
REF_EVIDENCE = REF_TRIGGERS

def role_word(kind) -> str:
    """The function a role (or an API name) traces, in messages: "a lax.scan body"."""
    return api.role_info(kind).word


def via(transforms) -> str:
    """" (when `transform` is jax.vmap)" for transforms applied as one of several callables
    picked at run time (the analysis' Choice), else ""."""
    for t in transforms or ():
        if getattr(t, "via", ""):
            return f" ({t.via})"
    return ""


def ref_name(analysis, expr, ref) -> str:
    if expr is not None:
        text = analysis.text_of(expr)
        if len(text) <= 40 and "\n" not in text:
            return text
    return ref.name or "the ref"


def where_from(analysis, ref) -> str:
    d = analysis.description(ref)
    return f" ({d})" if d else ""


@functools.cache
def _atomic() -> tuple:  # a function: libcst is imported on first use (reflint._lazy)
    return (cst.Name, cst.Attribute, cst.Subscript, cst.Call)


def _rpar_width(expr):
    """The width of ``expr``'s closing parentheses on its last line (None when one is on
    another line)."""
    width = 0
    for rp in expr.rpar:
        ws = rp.whitespace_before
        if not _syntax.is_whitespace(ws) or "\\" in ws.value or "\n" in ws.value:
            return None
        width += len(ws.value) + 1
    return width


def read_fix_factory(expr, applicability=SAFE):
    """A fix inserting the read ``[...]`` after ``expr`` (parenthesized where needed)."""

    def make(analysis):
        pos = analysis.position(expr)
        if pos is None:
            return None
        line, col, end_line, end_col = pos
        if isinstance(expr, _atomic()) and not expr.lpar:
            edits = (Edit(end_line, end_col, end_line, end_col, "[...]"),)
        elif expr.lpar and isinstance(expr, _atomic()):
            edits = (Edit(end_line, end_col, end_line, end_col, "[...]"),)
        elif expr.lpar:
            # `(a_ref if c else b_ref) * 2`: the read goes after the closing parenthesis (the
            # position excludes it), not onto the last operand inside.
            shift = _rpar_width(expr)
            if shift is None:
                edits = (Edit(line, col, line, col, "("),
                         Edit(end_line, end_col, end_line, end_col, ")[...]"))
            else:
                edits = (Edit(end_line, end_col + shift, end_line, end_col + shift, "[...]"),)
        else:
            edits = (Edit(line, col, line, col, "("),
                     Edit(end_line, end_col, end_line, end_col, ")[...]"))
        return Fix("Read the ref with [...]", edits, applicability)

    return make


def module_spelling(analysis, qualname: str, func=None):
    """How the module can spell ``qualname`` (e.g. ``jax.lax.stop_gradient``) with its own
    module-level imports: ``jax.lax.stop_gradient`` with ``import jax``,
    ``lax.stop_gradient`` with ``from jax import lax``... or None when no import binds a prefix
    (or the name is shadowed in ``func`` or an enclosing function)."""
    from reflint.values import QN

    module = analysis.module_info
    shadowed = set()
    f = func
    while f is not None and not f.is_module:
        shadowed |= set(f.summary)
        f = f.parent
    best = None
    for name, value in module.summary.items():
        if not isinstance(value, QN) or name in shadowed:
            continue
        prefix = value.qualname
        if qualname == prefix:
            candidate = name
        elif qualname.startswith(prefix + "."):
            candidate = name + qualname[len(prefix):]
        else:
            continue
        # Prefer the spelling through `jax` itself, then the shortest.
        rank = (0 if candidate == qualname else 1, len(candidate))
        if best is None or rank < best[0]:
            best = (rank, candidate)
    return best[1] if best else None


def parents_of(analysis) -> dict:
    """id(node) -> parent node for the whole module (the analysis' one syntax index)."""
    return analysis.syntax_index().parents


# -- Flax NNX (docs/flax-nnx.md) -------------------------------------------------------------

def nnx_words(analysis) -> dict:
    """How this file's Flax spells refs on/off and the conversions: flax 0.12's
    `var_defaults`/`with_vars`, or the seed's `use_refs`/`to_refs`/`to_arrays` when the file
    uses that API (both are recognized; messages speak the file's)."""
    def build() -> dict:
        seed = any(w in analysis.source for w in api.SEED_NNX_WORDS)
        if seed:
            return {"off": "with nnx.use_refs(False):", "to_refs": "nnx.to_refs({})",
                    "to_arrays": "nnx.to_arrays({})",
                    "ref_variable": "nnx.Variable(..., is_hijax=True)"}
        return {"off": "with nnx.var_defaults(ref=False):",
                "to_refs": "nnx.with_vars({}, ref=True)",
                "to_arrays": "nnx.with_vars({}, ref=False)",
                "ref_variable": "nnx.Variable(..., ref=True)"}

    return analysis.cached("nnx words", build)


def nnx_what(ref) -> str:
    """An NNX object holding refs, in messages."""
    return {"variable": "a Variable", "module": "an NNX module"}.get(ref.tree, "NNX state")


def nnx_root_name(ref) -> str:
    """The name of the NNX object a Variable was read from (`model` for `model.bias`)."""
    while ref.root is not None:
        ref = ref.root
    return ref.name or "the module"


def created_with_kind(analysis, ref, kinds) -> bool:
    """True when every constructor ``ref`` can come from is known and passes ``kind=`` one of
    ``kinds`` (a string constant)."""
    from reflint import nodes as cst

    created = analysis.creations_of(ref)
    if not created:
        return False
    for r in created:
        kind = r.kwargs.get("kind")
        if not (isinstance(kind, cst.SimpleString) and kind.evaluated_value in kinds):
            return False
    return True
