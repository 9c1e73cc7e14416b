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

from ._record import replace

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


_NAME_CHARS = re.compile(r"[A-Za-z0-9_ ]*\Z")


def edited_facts(old: str, facts: Optional[list], new: str) -> Optional[list]:
    """The line facts of ``new`` from those of ``old`` (``facts``, which tokenized) without
    tokenizing it, for the usual keystroke in code: an edit within one line that adds or
    removes only ASCII letters, digits, ``_`` and spaces after the line's indentation, not
    next to a quote (a string's prefix); the caller knows that ``new`` parses. Such an edit
    moves no bracket, string, comment start or line end: only the column of a comment later
    on the same line. None for any other edit (``line_facts`` then)."""
    if facts is None or "\r" in new or "\x00" in new:
        return None
    p = _common_prefix(old, new)
    s = _common_suffix(old, new, min(len(old), len(new)) - p)
    removed, added = old[p:len(old) - s], new[p:len(new) - s]
    if not (removed or added) or not _NAME_CHARS.match(removed) or \
            not _NAME_CHARS.match(added):
        return None
    if new[p - 1:p] in ("'", '"') or new[p + len(added):p + len(added) + 1] in ("'", '"') or \
            old[p + len(removed):p + len(removed) + 1] in ("'", '"'):
        return None
    line = old.count("\n", 0, p)
    if line >= len(facts):
        return None
    start = old.rfind("\n", 0, p) + 1
    end = old.find("\n", p)
    old_line = old[start:len(old) if end < 0 else end]
    indent = len(old_line) - len(old_line.lstrip(" \t"))
    if p - start <= indent or indent == len(old_line):
        return None  # in the indentation (or a blank line): it may change the blocks
    fact = facts[line]
    if fact < 0 or p - start > fact:
        return facts  # no comment on the line, or the edit is inside it
    out = list(facts)
    out[line] = fact + len(added) - len(removed)
    return out


def touched_lines(diags: list) -> set:
    """The 1-based lines a finding is on: its range, its fix's edits, its related place."""
    lines: set = set()
    for d in diags:
        lines.update(range(d.line, max(d.end_line or d.line, d.line) + 1))
        if d.related is not None:
            lines.add(d.related.line)
        if d.fix is not None and getattr(d.fix, "resolved", True):
            for e in d.fix.edits:
                lines.update(range(e.line, max(e.end_line or e.line, e.line) + 1))
    return lines


def unbuilt_fixes(diags: list) -> list:
    """``diags`` for another text with the same findings: a fix whose edits were not built
    yet gets a copy of its own (built from that text when a code action asks for it), so
    that the findings of the two texts share no fix that could be built from the wrong
    one. (A built fix is kept: ``reuse`` checked that the edit touches none of its lines.)"""
    out = []
    for d in diags:
        fix = d.fix
        if fix is not None and not getattr(fix, "resolved", True):
            d = replace(d, fix=fix.unbuilt())
        out.append(d)
    return out


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


# -- notebooks opened as JSON text ----------------------------------------------------------

def _source_tokens(text: str) -> dict:
    """Cell index (in the notebook's ``cells``) -> offsets of the JSON string tokens of its
    ``source`` (one string, or a list of them), found by scanning the JSON text."""
    from json.decoder import scanstring

    ws = re.compile(r"[ \t\n\r]*")
    literal = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")
    out: dict = {}
    stack = []  # (kind, path, index) of the open containers

    def value(i, path):
        """Scan one value at ``i`` (iteratively for containers); the offset after it."""
        i = ws.match(text, i).end()
        c = text[i]
        if c == '"':
            if len(path) == 3 and path[0] == "cells" and path[2] == "source" or \
                    len(path) == 4 and path[0] == "cells" and path[2] == "source":
                out.setdefault(path[1], []).append(i)
            return scanstring(text, i + 1)[1]
        if c in "{[":
            stack.append((c, path, 0))
            return i + 1
        m = literal.match(text, i)
        if m is None:
            raise ValueError(f"unexpected {c!r} at {i}")
        return m.end()

    i = value(0, ())
    while stack:
        i = ws.match(text, i).end()
        kind, path, n = stack[-1]
        c = text[i]
        if c in "}]":
            stack.pop()
            i += 1
            continue
        if n:
            if c != ",":
                raise ValueError(f"expected ',' at {i}")
            i = ws.match(text, i + 1).end()
        stack[-1] = (kind, path, n + 1)
        if kind == "{":
            key, i = scanstring(text, i + 1)
            i = ws.match(text, i).end()
            if text[i] != ":":
                raise ValueError(f"expected ':' at {i}")
            i = value(i + 1, path + (key,))
        else:
            i = value(i, path + (n,))
    return out


def _token_offsets(text: str, start: int) -> list:
    """Raw offsets in ``text`` of each character the JSON string token at ``start`` decodes
    to (an escape's first character), and the offset of its closing quote last."""
    out = []
    i = start + 1
    while text[i] != '"':
        out.append(i)
        if text[i] == "\\":
            if text[i + 1] == "u":
                high = int(text[i + 2:i + 6], 16)
                i += 6
                if 0xD800 <= high < 0xDC00 and text[i:i + 2] == "\\u":
                    i += 6  # a surrogate pair: one character
            else:
                i += 2
        else:
            i += 1
    out.append(i)
    return out


class JsonCells:
    """Positions of a notebook's code cells in its JSON text (an ``.ipynb`` opened as text):
    ``where(cell, line, column)`` (cell: the code cell's number, 1-based; line and column in
    the cell, 1-based) -> (line, column) in the JSON text, 1-based."""

    def __init__(self, text: str, nb):
        self.text = text
        self.nb = nb
        self.tokens = _source_tokens(text)
        self._offsets: dict = {}
        self._line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def _cell_offsets(self, number: int) -> list:
        if number not in self._offsets:
            index = self.nb.cells[number - 1]
            offsets: list = []
            for start in self.tokens.get(index, []):
                offsets.extend(_token_offsets(self.text, start)[:-1])
            toks = self.tokens.get(index, [])
            if toks:
                offsets.append(_token_offsets(self.text, toks[-1])[-1])
            self._offsets[number] = offsets
        return self._offsets[number]

    def where(self, cell: int, line: int, column: int) -> tuple:
        import bisect

        offsets = self._cell_offsets(cell) if 1 <= cell <= len(self.nb.cells) else []
        if not offsets:
            return 1, 1
        source = self.nb.sources[cell - 1]
        lines = source.split("\n")
        k = min(max(line, 1), len(lines))
        at = sum(len(s) + 1 for s in lines[:k - 1]) + max(column - 1, 0)
        raw = offsets[min(at, len(offsets) - 1)]
        n = bisect.bisect_right(self._line_starts, raw) - 1
        return n + 1, raw - self._line_starts[n] + 1
