"""Path globs (``exclude``, ``extend-exclude``, ``per-file-ignores``), checked when read and
matched in linear time.

The syntax: ``*`` any run of characters but ``/``, ``?`` one character but ``/``, ``[abc]``,
``[a-z]``, ``[!abc]`` a character class, ``**/`` any number of whole directories (none
included), ``**`` elsewhere any run of characters, ``/`` included; everything else is itself.

A translation to a backtracking regex takes exponential time on patterns with many ``**/``
(``(?:.*/)?`` nested in sequence), so patterns are matched by simulating their automaton:
time proportional to the pattern's length times the path's, whatever both hold.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional


# Token kinds.
_LIT, _ONE, _CLASS, _STAR, _ANY, _DIRS = range(6)


class GlobError(ValueError):
    """A pattern that is not a valid glob; the message says why."""


def check(pattern) -> Optional[str]:
    """Why ``pattern`` is not a valid glob, or None when it is."""
    if not isinstance(pattern, str):
        return f"expected a string, got {pattern!r}"
    try:
        _tokens(pattern)
    except GlobError as e:
        return str(e)
    return None


def _tokens(pattern: str) -> list:
    out: list = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append((_DIRS, None))
            i += 3
        elif pattern.startswith("**", i):
            out.append((_ANY, None))
            i += 2
        elif c == "*":
            out.append((_STAR, None))
            i += 1
        elif c == "?":
            out.append((_ONE, None))
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j == -1:
                out.append((_LIT, c))  # an unclosed bracket is itself
                i += 1
                continue
            body = pattern[i + 1:j]
            negate = body.startswith("!")
            if negate:
                body = body[1:]
            if not body:
                raise GlobError(f"empty character class {pattern[i:j + 1]!r} in {pattern!r}")
            ranges = []
            k = 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    lo, hi = body[k], body[k + 2]
                    if lo > hi:
                        raise GlobError(f"bad character range {lo}-{hi} in {pattern!r}")
                    ranges.append((lo, hi))
                    k += 3
                else:
                    ranges.append((body[k], body[k]))
                    k += 1
            out.append((_CLASS, (negate, tuple(ranges))))
            i = j + 1
        else:
            out.append((_LIT, c))
            i += 1
    return out


class Glob:
    """A compiled glob: ``match(text)`` is whether the whole of ``text`` matches."""

    __slots__ = ("pattern", "_tokens", "_closure", "_literal")

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._tokens = _tokens(pattern)
        self._literal = pattern if all(k == _LIT for k, _ in self._tokens) else None
        # States: 2*i (before token i) and 2*i+1 (inside a `**/`, which must end with `/`).
        n = len(self._tokens)
        closure = []
        for i in range(n + 1):
            states = {2 * i}
            j = i
            while j < n and self._tokens[j][0] in (_STAR, _ANY, _DIRS):
                j += 1  # each of these may match nothing
                states.add(2 * j)
            closure.append(frozenset(states))
        self._closure = closure

    def match(self, text: str) -> bool:
        if self._literal is not None:
            return text == self._literal
        tokens, closure = self._tokens, self._closure
        n = len(tokens)
        current = set(closure[0])
        for ch in text:
            nxt: set = set()
            for s in current:
                i, inside = s >> 1, s & 1
                if inside:  # within `**/`: any character; a `/` may end it
                    nxt.add(s)
                    if ch == "/":
                        nxt |= closure[i + 1]
                    continue
                if i == n:
                    continue
                kind, arg = tokens[i]
                if kind == _LIT:
                    if ch == arg:
                        nxt |= closure[i + 1]
                elif kind == _ONE:
                    if ch != "/":
                        nxt |= closure[i + 1]
                elif kind == _CLASS:
                    negate, ranges = arg
                    if any(lo <= ch <= hi for lo, hi in ranges) != negate:
                        nxt |= closure[i + 1]
                elif kind == _STAR:
                    if ch != "/":
                        nxt.add(s)
                        nxt |= closure[i + 1]
                elif kind == _ANY:
                    nxt.add(s)
                    nxt |= closure[i + 1]
                else:  # _DIRS
                    nxt.add(s | 1)
                    if ch == "/":
                        nxt |= closure[i + 1]
            if not nxt:
                return False
            current = nxt
        return 2 * n in current


_CACHE: dict = {}


def compile_glob(pattern: str) -> Glob:
    """The compiled ``pattern`` (cached); raises GlobError for an invalid one."""
    g = _CACHE.get(pattern)
    if g is None:
        g = _CACHE[pattern] = Glob(pattern)
    return g
