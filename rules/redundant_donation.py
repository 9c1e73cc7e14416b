from __future__ import annotations

from reflint._lazy import lazy
from reflint import api
from reflint.diagnostics import SAFE, UNSAFE, Edit, Fix
from reflint.rule import REF_TRIGGERS, Finding, Rule
from reflint.values import FuncVal, RefVal

cst = lazy("reflint.nodes")
_syntax = lazy("reflint.analysis.syntax")


class RedundantDonation(Rule):
    """`donate_argnums` / `donate_argnames` names a parameter that receives a Ref.

    ## What it does
    Reports `jax.jit` donation (`donate_argnums=`, `donate_argnames=`, in the decorator, the
    call form or `functools.partial(jax.jit, ...)`) that covers a parameter receiving a Ref: a
    parameter annotated `jax.Ref`, or one that a call in the module passes a Ref.

    ## Why is this bad?
    A Ref passed to a jitted function is always donated: JAX updates its buffer in place. Donating
    it again is redundant at best. JAX warns `Some donated buffers were not usable`, and from
    JAX 0.8 compilation fails when the function also returns an array, because the ref's buffer
    is already aliased with an output.

    ## Example
    ```python
    import jax
    import jax.numpy as jnp


    def step(x_ref):
        x_ref[...] += 1.0
        return x_ref[...] * 2.0


    f = jax.jit(step, donate_argnums=0)
    x_ref = jax.new_ref(jnp.arange(3.0))
    f(x_ref)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp


    def step(x_ref):
        x_ref[...] += 1.0
        return x_ref[...] * 2.0


    f = jax.jit(step)
    x_ref = jax.new_ref(jnp.arange(3.0))
    f(x_ref)
    ```

    ## Fix safety
    The fix removes the ref parameter from the donation: `donate_argnums=0` is deleted,
    `donate_argnums=(0, 1)` becomes `(1,)`, and likewise for names. It is safe when every call
    in the module passes a Ref there (or the parameter is annotated `jax.Ref`): a Ref is donated
    anyway. It is unsafe when some call passes something else (an array that was meant to be
    donated). Donations written as variables or expressions get no fix. The finding is reported
    on the `donate_argnums=` / `donate_argnames=` keyword argument.

    ## Known limits
    Only `jax.jit` is checked, and only calls in the same module: a function jitted here and
    called with a Ref from another module is not reported unless its parameter is annotated
    `jax.Ref`. Refs inside a donated pytree (a tuple holding a Ref and arrays) are not reported:
    the other leaves may be meant to be donated.

    ## JAX versions
    JAX 0.7.x: the donation is ignored (warning only). From 0.8.0 through 0.10.2, a jitted
    function that returns an array fails to compile; one that returns nothing only warns.

    ## Runtime message
    `UserWarning: Some donated buffers were not usable: float32[3].` and, from 0.8.0 when the
    function returns an array, `JaxRuntimeError: INVALID_ARGUMENT: Parameter 0 index {} is
    already aliased with one output, thus it cannot be added as a buffer donor for any output.`
    """

    code = "REF014"
    name = "redundant-donation"
    fixable = SAFE
    triggers = ("donate_arg", REF_TRIGGERS)

    def check(self, analysis):
        for info in analysis.all_functions():
            for role in info.roles.values():
                t = role.transform
                if t is None or not any(k in t.kwargs for k in api.API[t.kind].donation):
                    continue
                offset = _offset(analysis, info, role)
                if offset is None:
                    continue
                calls = [c for c in analysis.traced_calls
                         if any(x is t for x in c.transforms) and id(info) in c.bindings]
                pos_params = [p for p in info.params if p.kind in ("pos", "posonly")]
                for kw in api.API[t.kind].donation:
                    if kw not in t.kwargs:
                        continue
                    value = t.kwargs[kw]
                    items = _items(value, int if kw == "donate_argnums" else str)
                    if items is None:
                        continue
                    hits = []
                    all_safe = True
                    for expr, key in items:
                        if isinstance(key, int):
                            i = offset + key
                            p = pos_params[i] if 0 <= key and i < len(pos_params) else None
                        else:
                            p = info.param(key)
                        if p is None:
                            continue
                        verdict = _receives_ref(analysis, p, info, calls)
                        if verdict is None:
                            continue
                        hits.append((expr, p))
                        all_safe = all_safe and verdict
                    if not hits:
                        continue
                    arg = _find_arg(t.node, kw, value)
                    names = ", ".join(f"`{p.name}`" for _, p in hits)
                    plural = "s" if len(hits) > 1 else ""
                    old = analysis.settings.target_jax_version < (0, 8, 0)
                    consequence = ("JAX warns 'Some donated buffers were not usable' and "
                                   "ignores it" if old else
                                   "JAX warns 'Some donated buffers were not usable', and "
                                   "compilation fails ('already aliased with one output') "
                                   "when the function also returns an array")
                    msg = (f"`{kw}` donates parameter{plural} {names} of `{info.name}`, which "
                           f"receive{'' if plural else 's'} a Ref; Refs are always donated, so "
                           f"this is redundant: {consequence}. Remove "
                           f"{'them' if plural else 'it'} from the donation")
                    fix = None
                    if arg is not None:
                        fix = _fix_factory(t.node, arg, items, [e for e, _ in hits],
                                           SAFE if all_safe else UNSAFE)
                    yield Finding(arg if arg is not None else value, msg, fix=fix)


