from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import QN

from ._common import REF_EVIDENCE, parents_of

cst = lazy("reflint.nodes")

# Attributes that only describe the ref: harmless after freeze.
METADATA_ATTRIBUTES = frozenset({
    "shape", "dtype", "ndim", "size", "sharding", "aval", "weak_type", "memory_space", "kind",
    "format", "itemsize", "nbytes",
})
# Builtins that only look at the object.
HARMLESS_BUILTINS = frozenset({"len", "isinstance", "type", "id", "hasattr", "callable", "repr"})
METHOD_READS: frozenset = frozenset()
METHOD_WRITES = frozenset({"addupdate"})

VERBS = {"read": "read", "write": "written", "freeze": "frozen again", "pass": "passed on",
         "free": "freed"}


class UseAfterFreeze(Rule):
    """A Ref is used, frozen or freed again after `jax.freeze(ref)` or `jax.free_ref(ref)`.

    ## What it does
    Reports, in the function (or module) that calls `jax.freeze(ref)` or `jax.free_ref(ref)`,
    any later read (`ref[...]`, `jax.ref.get`), write (`ref[...] = v`, `+=`,
    `jax.ref.set/swap/addupdate`), second `freeze` or `free_ref` (a double free), or passing of
    the same ref to a call, on every path after it.
    Rebinding the name to a new ref ends the frozen state; a freeze on only one branch of an
    `if` does not start it. Metadata such as `ref.shape` and `ref.dtype` stays allowed.

    ## Why is this bad?
    `jax.freeze` turns a ref into an immutable Array and ends the ref's life: the docs say the
    ref must not be used afterwards. Inside `jit` or a control-flow body the ref really is gone
    and JAX fails with an error that does not mention freeze. At top level JAX does not check at
    all: reads see the ref's buffer, writes change the ref but not the frozen array, so the
    program silently computes with two diverging copies.

    ## Example
    ```python
    import jax

    @jax.jit
    def f(x):
        r = jax.new_ref(x)
        y = jax.freeze(r)
        return y + r[...]

    f(1.0)
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def f(x):
        r = jax.new_ref(x)
        y = jax.freeze(r)
        return y + y

    f(1.0)
    ```
    Finish every read and write before the freeze, and use the frozen Array afterwards.

    ## Known limits
    Only uses in the same function as the freeze are followed, in statement order (loops are
    not unrolled, so a freeze at the end of a loop body and a use at its start are missed).
    A use through another name bound before the freeze (`alias = r`) is followed; a use
    through a container or an object attribute is not.

    ## JAX versions
    `jax.free_ref` (0.10.2 on) behaves like `freeze` here (measured on 0.10.2 and 0.12.0.1):
    inside `jit`, a read after it fails with ``ValueError: `get` must be called on `Ref`
    types``, a write too on 0.10.2 (0.12 accepts it silently), a second `free_ref` or a
    `freeze` with `KeyError: <id>`; at top level nothing is checked.
    Top level: no error at run time in any version (0.7.1–0.12.0.1). Inside `jit` or a
    `lax.scan` body, for a ref created there: every version fails (`get`/`swap` must be called
    on `Ref` types; a second freeze fails with `KeyError: <id>`). For a ref that is a `jit`
    argument (see REF004): up to 0.9 the freeze itself fails with `IndexError`; 0.10.2 accepts
    the later read or write silently.

    ## Runtime message
    Inside jit: ``ValueError: `get` must be called on `Ref` types: ~float32[].`` (read) or
    ``ValueError: `swap` must be called on `Ref` types: ~float32[].`` (write). At top level: no
    error at run time.
    """

    code = "REF010"
    name = "use-after-freeze"
    triggers = REF_EVIDENCE

    def check(self, analysis):
        if not analysis.after_freeze:
            return
        parents = parents_of(analysis)
        version = analysis.settings.target_jax_version
        seen = set()
        for event in analysis.after_freeze:
            if id(event.node) in seen:
                continue
            seen.add(id(event.node))
            got = _classify(analysis, parents, event.node)
            if got is None:
                continue
            kind, node = got
            name = event.node.value if isinstance(event.node, cst.Name) else "the ref"
            freeze_line = analysis.line_of(event.freeze_node)
            freed = _callee(analysis, event.freeze_node) == api.FREE_REF
            call = analysis.text_of(event.freeze_node)
            if len(call) > 40 or "\n" in call:
                call = "free_ref" if freed else "freeze"
            at = f" on line {freeze_line}" if freeze_line else ""
            verb = VERBS[kind]
            if freed and kind in ("free", "freeze"):
                verb = "freed again (a double free)" if kind == "free" else "frozen"
            elif kind == "free":
                verb = "freed"
            ended = "freed" if freed else "frozen"
            msg = (f"{name} is {verb} after {call}{at}; a {ended} ref must not be used "
                   f"again — ")
            if kind == "read":
                msg += ("read it before freeing it" if freed else
                        "use the Array that freeze returned")
            elif kind == "freeze" and not freed:
                msg += "reuse the Array from the first freeze"
            elif kind in ("free", "freeze"):
                msg += "end the ref once"
            else:
                msg += "do the work before freezing, or keep using the ref and freeze later"
            msg += ". " + _runtime(analysis, event, kind, version)
            yield Finding(node, msg, related_node=event.freeze_node,
                          related_message="frozen here")


