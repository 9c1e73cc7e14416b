"""Jupyter notebooks (``.ipynb``): the code cells linted as one program, in order.

A notebook is a script run cell by cell (a later cell reads and rebinds the names of the
earlier ones), so its code cells are joined, in order, into one module and linted as such.
IPython syntax is neutralised first, line for line (a line stays a line, so positions map
back): a line magic or shell escape (``%time f(x)``, ``!pip install jax``, ``x = !ls``,
``f?``) becomes ``pass`` (or ``x = None``) with its indentation, and a cell magic's cell
(``%%timeit``) becomes comment lines. Findings are reported as cell and line (``cell 3:2:5``;
code cells counted from 1, as ruff and Jupyter's execution order do), ``# noqa`` works per cell
line, and fixes (which never add or remove lines) are written back into the cells, the JSON
keeping its indentation, key order, ASCII escaping and trailing newline.
"""

from __future__ import annotations

import json
import re
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from ._record import field, record, replace
from .discovery import NOTEBOOK_SUFFIX as SUFFIX, is_notebook  # noqa: F401 - re-exported

_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?:%|!|\?)")
_ASSIGN_MAGIC = re.compile(r"^(?P<head>[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*)[%!]")
_HELP = re.compile(r"^(?P<indent>[ \t]*)[\w.]+\?{1,2}[ \t]*$")


class NotebookError(ValueError):
    """Not a notebook reflint can read (reported as REF900)."""


@record
class Notebook:
    """A Jupyter notebook's code cells, joined into one program for the analysis."""

    raw: str  # the file's text
    data: dict  # the parsed JSON
    cells: list  # indices (in data["cells"]) of the code cells, in order
    sources: list  # each code cell's source text
    program: str = ""  # the code cells joined, IPython syntax neutralised
    # program line (1-based) -> (code cell number, 1-based; line in the cell, 1-based)
    where: list = field(default_factory=list)
    neutralised: dict = field(default_factory=dict)  # program line -> original line text


def _cell_text(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        return "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def _is_python(data: dict) -> bool:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    lang = (meta.get("language_info") or {}).get("name") if isinstance(
        meta.get("language_info"), dict) else None
    kernel = (meta.get("kernelspec") or {}).get("language") if isinstance(
        meta.get("kernelspec"), dict) else None
    name = lang or kernel
    return name is None or str(name).lower() in ("python", "python3", "ipython")


def parse(text: str) -> Notebook:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise NotebookError(f"not a valid notebook: invalid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a valid notebook: no \"cells\" list (nbformat 4)")
    cells, sources = [], []
    if _is_python(data):
        for i, cell in enumerate(data["cells"]):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                cells.append(i)
                sources.append(_cell_text(cell))
    nb = Notebook(text, data, cells, sources)
    _join(nb)
    return nb


def _neutral(line: str) -> Optional[str]:
    """The line with its IPython syntax replaced by plain Python of the same shape, or None
    when it is plain Python."""
    m = _ASSIGN_MAGIC.match(line)
    if m:
        return m.group("head") + "None"
    m = _LINE_MAGIC.match(line)
    if m:
        return m.group("indent") + "pass"
    m = _HELP.match(line)
    if m:
        return m.group("indent") + "pass"
    return None


def _join(nb: Notebook) -> None:
    out = []
    for number, src in enumerate(nb.sources, start=1):
        lines = src.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        cell_magic = bool(lines) and lines[0].lstrip().startswith("%%")
        for k, line in enumerate(lines, start=1):
            line = line.rstrip("\r")
            new = "#" if cell_magic else _neutral(line)
            if new is not None and new != line:
                nb.neutralised[len(out) + 1] = line
                line = new
            out.append(line)
            nb.where.append((number, k))
    nb.program = "\n".join(out) + ("\n" if out else "")


def to_cell(nb: Notebook, line: int) -> tuple:
    """(cell, line in cell) of a program line (clamped to the notebook)."""
    if not nb.where:
        return 1, 1
    return nb.where[max(0, min(line, len(nb.where)) - 1)]


def map_diagnostics(nb: Notebook, diags: list) -> list:
    """Diagnostics on the program, re-expressed as cell and line (``Diagnostic.cell``)."""
    out = []
    for d in diags:
        if getattr(d, "cell", 0):
            out.append(d)
            continue
        cell, line = to_cell(nb, d.line)
        end_line = d.end_line
        if d.end_line:
            end_cell, end_in_cell = to_cell(nb, d.end_line)
            end_line = end_in_cell if end_cell == cell else line
        related = d.related
        if related is not None:
            rc, rl = to_cell(nb, related.line)
            msg = related.message if rc == cell else \
                f"{related.message} (cell {rc})".strip()
            related = replace(related, line=rl, message=msg)
        fix = d.fix
        if fix is not None:
            edits = []
            for e in fix.edits:
                (_, el), (_, eel) = to_cell(nb, e.line), to_cell(nb, e.end_line)
                edits.append(replace(e, line=el, end_line=eel))
            fix = replace(fix, edits=tuple(edits))
        out.append(replace(d, line=line, end_line=end_line, cell=cell, related=related,
                           fix=fix, message=_lines_in_text(nb, d.message, cell)))
    return out


