from __future__ import annotations

import re

from reflint._lazy import lazy
from reflint import api
from reflint.rule import Finding, Rule
from reflint.values import QN

from ._common import parents_of

cst = lazy("reflint.nodes")
_analysis = lazy("reflint.analysis")

_COMPAT_TEST = re.compile(r"hasattr|getattr|version|__version__|_version")


class UnavailableJaxApi(Rule):
    """A Ref API name that does not exist (or is deprecated) in the target JAX version.

    ## What it does
    Checks every Ref-related JAX name the module uses — imported (`from jax import freeze`) or
    spelled out (`jax.new_ref`, `jax.ref.array_ref`) — and the `kind=` / `memory_space=`
    keywords of the ref constructor against the JAX version given by `--target-jax-version`
    (default 0.10.2). Names are reported when they do not exist in that version, or are
    deprecated there. Annotations count where Python evaluates them (a parameter's, a class
    field's, a module variable's, unless the module has `from __future__ import annotations`).
    Uses guarded by `try:` or by an `if` that tests `hasattr`, `getattr` or
    a version are treated as deliberate compatibility code and skipped.

    ## Why is this bad?
    The Ref API was renamed while it was experimental: `jax.array_ref` / `jax.ArrayRef` (0.7.1)
    became `jax.new_ref` / `jax.Ref` (0.7.2) and were removed in 0.9.0; `jax.freeze` appeared in
    0.8.0 (`jax.ref.freeze` works everywhere); `jax.empty_ref`, `jax.free_ref` and
    `new_ref(kind=...)` exist only from 0.10. Code written against one version fails with
    `AttributeError`, `ImportError` or `TypeError` on another — an error that says nothing about
    versions.

    ## Example
    ```python
    import jax

    counter = jax.array_ref(0.0)
    counter[...] += 1.0
    ```

    ## Use instead
    ```python
    import jax

    counter = jax.new_ref(0.0)
    counter[...] += 1.0
    ```

    ## Known limits
    The version data covers the versions reflint measured (0.7.1, 0.7.2, 0.8.0, 0.9.0,
    0.10.2); for a target between two of them, a name is reported only when both agree. Names
    reached through `getattr` or strings are not checked, and neither are the Ref methods
    (`vjp_fn.with_refs` from 0.9.0).

    ## JAX versions
    `jax.new_ref`, `jax.Ref`: 0.7.2+. `jax.freeze`: 0.8.0+. `jax.empty_ref`, `jax.free_ref`,
    `jax.ad`, `new_ref(kind=)`: 0.10.2. `new_ref(memory_space=)`: 0.7.2+. `jax.array_ref`,
    `jax.ArrayRef`, `jax.experimental.mutable_array`: up to 0.8.0 (deprecated there).
    `jax.ref.freeze`, `jax.ref.get/set/swap/addupdate`: every version.

    ## Runtime message
    `AttributeError: module 'jax' has no attribute 'array_ref'` (or `ImportError: cannot import
    name ...` for `from jax import ...`); `TypeError: array_ref() got an unexpected keyword
    argument 'kind'`; deprecated names print a `DeprecationWarning`.
    """

    code = "REF015"
    name = "unavailable-jax-api"
    # The last component of every name the availability table knows (`from jax import ad`).
    triggers = r"\b(?:" + "|".join(api.availability_names()) + r")\b"

    def check(self, analysis):
        version = analysis.settings.target_jax_version
        target = ".".join(map(str, version))
        parents = None
        # Cheap first: the walk below runs only if a name missing at `version` is in the text
        # and the gate (reflint.gate), when it ran, saw such a name used.
        gate = analysis.gate_verdict
        if (gate is None or gate.unavailable) and \
                api.spells_problem_name(analysis.source or "", version):
            parents = parents_of(analysis)
            for node, qualname in _names(analysis, parents):
                status, where = api.availability(qualname, version)
                if status not in (api.NO, api.DEPRECATED) or \
                        _guarded(analysis, parents, node):
                    continue
                yield Finding(node, _message(qualname, status, where, target))
        for creation in analysis.creations:
            for arg in creation.node.args:
                if arg.keyword is None:
                    continue
                status, where = api.kwarg_availability(creation.api_name, arg.keyword.value,
                                                       version)
                if status != api.NO:
                    continue
                if parents is None:
                    parents = parents_of(analysis)
                if _guarded(analysis, parents, creation.node):
                    continue
                fn = analysis.text_of(creation.node.func)
                yield Finding(arg, f"{fn}(..., {arg.keyword.value}=...) is not accepted by JAX "
                                   f"{target} (the keyword exists in JAX {where}); it fails "
                                   f"with TypeError: unexpected keyword argument "
                                   f"'{arg.keyword.value}'")