def _callee(analysis, call) -> str | None:
    """The canonical API name of the function ``call`` calls, if it is one."""
    fv = analysis.value_of(call.func) if isinstance(call, cst.Call) else None
    return api.canonical(fv.qualname) if isinstance(fv, QN) else None


def _runtime(analysis, event, kind, version) -> str:
    ref = event.ref
    if not analysis.is_traced(event.func):
        return {
            "read": "At top level JAX does not raise: the read sees the ref's buffer, not the "
                    "frozen Array",
            "write": "At top level JAX does not raise: the write changes the ref but not the "
                     "frozen Array, and the two silently diverge",
            "freeze": "At top level JAX does not raise and returns another copy",
            "pass": "At top level JAX does not raise: the callee gets a ref that should be dead",
            "free": "At top level JAX does not raise",
        }[kind]
    if ref.origin == "param" and ref.scope is event.func:
        if version >= (0, 10, 0):
            return ("Inside a traced function JAX 0.10 accepts this silently when the ref is an "
                    "argument, so the frozen value and the ref diverge")
        return ("Inside a traced function, freezing a ref argument already fails on this JAX "
                "version (IndexError: list index out of range)")
    if kind == "write" and version >= (0, 12):
        return ("Inside a traced function JAX 0.12 accepts the write silently: the ref changes "
                "but the frozen Array does not, and the two diverge")
    return {
        "read": "Inside a traced function JAX raises ValueError: `get` must be called on `Ref` "
                "types",
        "write": "Inside a traced function JAX raises ValueError: `swap` (or `get`) must be "
                 "called on `Ref` types",
        "freeze": "Inside a traced function JAX raises KeyError: <object id>",
        "free": "Inside a traced function JAX raises KeyError: <object id>",
        "pass": "Inside a traced function JAX raises ValueError: `get` must be called on `Ref` "
                "types when the callee reads it",
    }[kind]


def _classify(analysis, parents, name_node):
    """(kind, node to report) of a use of a frozen ref's name, or None when harmless/unclear."""
    parent = parents.get(id(name_node))
    if isinstance(parent, cst.Attribute) and parent.value is name_node:
        attr = parent.attr.value
        if attr in METADATA_ATTRIBUTES:
            return None
        grand = parents.get(id(parent))
        if attr == "at" and isinstance(grand, cst.Subscript) and grand.value is parent:
            return _subscript_kind(parents, grand)
        if isinstance(grand, cst.Call) and grand.func is parent:
            if attr in METHOD_READS:
                return "read", grand
            if attr in METHOD_WRITES:
                return "write", grand
        return None
    if isinstance(parent, cst.Subscript) and parent.value is name_node:
        return _subscript_kind(parents, parent)
    if isinstance(parent, cst.Arg) and parent.value is name_node:
        call = parents.get(id(parent))
        if not isinstance(call, cst.Call):
            return None
        fv = analysis.value_of(call.func)
        qn = fv.qualname if isinstance(fv, QN) else None
        kind = api.canonical(qn)
        first = next((a for a in call.args if a.keyword is None and not a.star), None)
        if kind == api.FREEZE:
            return ("freeze", call) if first is parent else None
        if kind == api.FREE_REF:
            return ("free", call) if first is parent else None
        if kind == api.REF_GET:
            return ("read", call) if first is parent else None
        if kind in api.REF_WRITERS:
            return ("write", call) if first is parent else None
        if qn is not None:
            short = qn.rsplit(".", 1)[-1]
            if qn.startswith("builtins.") and short in HARMLESS_BUILTINS:
                return None
            if short in api.ARRAY_FUNCTION_EXEMPT:
                return None
        return "pass", name_node
    return None


def _subscript_kind(parents, sub):
    holder = parents.get(id(sub))
    if isinstance(holder, cst.AssignTarget) and holder.target is sub:
        return "write", sub
    if isinstance(holder, (cst.AugAssign, cst.AnnAssign)) and holder.target is sub:
        return "write", sub
    if isinstance(holder, cst.Del):
        return None
    return "read", sub

