"""``reflint check --add-noqa``: a ``# noqa: CODE`` comment on each line with a finding (as
ruff's ``--add-noqa``), so that a code base can adopt reflint and fix its findings later.

The comment goes where a comment is allowed and where reflint reads it for that line: the end
of the line, or for a line inside a multi-line string or a backslash continuation, the end of
the last line of that token group (a ``# noqa`` there covers the whole group). Codes are added
to an existing ``# noqa:`` comment. Files keep their encoding and line endings; meta findings
(REF900, REF903, REF904) cannot be suppressed and are left. In a notebook the comment goes on
the cell line (reflint reads ``# noqa`` per cell line), the JSON keeping its formatting."""

from __future__ import annotations

import io
import re
import sys
import tokenize

from .engine import INTERNAL_ERROR, NOT_CHECKED, PARSE_ERROR

_NOQA_CODES = re.compile(r"#\s*noqa\s*:\s*([A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)", re.I)
_NOQA_BARE = re.compile(r"#\s*noqa\b(?!\s*:)", re.I)
_LINES = re.compile(r"(\r\n|\r|\n)")


def _group_ends(source: str) -> dict:
    """physical line -> the line whose end may hold its comment (same line when allowed)."""
    ends: dict = {}
    try:
        start = 1
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NL, tokenize.NEWLINE):
                end = tok.start[0]
                for ln in range(start, end + 1):
                    ends[ln] = end
                start = end + 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return ends


def add_to_source(source: str, codes_by_line: dict) -> tuple:
    """(new source, number of comments added or extended)."""
    ends = _group_ends(source)
    targets: dict = {}
    for line, codes in codes_by_line.items():
        targets.setdefault(ends.get(line, line), set()).update(codes)
    parts = _LINES.split(source)  # text, sep, text, sep, ...
    changed = 0
    for line, codes in targets.items():
        i = (line - 1) * 2
        if i >= len(parts):
            continue
        text = parts[i]
        if _NOQA_BARE.search(text):
            continue  # already suppresses everything
        m = _NOQA_CODES.search(text)
        if m:
            have = re.findall(r"[A-Za-z]+[0-9]+", m.group(1))
            new = [c for c in sorted(codes) if not any(c.startswith(h.upper()) for h in have)]
            if not new:
                continue
            text = text[:m.end(1)] + ", " + ", ".join(new) + text[m.end(1):]
        else:
            text = text.rstrip(" \t") + "  # noqa: " + ", ".join(sorted(codes))
        parts[i] = text
        changed += 1
    return "".join(parts), changed


def add_to_notebook(raw: str, codes_by_cell_line: dict) -> tuple:
    """(new notebook text, number of comments added or extended): ``codes_by_cell_line`` maps
    (code cell number, line in the cell) to codes."""
    from . import notebook

    nb = notebook.parse(raw)
    program_line = {where: n for n, where in enumerate(nb.where, start=1)}
    lines: dict = {}
    for where, codes in codes_by_cell_line.items():
        n = program_line.get(where)
        if n is not None and n not in nb.neutralised:
            lines.setdefault(n, set()).update(codes)
    new, changed = add_to_source(nb.program, lines)
    if not changed:
        return raw, 0
    return notebook.write_back(nb, new), changed


def add_noqa(results: list, all_diags: list, roots) -> int:
    from . import notebook
    from .cli import EXIT_ERROR, EXIT_OK, _write_fixed

    by_path: dict = {}
    for d in all_diags:
        if d.code in (PARSE_ERROR, INTERNAL_ERROR, NOT_CHECKED):
            continue
        key = (d.cell, d.line) if notebook.is_notebook(d.path) and getattr(d, "cell", 0) \
            else d.line
        by_path.setdefault(d.path, {}).setdefault(key, set()).add(d.code)
    total = 0
    status = EXIT_OK
    for res in results:
        lines = by_path.get(res.path)
        if not lines or res.source is None:
            continue
        if notebook.is_notebook(res.path):
            try:
                new, n = add_to_notebook(res.source, lines)
            except notebook.NotebookError as e:
                print(f"{res.path}: {e}: noqa comments not added", file=sys.stderr)
                continue
        else:
            new, n = add_to_source(res.source, lines)
        if not n:
            continue
        problem = _write_fixed(res.path, new, roots)
        if problem:
            print(f"{res.path}: {problem}", file=sys.stderr)
            status = EXIT_ERROR
            continue
        total += n
    print(f"Added {total} noqa directive{'s' if total != 1 else ''}.", file=sys.stderr)
    if any(d.code == INTERNAL_ERROR for d in all_diags):
        return EXIT_ERROR
    return status
