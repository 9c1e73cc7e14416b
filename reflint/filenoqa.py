"""File-level suppressions: ``# reflint: noqa: REF007`` (or flake8's spelling,
``# flake8: noqa: REF007``) on a line of its own suppresses those codes in the whole file, as
ruff reads ``# ruff: noqa: F401``; without codes (``# reflint: noqa``) it suppresses every
code. (``# reflint: skip-file`` skips the file without analysing it.)"""

from __future__ import annotations

import re

_FILE_NOQA = re.compile(
    r"^[ \t]*#[ \t]*(?:reflint|flake8)[ \t]*:[ \t]*noqa"
    r"(?:[ \t]*:[ \t]*(?P<codes>[A-Z]+[0-9]+(?:[ \t,]+[A-Z]+[0-9]+)*))?[ \t,]*$",
    re.M | re.I)


def suppressed_codes(source: str):
    """None when nothing is suppressed file-wide, "ALL" for a bare directive, else the set
    of codes (prefixes included, as in line noqa)."""
    if "noqa" not in source.lower():
        return None
    codes: set = set()
    for m in _FILE_NOQA.finditer(source):
        if m.group("codes") is None:
            return "ALL"
        codes.update(c.upper() for c in re.findall(r"[A-Za-z]+[0-9]+", m.group("codes")))
    return codes or None


def apply(diags: list, source: str) -> list:
    from .engine import INTERNAL_ERROR, NOT_CHECKED, PARSE_ERROR

    codes = suppressed_codes(source) if diags else None
    if not codes:
        return diags
    keep = (PARSE_ERROR, INTERNAL_ERROR, NOT_CHECKED)
    if codes == "ALL":
        return [d for d in diags if d.code in keep]
    return [d for d in diags if d.code in keep or
            not any(d.code == c or d.code.startswith(c) for c in codes)]
