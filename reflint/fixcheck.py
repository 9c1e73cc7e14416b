"""Fix verification: every fix is checked by re-linting the text it produces.

A fix is applied only when, in the fixed text: the module parses; only the lines of its edits
changed (and the number of lines did not); the finding it fixes is gone; no new finding
appeared; and no other finding disappeared (a fix that makes the analysis lose track of a value
hides the findings after it, though the code still fails). Findings are compared per (code,
line): fixes never add or remove lines, so a line number names the same line before and after.

When the fixes of a pass fail together, each is tried alone: those that fail alone are not
applied (``FixOutcome.rejected`` says why), the others are applied together, or one at a time
when they only fail together.
"""

from __future__ import annotations

from collections import Counter
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .diagnostics import SAFE


def _engine():
    from . import engine

    return engine


def _counts(diags) -> Counter:
    return Counter((d.code, d.line) for d in diags)


def _lines(keys) -> str:
    lines = sorted({line for _, line in keys})
    word = "line" if len(lines) == 1 else "lines"
    return f"{word} {', '.join(map(str, lines))}"


def compare(before: list, after: list, fixed: list) -> Optional[str]:
    """Why the findings ``after`` a fix are wrong (None when right): ``before`` are the
    findings of the text the fix was made for, ``fixed`` those whose fixes were applied."""
    expected = _counts(before)
    expected.subtract(_counts(fixed))
    got = _counts(after)
    fixed_keys = set(_counts(fixed))
    kept = [k for k in fixed_keys if got[k] > expected[k]]
    if kept:
        code, line = sorted(kept, key=lambda k: (k[1], k[0]))[0]
        return f"the {code} finding on line {line} is still reported after the fix"
    new = {k for k in got if got[k] > expected[k]}
    if new:
        codes = sorted({c for c, _ in new})
        return f"it would add {'/'.join(codes)} on {_lines(new)}"
    hidden = {k for k in expected if expected[k] > got[k]}
    if hidden:
        codes = sorted({c for c, _ in hidden})
        return (f"it would hide {'/'.join(codes)} on {_lines(hidden)} (the code would still "
                f"fail there; fix those first)")
    return None


def _text_problem(before: str, after: str, applied: list) -> Optional[str]:
    engine = _engine()
    try:
        engine.cst.parse_module(after)
    except Exception as e:  # noqa: BLE001 - any failure means: do not write
        return f"it produces code that does not parse ({type(e).__name__})"
    edited = set()
    for fix in applied:
        for e in fix.edits:
            edited.update(range(e.line, e.end_line + 1))
    old_lines = engine._LINE_SPLIT.split(before)
    new_lines = engine._LINE_SPLIT.split(after)
    if len(old_lines) != len(new_lines):
        return "it changes the number of lines"
    for i, (a, b) in enumerate(zip(old_lines, new_lines), start=1):
        if a != b and i not in edited:
            return f"it changes line {i}, outside its edits"
    return None


def try_fixes(current: str, diags: list, chosen: list, path: str, settings):
    """Apply the fixes of ``chosen`` (diagnostics of ``current``): (text, applied
    diagnostics, findings of the text, problem or None)."""
    engine = _engine()
    candidate, applied = engine.apply_edits(current, [d.fix for d in chosen])
    applied_ids = {id(f) for f in applied}
    fixed = [d for d in chosen if id(d.fix) in applied_ids]
    problem = _text_problem(current, candidate, applied)
    if problem:
        return candidate, fixed, None, problem
    after = engine.lint_source(candidate, path, settings).diagnostics
    return candidate, fixed, after, compare(diags, after, fixed)


def _key(d) -> tuple:
    return (d.code, d.line, d.message, d.fix.message if d.fix else "")


def fix_verified(source: str, path: str, settings, max_passes: int = 8):
    engine = _engine()
    current = source
    total = 0
    rejected: list = []
    refused: set = set()
    diags = engine.lint_source(current, path, settings).diagnostics
    for _ in range(max_passes):
        todo = [d for d in diags if d.fix is not None and _key(d) not in refused and
                (d.fix.applicability == SAFE or settings.unsafe_fixes)]
        if not todo:
            break
        text, fixed, after, problem = try_fixes(current, diags, todo, path, settings)
        if problem is not None:
            good = []
            for d in todo:
                _, one, _, why = try_fixes(current, diags, [d], path, settings)
                if why is not None or not one:
                    refused.add(_key(d))
                    rejected.append(f"{d.code} fix on line {d.line} not applied: "
                                    f"{why or 'it does not apply'}")
                else:
                    good.append(d)
            if not good:
                break
            text, fixed, after, problem = try_fixes(current, diags, good, path, settings)
            if problem is not None:  # they only fail together: the first alone
                text, fixed, after, problem = try_fixes(current, diags, good[:1], path,
                                                        settings)
                if problem is not None:  # pragma: no cover - it passed alone above
                    break
        if not fixed:
            break
        current = text
        total += len(fixed)
        diags = after
    return engine.FixOutcome(current, total, diags, None, rejected)