def _offset(analysis, info, role):
    """How many leading positional parameters the jitted callable does not expose."""
    node = info.node
    if isinstance(node, cst.FunctionDef) and any(d.decorator is role.node
                                                 for d in node.decorators):
        return 0
    if not isinstance(role.node, cst.Call):
        return None
    first = next((a for a in role.node.args if a.keyword is None and not a.star), None)
    if first is None:
        return None
    fv = analysis.value_of(first.value)
    if not isinstance(fv, FuncVal) or fv.info is not info or fv.bound_kwargs:
        return None
    return len(fv.bound_args) + (1 if fv.self_value is not None else 0)


def _items(value, kind):
    """[(element expr, constant)] of an int/str or a tuple/list of them; None otherwise."""
    elements = [value]
    if isinstance(value, (cst.Tuple, cst.List)):
        elements = [e.value for e in value.elements]
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            return None
    out = []
    for e in elements:
        if kind is int and isinstance(e, cst.Integer):
            try:
                out.append((e, int(e.value, 0)))
            except ValueError:
                return None
        elif kind is str and isinstance(e, cst.SimpleString):
            try:
                out.append((e, e.evaluated_value))
            except Exception:  # noqa: BLE001 - odd literal: no finding
                return None
        else:
            return None
    return out


def _receives_ref(analysis, p, info, calls):
    """True: the parameter is a Ref everywhere we can see; False: at some call only;
    None: never."""
    qn = p.annotation_qn
    if qn and api.canonical(qn) == api.REF_TYPE:
        return True
    some = every = False
    every = bool(calls)
    for c in calls:
        b = c.bindings[id(info)].get(p.name)
        if b is not None and isinstance(b.value, RefVal):
            some = True
        else:
            every = False
    if not some:
        return None
    return every


def _find_arg(node, kw, value):
    if not isinstance(node, cst.Call):
        return None
    for a in node.args:
        if a.keyword is not None and a.keyword.value == kw and a.value is value:
            return a
    return None


def _fix_factory(call, arg, items, removed, applicability):
    def make(analysis):
        value = arg.value
        keep = [e for e, _ in items if not any(e is r for r in removed)]
        if keep:
            vpos = analysis.position(value)
            if vpos is None or vpos[0] != vpos[2]:
                return None
            code = analysis.module.code_for_node
            texts = [code(e).strip() for e in keep]
            if isinstance(value, cst.List):
                new = "[" + ", ".join(texts) + "]"
            else:
                new = ", ".join(texts) + ("," if len(texts) == 1 else "")
                if not value.lpar:
                    new = f"({new})"
            return Fix(f"Remove the Ref parameter from `{arg.keyword.value}`",
                       (Edit(vpos[0], vpos[1], vpos[2], vpos[3], new),), applicability)
        edits = _remove_arg_edits(analysis, call, arg)
        if edits is None:
            return None
        return Fix(f"Remove `{arg.keyword.value}=` (Refs are always donated)", edits,
                   applicability)

    make.layout = True  # _remove_arg_edits reads the commas (reflint.rule.to_diagnostic)
    return make


def _remove_arg_edits(analysis, call, arg):
    args = list(call.args)
    k = next(i for i, a in enumerate(args) if a is arg)
    apos = analysis.position(arg)
    if apos is None or apos[0] != apos[2]:
        return None
    if len(args) == 1:
        # `jax.jit(donate_argnums=0)` -> `jax.jit`
        cpos = analysis.position(call)
        fpos = analysis.position(call.func)
        if cpos is None or fpos is None or cpos[0] != cpos[2]:
            return None
        return (Edit(fpos[2], fpos[3], cpos[2], cpos[3], ""),)
    comma = arg.comma
    if isinstance(comma, cst.Comma):
        cpos = analysis.position(comma)
        if cpos is None:
            return None
        end_col = cpos[3]
        if cpos[2] == apos[0] and _syntax.is_whitespace(comma.whitespace_after):
            end_col += len(comma.whitespace_after.value)
            if k == len(args) - 1:
                end_col = cpos[3]  # keep the space before `)` as it was
        if cpos[2] != apos[0]:
            return None
        start_col = apos[1]
        line_text = analysis.module.code.splitlines()[apos[0] - 1] if apos[0] >= 1 else ""
        if not line_text[:apos[1] - 1].strip() and \
                _syntax.is_whitespace(comma.whitespace_after, "ParenthesizedWhitespace"):
            start_col = 1  # the argument has its own line: leave no indentation behind
        return (Edit(apos[0], start_col, cpos[2], end_col, ""),)
    prev = args[k - 1]
    if not isinstance(prev.comma, cst.Comma):
        return None
    ppos = analysis.position(prev.comma)
    if ppos is None:
        return None
    if ppos[0] == apos[0]:
        return (Edit(ppos[0], ppos[1], apos[2], apos[3], ""),)
    return (Edit(ppos[0], ppos[1], ppos[2], ppos[3], ""),
            Edit(apos[0], apos[1], apos[2], apos[3], ""))
