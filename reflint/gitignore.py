""".gitignore files, read as git (and ruff, ``respect-gitignore``) reads them, whether or not the
tree is a git repository.

The patterns of a ``.gitignore`` apply below its directory: blank lines and ``#`` comments are
skipped; ``!`` re-includes; a trailing ``/`` matches directories only; a pattern with a ``/``
at the start or in the middle is anchored to the file's directory, one without matches a name
at any depth; ``*``, ``?``, ``[...]`` and ``**`` are globs. The ``.gitignore`` files of the
directories above a checked path count up to the repository's root (a directory holding
``.git``); ``.git/info/exclude`` counts too. Not supported: the global excludes file
(``core.excludesFile``) and escapes with ``\\``.
"""

from __future__ import annotations

import os
import re

from .settings import _glob_regex

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional


class Rule:
    __slots__ = ("base", "regex", "negate", "dir_only", "anchored")

    def __init__(self, base: str, pattern: str):
        self.negate = pattern.startswith("!")
        if self.negate:
            pattern = pattern[1:]
        self.dir_only = pattern.endswith("/")
        pattern = pattern.rstrip("/")
        self.anchored = "/" in pattern
        pattern = pattern.lstrip("/")
        self.base = base
        self.regex = _glob_regex(pattern)

    def matches(self, path: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        rel = os.path.relpath(path, self.base).replace(os.sep, "/")
        if rel.startswith("../") or rel == "..":
            return False
        if self.anchored:
            return bool(self.regex.match(rel))
        return bool(self.regex.match(rel.rsplit("/", 1)[-1]))


def read_rules(directory: str, name: str = ".gitignore") -> list:
    path = os.path.join(directory, name)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    base = directory if name == ".gitignore" else os.path.dirname(os.path.dirname(directory))
    out = []
    for line in lines:
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("\\"):
            line = line[1:]
        try:
            out.append(Rule(base, line))
        except re.error:
            continue  # a pattern git would not match either
    return out


def ignored(rules: list, path: str, is_dir: bool) -> bool:
    """Whether the last rule that matches ``path`` ignores it."""
    verdict = False
    for r in rules:
        if r.matches(path, is_dir):
            verdict = not r.negate
    return verdict


def ancestor_rules(directory: str, stop: Optional[str] = None) -> list:
    """The rules of the ``.gitignore`` files above ``directory`` (not its own), outermost first,
    up to the repository root (a directory with ``.git``) or ``stop``; none when no such root
    is above."""
    d = os.path.abspath(directory)
    chain = []
    p = os.path.dirname(d)
    found_root = os.path.exists(os.path.join(d, ".git"))
    while not found_root:
        if p == os.path.dirname(p):
            break
        chain.append(p)
        if os.path.exists(os.path.join(p, ".git")) or (stop and os.path.abspath(stop) == p):
            found_root = True
            break
        p = os.path.dirname(p)
    if not found_root:
        return []
    rules = []
    root = chain[-1] if chain else d
    rules += read_rules(os.path.join(root, ".git", "info"), "exclude") \
        if os.path.isdir(os.path.join(root, ".git", "info")) else []
    for anc in reversed(chain):
        rules += read_rules(anc)
    return rules
