"""Test parameterization: the values a decorator (``api.TEST_CASE_DECORATORS``) binds to the
parameters of the test function it decorates, one per test case (``values.CaseVal``).

Only literal displays are read: a case list, a case or a value the analysis cannot see in the
decorator's text (a name, a comprehension, ``*cases``) leaves the decorator's parameters
unknown. A parameter bound by two decorators is unknown too.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Callable, Optional

from .. import nodes as cst

from .. import api
from ..values import MAX_ALTERNATIVES

# A case: (label, positional expressions, keyword name -> expression).
_Case = tuple


def decorator_cases(decorators, params, is_method: bool,
                    qualname_of: Callable[[cst.BaseExpression], Optional[str]]) -> dict:
    """Parameter name -> ((label, expression), ...) for the parameters that the test
    parameterization ``decorators`` of a function bind (``params``: its ``Param`` list;
    ``qualname_of``: the canonical qualified name an expression names, or None)."""
    out: dict = {}
    dropped: set = set()
    for d in decorators:
        call = d.decorator
        if type(call) is not cst.Call:
            continue
        form = api.TEST_CASE_DECORATORS.get(qualname_of(call.func) or "")
        if form is None:
            continue
        if form == "product":
            bound = _product_values(call, params, qualname_of)
        else:
            cases = _parametrize_cases(call, qualname_of) if form == "parametrize" else \
                _absl_cases(call, form == "named_parameters", qualname_of)
            bound = _bind_cases(cases, params, is_method, by_position=form != "parametrize") \
                if cases else None
        if bound is None:
            return {}  # which parameters it binds is unknown
        for name, alts in bound.items():
            if name in out or name in dropped:
                out.pop(name, None)
                dropped.add(name)
            elif alts is not None and len(alts) <= MAX_ALTERNATIVES:
                out[name] = alts
            else:
                dropped.add(name)
    return out


def _bind_cases(cases, params, is_method: bool, by_position: bool) -> Optional[dict]:
    """Name -> alternatives (None: not known for every case) from the cases, or None when a
    case cannot be bound to the parameters (too many positional values, an unknown keyword)."""
    positional = [p for p in params if p.kind in ("pos", "posonly")]
    if is_method and positional:
        positional = positional[1:]  # self
    by_name = {p.name: p for p in params if p.kind in ("pos", "kwonly")}
    per_case = []
    for label, args, kwargs in cases:
        if args and not by_position or len(args) > len(positional):
            return None
        binding = {p.name: a for p, a in zip(positional, args)}
        for k, v in kwargs.items():
            if k not in by_name or k in binding:
                return None
            binding[k] = v
        per_case.append((label, binding))
    names = {n for _, b in per_case for n in b}
    out: dict = {}
    for name in names:
        alts = []
        for label, binding in per_case:
            expr = binding.get(name)
            if expr is None:
                p = by_name.get(name)
                expr = p.node.default if p is not None else None
            if expr is None:
                alts = None
                break
            alts.append((label, expr))
        out[name] = tuple(alts) if alts is not None else None
    return out


def _elements(expr) -> Optional[list]:
    """The elements of a tuple or list display (None with a starred element or another
    expression)."""
    if type(expr) not in (cst.Tuple, cst.List):
        return None
    if any(type(e) is cst.StarredElement for e in expr.elements):
        return None
    return [e.value for e in expr.elements]


def _string(expr) -> Optional[str]:
    if type(expr) in (cst.SimpleString, cst.ConcatenatedString):
        try:
            value = expr.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


def _keywords(expr, qualname_of) -> Optional[dict]:
    """A dict display with string keys or ``dict(a=..., b=...)``: keyword name -> expression."""
    if type(expr) is cst.Dict:
        out = {}
        for e in expr.elements:
            key = _string(e.key) if type(e) is cst.DictElement else None
            if key is None:
                return None
            out[key] = e.value
        return out
    if type(expr) is cst.Call and qualname_of(expr.func) == "builtins.dict":
        if any(a.star or a.keyword is None for a in expr.args):
            return None
        return {a.keyword.value: a.value for a in expr.args}
    return None


def _single_value(expr) -> bool:
    """A literal absl takes for one argument (not unpacked: no iterable but a string)."""
    t = type(expr)
    if t in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
             cst.FormattedString):
        return True
    if t is cst.Name:
        return expr.value in ("None", "True", "False")
    if t is cst.UnaryOperation:
        return type(expr.expression) in (cst.Integer, cst.Float, cst.Imaginary)
    return False


def _absl_cases(call, named: bool, qualname_of) -> Optional[list]:
    """The cases of ``parameterized.parameters(...)`` / ``named_parameters(...)``."""
    if any(a.star or a.keyword is not None for a in call.args):
        return None
    args = [a.value for a in call.args]
    if len(args) == 1 and type(args[0]) is not cst.Tuple and \
            _keywords(args[0], qualname_of) is None:
        args = _elements(args[0]) if type(args[0]) is cst.List else None  # the list of cases
        if args is None:
            return None
    cases = []
    for expr in args:
        kwargs = _keywords(expr, qualname_of)
        if kwargs is not None:
            label = ""
            if named:
                label = _string(kwargs.pop(api.TEST_CASE_NAME_KEY, None))
                if label is None:
                    return None
            cases.append((label, (), kwargs))
            continue
        values = _elements(expr)
        if values is None:
            if named or not _single_value(expr):
                return None
            values = [expr]
        label = ""
        if named:
            label = _string(values[0]) if values else None
            if label is None:
                return None
            values = values[1:]
        cases.append((label, tuple(values), {}))
    return cases or None


def _product_values(call, params, qualname_of) -> Optional[dict]:
    """Name -> alternatives of ``parameterized.product(...)``: every value of each list runs
    (in some combination with the others' values); None when one is not a display."""
    by_name = {p.name for p in params if p.kind in ("pos", "kwonly")}
    out: dict = {}
    for a in call.args:
        if a.star:
            return None
        values = _elements(a.value)
        if not values:
            return None
        if a.keyword is not None:
            rows = [{a.keyword.value: v} for v in values]
        else:
            rows = [_keywords(v, qualname_of) for v in values]
            if any(r is None or r.keys() != rows[0].keys() for r in rows):
                return None
        for row in rows:
            for k, v in row.items():
                if k not in by_name:
                    return None
                out.setdefault(k, []).append(("", v))
    return {k: tuple(v) for k, v in out.items()} or None


def _parametrize_cases(call, qualname_of) -> Optional[list]:
    """The cases of ``pytest.mark.parametrize(argnames, argvalues, ...)``."""
    if any(a.star for a in call.args):
        return None
    pos = [a.value for a in call.args if a.keyword is None]
    kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    names_expr = pos[0] if pos else kw.get("argnames")
    values_expr = pos[1] if len(pos) > 1 else kw.get("argvalues")
    indirect = pos[2] if len(pos) > 2 else kw.get("indirect")
    if indirect is not None and not (type(indirect) is cst.Name and indirect.value == "False"):
        return None  # the values go to fixtures
    text = _string(names_expr) if names_expr is not None else None
    if text is not None:
        names = [n.strip() for n in text.split(",") if n.strip()]
    else:
        elements = _elements(names_expr) if names_expr is not None else None
        names = [_string(e) for e in elements] if elements is not None else []
    if not names or any(n is None or not n.isidentifier() for n in names):
        return None
    values = _elements(values_expr) if values_expr is not None else None
    if not values:
        return None
    ids = _elements(kw["ids"]) if "ids" in kw else None
    labels = [_string(e) or "" for e in ids] if ids is not None and len(ids) == len(values) \
        else [""] * len(values)
    cases = []
    for label, expr in zip(labels, values):
        if type(expr) is cst.Call and qualname_of(expr.func) == api.TEST_CASE_PARAM:
            if any(a.star for a in expr.args):
                return None
            row = [a.value for a in expr.args if a.keyword is None]
            for a in expr.args:
                if a.keyword is not None and a.keyword.value == "id":
                    label = _string(a.value) or label
        elif len(names) == 1:
            row = [expr]
        else:
            row = _elements(expr)
        if row is None or len(row) != len(names):
            return None
        cases.append((label, (), dict(zip(names, row))))
    return cases