def _message(qualname, status, where, target) -> str:
    instead = api.REPLACEMENTS.get(qualname)
    hint = f"; use {instead}" if instead else ""
    if status == api.DEPRECATED:
        return (f"{qualname} is deprecated in JAX {target} (it exists in JAX {where}) and is "
                f"removed in later versions{hint}")
    return (f"{qualname} does not exist in JAX {target}, the target version (it exists in JAX "
            f"{where}): this line fails with AttributeError or ImportError{hint}")


def _names(analysis, parents):
    """(node, qualified name) of every maximal dotted JAX name and imported name."""
    stack = [analysis.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Attribute) and _analysis.dotted_name(node) is not None:
            parent = parents.get(id(node))
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                v = analysis.value_of(node)
                if v is None and _evaluated_annotation(analysis, parents, node):
                    # `x: jax.ArrayRef` runs when the def or class statement does.
                    v = analysis.static_value(node)
                if isinstance(v, QN):
                    q = _known_prefix(v.qualname)
                    if q is not None:
                        yield node, q
            continue  # the chain's inner parts are prefixes, not names of their own
        if isinstance(node, cst.ImportFrom) and not node.relative and \
                not isinstance(node.names, cst.ImportStar) and node.module is not None:
            module = _analysis.dotted_name(node.module)
            if module is not None:
                q = _known_prefix(module)
                if q is not None:
                    yield node.module, q
                else:
                    for alias in node.names:
                        name = _analysis.dotted_name(alias.name)
                        q = _known_prefix(f"{module}.{name}") if name else None
                        if q is not None:
                            yield alias, q
            continue
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = _analysis.dotted_name(alias.name)
                q = _known_prefix(name) if name else None
                if q is not None:
                    yield alias, q
            continue
        stack.extend(reversed(_analysis.child_nodes(node)))


def _evaluated_annotation(analysis, parents, node) -> bool:
    """``node`` is inside an annotation that Python evaluates (no `from __future__ import
    annotations` in the module)."""
    if "annotations" in analysis.cached("future_imports", lambda: _future_imports(analysis)):
        return False
    cur = parents.get(id(node))
    while cur is not None and not isinstance(cur, cst.Annotation):
        if isinstance(cur, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda)):
            return False
        cur = parents.get(id(cur))
    if cur is None:
        return False
    holder = parents.get(id(cur))
    if isinstance(holder, cst.AnnAssign):  # a variable's: evaluated outside function bodies
        cur = parents.get(id(holder))
        while cur is not None and not isinstance(cur, cst.Module):
            if isinstance(cur, cst.FunctionDef):
                return False
            cur = parents.get(id(cur))
    return True


def _future_imports(analysis) -> set:
    out = set()
    for stmt in analysis.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and small.module is not None and \
                        _analysis.dotted_name(small.module) == "__future__" and \
                        not isinstance(small.names, cst.ImportStar):
                    out.update(a.name.value for a in small.names
                               if isinstance(a.name, cst.Name))
    return out


def _known_prefix(qualname: str):
    parts = qualname.split(".")
    for i in range(len(parts), 0, -1):
        q = ".".join(parts[:i])
        if q in api.AVAILABILITY:
            return q
    return None


def _guarded(analysis, parents, node) -> bool:
    """Inside `try:` (with handlers) or under an `if`/ternary that tests hasattr/version."""
    child = node
    cur = parents.get(id(node))
    while cur is not None:
        if isinstance(cur, (cst.Try, getattr(cst, "TryStar", cst.Try))) and \
                child is cur.body and cur.handlers:
            return True
        if isinstance(cur, (cst.If, cst.IfExp)) and child is not cur.test:
            if _COMPAT_TEST.search(analysis.text_of(cur.test)):
                return True
        if isinstance(cur, cst.BooleanOperation) and child is cur.right and \
                _COMPAT_TEST.search(analysis.text_of(cur.left)):
            return True
        child, cur = cur, parents.get(id(cur))
    return False

