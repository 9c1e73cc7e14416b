"""Keystrokes that cannot change the findings: the server reuses them instead of analysing.

reflint's findings are a function of the code's tokens and their positions, plus the
suppression comments (``# noqa``, ``# reflint: ...``, a coding declaration). An edit that
changes only the text of a comment, on one line, at bracket depth 0 (after the last token of
a line, or on a line of its own), leaves every other token where it was: the analysis would
return exactly what it returned before. Such an edit is recognised here in time linear in
the text (two string comparisons and a search within the line), against facts about each
line of the analysed text that a worker computed with ``tokenize`` next to the analysis
(``line_facts``).

Conservative on purpose: an edit is reused only when it stays on one line, leaves the line
count alone, touches no line a finding (its range, its fix's edits, where the ref was made)
is on, and neither the old nor the new line mentions ``noqa``, ``reflint``, ``coding`` or
``type:``. Anything else is analysed. tests/test_server_reuse.py compares the reused
diagnostics with ``reflint check`` on the edited text.
"""

from __future__ import annotations

import re
from typing import Optional

# Per line (0-based) of an analysed text: the column of a comment at bracket depth 0 that
# ends the line; NO_COMMENT: the line ends at depth 0 (NEWLINE, or NL outside brackets)
# without one; OTHER: anything else (inside a string or brackets, a backslash continuation).
NO_COMMENT = -1
OTHER = -2

# Comments reflint (or Python) reads: never reuse across a change to one of these.
_READ_COMMENTS = re.compile(r"noqa|reflint|coding|type\s*:", re.I)
_NEW_COMMENT = re.compile(r"[ \t]*#[^\r\n]*\Z")
_UNSAFE_CHARS = re.compile("[\x00\r\n\ud800-\udfff]")
# Findings whose message may quote the text of the line (a parse error's code frame).
_TEXTUAL = ("REF900", "REF903", "REF904")


def line_facts(text: str) -> Optional[list]:
    """The facts of each line (see NO_COMMENT/OTHER), or None if the text does not tokenize
    (then no edit of it is reused)."""
    import io
    import tokenize

    if "\r" in text or "\x00" in text:
        return None
    n = text.count("\n") + 1
    facts = [OTHER] * n
    depth = 0
    comment = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            tp = tok.type
            if tp == tokenize.OP:
                if tok.string in "([{":
                    depth += 1
                elif tok.string in ")]}":
                    depth = max(depth - 1, 0)
            elif tp == tokenize.COMMENT:
                if depth == 0:
                    comment[tok.start[0]] = tok.start[1]
            elif tp == tokenize.NEWLINE or (tp == tokenize.NL and depth == 0):
                line = tok.start[0]
                if 1 <= line <= n:
                    facts[line - 1] = comment.get(line, NO_COMMENT)
            elif tp == tokenize.ERRORTOKEN:
                return None
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return facts


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # slices compare at C speed: O(n log n) bytes, ~1 ms for 100 KB
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    lo, hi = 0, limit
    la, lb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid:] == b[lb - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def touched_lines(diags: list) -> set:
    """The 1-based lines a finding is on: its range, its fix's edits, its related place."""
    lines: set = set()
    for d in diags:
        lines.update(range(d.line, max(d.end_line or d.line, d.line) + 1))
        if d.related is not None:
            lines.add(d.related.line)
        if d.fix is not None:
            for e in d.fix.edits:
                lines.update(range(e.line, max(e.end_line or e.line, e.line) + 1))
    return lines


def reuse(old: str, facts: Optional[list], new: str, diags: list) -> Optional[list]:
    """The line facts of ``new`` if ``diags`` (the findings of ``old``, whose facts are
    ``facts``) are also the findings of ``new``, else None (analyse ``new``)."""
    if facts is None or old == new:
        return facts if old == new else None
    if any(d.code in _TEXTUAL for d in diags):
        return None
    p = _common_prefix(old, new)
    s = _common_suffix(old, new, min(len(old), len(new)) - p)
    removed, added = old[p:len(old) - s], new[p:len(new) - s]
    if "\n" in removed or _UNSAFE_CHARS.search(added) or "\r" in removed:
        return None
    line = old.count("\n", 0, p)  # 0-based
    if line >= len(facts):
        return None
    start = old.rfind("\n", 0, p) + 1
    old_end = old.find("\n", p)
    old_end = len(old) if old_end < 0 else old_end
    new_end = new.find("\n", p)
    new_end = len(new) if new_end < 0 else new_end
    old_line, new_line = old[start:old_end], new[start:new_end]
    if _READ_COMMENTS.search(old_line) or _READ_COMMENTS.search(new_line):
        return None
    col = p - start
    fact = facts[line]
    if fact >= 0 and fact < col:
        new_fact = fact  # inside a comment, after its '#': it stays a comment to the line end
    elif fact == NO_COMMENT and not removed and col == len(old_line) and \
            _NEW_COMMENT.match(added):
        new_fact = col + len(added) - len(added.lstrip(" \t"))  # a new trailing comment
    else:
        return None
    if line + 1 in touched_lines(diags):
        return None
    if new_fact == fact:
        return facts
    out = list(facts)
    out[line] = new_fact
    return out