def _lines_in_text(nb: Notebook, text: str, cell: int) -> str:
    """``created on line 7`` -> ``created on line 3`` (same cell) or ``on cell 1, line 4``."""
    if "line " not in text:
        return text

    def one(m) -> str:
        n = int(m.group(2))
        if not 1 <= n <= len(nb.where):
            return m.group(0)
        c, ln = to_cell(nb, n)
        if c == cell:
            return f"{m.group(1) or ''}line {ln}"
        return f"{'in ' if m.group(1) else ''}cell {c}, line {ln}"

    return re.sub(r"\b(on )?line (\d+)", one, text)


def cell_sources(nb: Notebook) -> dict:
    """cell number -> its source (for code frames)."""
    return {i: s for i, s in enumerate(nb.sources, start=1)}


def lint(data: bytes, path: str, settings):
    """A FileResult for a notebook's bytes: findings as cell and line; ``source`` is the
    joined program (the fixes apply to it), ``cells`` the sources for code frames."""
    from .engine import FileResult, lint_source, parse_error

    try:
        text = data.decode("utf-8-sig")
        nb = parse(text)
    except (UnicodeDecodeError, NotebookError) as e:
        msg = str(e) if isinstance(e, NotebookError) else f"not UTF-8: {e}"
        diags = [parse_error(path, msg)] if settings.enabled("REF900") else []
        return FileResult(path, diags)
    if not nb.program.strip():
        return FileResult(path, [])
    res = lint_source(nb.program, path, settings)
    return FileResult(path, map_diagnostics(nb, res.diagnostics), None, skipped=res.skipped)


def write_back(nb: Notebook, program: str) -> str:
    """The notebook's text with the code cells taken from ``program`` (the fixed program:
    same lines, neutralised lines restored), formatted as the original."""
    lines = program.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(nb.where):
        raise NotebookError("the fixed program does not have the notebook's lines")
    per_cell: dict = {}
    for n, (line, (cell, _)) in enumerate(zip(lines, nb.where), start=1):
        per_cell.setdefault(cell, []).append(nb.neutralised.get(n, line))
    data = nb.data
    for number, index in enumerate(nb.cells, start=1):
        old = nb.sources[number - 1]
        new_lines = per_cell.get(number, [])
        new = "\n".join(new_lines)
        if old.endswith("\n"):
            new += "\n"
        if "\r\n" in old:
            new = new.replace("\n", "\r\n")
        if new == old:
            continue
        cell = data["cells"][index]
        if isinstance(cell.get("source"), list):
            cell["source"] = new.splitlines(True)
        else:
            cell["source"] = new
    return dumps_like(data, nb.raw)


def dumps_like(data: dict, raw: str) -> str:
    """``data`` as JSON formatted like ``raw``: its indentation, its escaping of non-ASCII
    text, and its trailing newline (json keeps the key order it read)."""
    m = re.search(r"\n([ \t]+)\S", raw)
    indent = m.group(1) if m else None
    if indent is not None and set(indent) == {" "}:
        indent = len(indent)
    ensure_ascii = raw.isascii() and "\\u" in raw
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    if indent is None and m is None and raw.strip() and "\n" not in raw.strip():
        text = json.dumps(data, ensure_ascii=ensure_ascii,
                          separators=(",", ":") if '": ' not in raw else (", ", ": "))
    trailing = raw[len(raw.rstrip("\r\n")):]
    return text + trailing


def cell_note(nb, note: str) -> str:
    """A fix note's program lines as cells and lines (``line 7`` -> ``cell 2, line 3``)."""
    if nb is None:
        return note

    def one(n: str) -> str:
        cell, line = to_cell(nb, int(n))
        return f"cell {cell}, line {line}"

    def many(m) -> str:
        return "; ".join(one(n) for n in re.findall(r"\d+", m.group(1)))

    note = re.sub(r"\blines ((?:\d+, )*\d+)", many, note)
    return re.sub(r"\bline (\d+)", lambda m: one(m.group(1)), note)


def fix(data: bytes, path: str, settings):
    """(new notebook text or None when nothing was fixed, FixOutcome on the program, the
    parsed Notebook or None)."""
    from .engine import fix_source

    try:
        nb = parse(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, NotebookError):
        return None, None, None
    if not nb.program.strip():
        return None, None, nb
    outcome = fix_source(nb.program, path, settings)
    outcome.remaining = map_diagnostics(nb, outcome.remaining)
    if outcome.error or not outcome.fixed:
        return None, outcome, nb
    return write_back(nb, outcome.source), outcome, nb
