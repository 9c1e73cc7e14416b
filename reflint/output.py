"""Output formats: pure functions of a list of diagnostics."""

from __future__ import annotations

import os
import sys

from ._lazy import lazy, lazy_re
from .diagnostics import SAFE

json = lazy("json")  # imported when a JSON report is written


def use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


_LINES = lazy_re(r"\r\n|\r|\n")
# Characters a terminal acts on: C0 controls but tab, DEL, C1 controls, and the bidirectional
# overrides and isolates ("Trojan source"). Text outputs show each as one visible character
# (a control picture, or U+FFFD), so a file, a path or a cached message cannot move the
# cursor, recolour or reorder the output, and code-frame carets stay aligned.
_CONTROLS = lazy_re("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _picture(m) -> str:
    c = ord(m.group(0))
    if c < 0x20:
        return chr(0x2400 + c)
    return "\u2421" if c == 0x7F else "\ufffd"


def printable(text: str) -> str:
    """``text`` with every control character replaced by one visible character."""
    return _CONTROLS.sub(_picture, text) if _CONTROLS.search(text) else text
# Code frames show at most this many characters of a line, around the reported column.
FRAME_WIDTH = 160


def _frame(text: str, column: int, width: int) -> tuple:
    """(shown text, caret column, caret width) for a code frame of ``text``: the whole line
    when short, else a window around ``column`` marked with ``...``."""
    if len(text) <= FRAME_WIDTH:
        return text, column, width
    start = max(0, column - 1 - FRAME_WIDTH // 3)
    end = start + FRAME_WIDTH
    shown = text[start:end]
    lead = "..." if start else ""
    tail = "..." if end < len(text) else ""
    caret_col = column - start + len(lead)
    width = max(1, min(width, len(shown) - (column - 1 - start)))
    return lead + shown + tail, caret_col, width


def _cell(d) -> str:
    """``cell 3:`` for a finding in a notebook's code cell 3, else nothing (as ruff)."""
    cell = getattr(d, "cell", 0)
    return f"cell {cell}:" if cell else ""


def _cells(text: str) -> list:
    """The display width of each character of ``text`` (a tab kept as a tab: 0 here)."""
    import unicodedata

    out = []
    for ch in text:
        if ch == "\t":
            out.append(0)
        elif unicodedata.combining(ch):
            out.append(0)
        elif unicodedata.east_asian_width(ch) in ("W", "F"):
            out.append(2)
        else:
            out.append(1)
    return out


def _caret(text: str, start: int, end: int) -> str:
    """Carets under ``text[start:end]`` (0-based), aligned as a terminal shows the line: a tab
    in the text is a tab under it, a wide character (CJK, most emoji) takes two columns."""
    widths = _cells(text)
    lead = "".join("\t" if ch == "\t" else " " * w for ch, w in zip(text[:start],
                                                                     widths[:start]))
    span = sum(max(1, w) if ch != "\t" else 4 for ch, w in zip(text[start:end],
                                                               widths[start:end]))
    return lead + "^" * max(1, span)


# A multi-line span shows at most this many lines (the first ones and the last).
SPAN_LINES = 5


def _fix_preview(d, lines: list) -> list:
    """``--show-fixes``: the lines a fix changes, before and after (when its edits are on the
    shown lines)."""
    edits = d.fix.edits
    first = min(e.line for e in edits)
    last = max(e.end_line for e in edits)
    if first < 1 or last > len(lines) or last - first > SPAN_LINES:
        return []
    old = lines[first - 1:last]
    text = "\n".join(old)
    starts = [0]
    for ln in old[:-1]:
        starts.append(starts[-1] + len(ln) + 1)
    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        a = starts[e.line - first] + e.column - 1
        b = starts[e.end_line - first] + e.end_column - 1
        text = text[:a] + e.content + text[b:]
    out = []
    for n, ln in enumerate(old, start=first):
        out.append(f"  {n:>4} - {ln}")
    for n, ln in enumerate(text.split("\n"), start=first):
        out.append(f"  {n:>4} + {ln}")
    return out


def format_text(diags, sources: dict, color: bool = False, unsafe_fixes: bool = False,
                show_fixes: bool = False) -> str:
    out = []
    lines_of: dict = {}  # path -> the source's lines (split once per file)
    for d in diags:
        head = (f"{_c(printable(d.path), '1', color)}:{_cell(d)}{d.line}:{d.column}: "
                f"{_c(printable(d.code), '1;31', color)} {printable(d.message)}")
        out.append(head)
        src = sources.get(d.path)
        key = d.path
        if isinstance(src, dict):  # a notebook: its cells by number
            src = src.get(d.cell)
            key = (d.path, d.cell)
        lines = None
        if src is not None:
            lines = lines_of.get(key)
            if lines is None:
                # Lines as Python counts them (str.splitlines also splits at form feeds).
                lines = lines_of[key] = src.split("\n") if "\r" not in src else \
                    _LINES.split(src)
            if 0 < d.line <= len(lines):
                last = d.end_line if d.end_line and d.line < d.end_line <= len(lines) \
                    else d.line
                shown = list(range(d.line, last + 1))
                if len(shown) > SPAN_LINES:
                    shown = shown[:SPAN_LINES - 2] + [0] + shown[-1:]
                for n in shown:
                    if n == 0:
                        out.append("   ... |")
                        continue
                    text = lines[n - 1]
                    a = d.column - 1 if n == d.line else len(text) - len(text.lstrip())
                    b = (d.end_column - 1) if n == last and d.end_line else len(text)
                    if n == d.line and n == last and not d.end_line:
                        b = len(text)
                    b = max(a + 1, min(b, len(text))) if text else a + 1
                    shown_text, column, width = _frame(text, a + 1, b - a)
                    out.append(f"  {n:>4} | {printable(shown_text)}")
                    start = column - 1
                    caret = _caret(shown_text, start, start + max(1, width))
                    out.append(f"       | {_c(caret, '31', color)}")
        if d.fix is not None:
            if d.fix.applicability == SAFE:
                out.append(f"  = help: {printable(d.fix.message)} (fixable with --fix)")
            else:
                out.append(f"  = help: {printable(d.fix.message)} (unsafe fix: --fix "
                           f"--unsafe-fixes)")
            if show_fixes and lines is not None:
                out.extend(_fix_preview(d, lines))
        out.append("")
    return "\n".join(out)


def format_concise(diags) -> str:
    return "\n".join(f"{printable(d.path)}:{_cell(d)}{d.line}:{d.column}: "
                     f"{printable(d.code)} {printable(d.message)}" for d in diags) + \
        ("\n" if diags else "")


def format_json(diags) -> str:
    return json.dumps([d.to_json() for d in diags], indent=2) + "\n"


def summary_line(n_diags: int, n_files: int, n_fixable: int,
                 n_with: "int | None" = None) -> str:
    """The last line of the text output: ``n_files`` checked, ``n_with`` of them with
    findings (default: all of them)."""
    if n_diags == 0:
        return f"All checks passed ({n_files} file{'s' if n_files != 1 else ''} checked)."
    n_with = n_files if n_with is None else n_with
    s = f"Found {n_diags} error{'s' if n_diags != 1 else ''} in {n_with} file" + \
        ("s" if n_with != 1 else "") + "."
    if n_fixable:
        s += f"\n[*] {n_fixable} fixable with the `--fix` option."
    return s


def write(stream, text: str) -> None:
    stream.write(text)
    stream.flush()


__all__ = ["format_text", "format_concise", "format_json", "format_github", "format_sarif",
           "format_statistics", "summary_line", "use_color", "write", "sys"]


# -- CI formats ---------------------------------------------------------------------------


def format_statistics(diags) -> str:
    """``--statistics``: one line per code, most frequent first; ``[*]`` = safely fixable."""
    counts: dict = {}
    names: dict = {}
    fixable: dict = {}
    for d in diags:
        counts[d.code] = counts.get(d.code, 0) + 1
        names[d.code] = d.name
        if d.fix is not None and d.fix.applicability == SAFE:
            fixable[d.code] = True
    if not counts:
        return ""
    width = max(len(str(n)) for n in counts.values())
    lines = []
    for code in sorted(counts, key=lambda c: (-counts[c], c)):
        mark = "[*] " if fixable.get(code) else "    "
        lines.append(f"{counts[code]:>{width}}\t{code}\t{mark}{names[code]}")
    return "\n".join(lines) + "\n"


def _gh_escape_data(text: str) -> str:
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _gh_escape_property(text: str) -> str:
    return _gh_escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(diags) -> str:
    """GitHub Actions workflow commands: one ``::error`` annotation per finding."""
    out = []
    for d in diags:
        props = [f"file={_gh_escape_property(d.path)}", f"line={d.line}", f"col={d.column}"]
        if d.end_line:
            props += [f"endLine={d.end_line}", f"endColumn={d.end_column}"]
        props.append(f"title={_gh_escape_property(f'{d.code} {d.name}')}")
        where = f"cell {d.cell}, line {d.line}: " if getattr(d, "cell", 0) else ""
        out.append(f"::error {','.join(props)}::{_gh_escape_data(where + d.message)}")
    return "\n".join(out) + ("\n" if out else "")


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _artifact(path: str) -> dict:
    """A SARIF artifactLocation: repository-relative where possible (what code scanning
    needs), else an absolute file URI."""
    import pathlib
    from urllib.parse import quote

    abspath = os.path.abspath(path)
    cwd = os.getcwd()
    rel = os.path.relpath(abspath, cwd) if not path.startswith("<") and path != "-" else path
    # quote() of the file system's bytes: a name that is not valid UTF-8 is percent-encoded
    # byte by byte instead of failing.
    if not rel.startswith(".."):
        return {"uri": quote(os.fsencode(rel.replace(os.sep, "/"))), "uriBaseId": "%SRCROOT%"}
    try:
        return {"uri": pathlib.Path(abspath).as_uri()}
    except (ValueError, UnicodeError):
        return {"uri": "file://" + quote(os.fsencode(abspath))}


def _region(line: int, column: int, end_line: int = 0, end_column: int = 0) -> dict:
    r = {"startLine": max(1, line), "startColumn": max(1, column)}
    if end_line and (end_line, end_column) > (line, column):
        r["endLine"] = end_line
        r["endColumn"] = max(1, end_column)
    return r


def sarif_rules() -> list:
    """Rule descriptors for every code reflint can report (rules, then meta codes)."""
    from .docs import doc_url, rule_help

    out = []
    for code, name, summary, what, markdown, text in rule_help():
        desc = {
            "id": code,
            "name": name,
            "shortDescription": {"text": summary or name},
            "fullDescription": {"text": what or summary or name},
            "help": {"text": text, "markdown": markdown},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["jax", "correctness"]},
        }
        url = doc_url(code)
        if url:
            desc["helpUri"] = url
        out.append(desc)
    return out


def format_sarif(diags, version: str = "") -> str:
    """SARIF 2.1.0, as GitHub code scanning accepts it."""
    from . import __version__

    rules = sarif_rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in diags:
        where = f"cell {d.cell}, line {d.line}: " if getattr(d, "cell", 0) else ""
        result = {
            "ruleId": d.code,
            "level": "error",
            "message": {"text": where + d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(d.path),
                "region": _region(d.line, d.column, d.end_line, d.end_column)}}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if getattr(d, "cell", 0):
            # A notebook: the region is in the code cell (SARIF has no notion of cells).
            result["properties"] = {"cell": d.cell}
        if d.related is not None:
            result["relatedLocations"] = [{
                "id": 1,
                "message": {"text": d.related.message or "related location"},
                "physicalLocation": {"artifactLocation": _artifact(d.path),
                                     "region": _region(d.related.line, d.related.column)}}]
        results.append(result)
    cwd = os.getcwd()
    import pathlib

    root_uri = pathlib.Path(cwd).as_uri().rstrip("/") + "/"
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "reflint",
                "version": version or __version__,
                "semanticVersion": version or __version__,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


# -- more CI formats (ruff's names) -------------------------------------------------------


def statistics_rows(diags) -> list:
    """``--statistics`` as data: one row per code, most frequent first."""
    counts: dict = {}
    rows: dict = {}
    for d in diags:
        counts[d.code] = counts.get(d.code, 0) + 1
        row = rows.setdefault(d.code, {"code": d.code, "name": d.name, "count": 0,
                                       "fixable": False})
        if d.fix is not None and d.fix.applicability == SAFE:
            row["fixable"] = True
    out = []
    for code in sorted(counts, key=lambda c: (-counts[c], c)):
        rows[code]["count"] = counts[code]
        out.append(rows[code])
    return out


def format_statistics_json(diags) -> str:
    return json.dumps(statistics_rows(diags), indent=2) + "\n"


def _fingerprint(d) -> str:
    import hashlib

    key = f"{d.path}\0{d.code}\0{d.message}\0{getattr(d, 'cell', 0)}\0{d.line}\0{d.column}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def format_gitlab(diags) -> str:
    """GitLab Code Quality report (a JSON list; ``artifacts: reports: codequality``)."""
    out = []
    for d in diags:
        path = os.path.relpath(d.path) if os.path.isabs(d.path) else d.path
        where = f"cell {d.cell}, line {d.line}: " if getattr(d, "cell", 0) else ""
        out.append({
            "description": f"{d.code} {where}{d.message}",
            "check_name": d.code,
            "fingerprint": _fingerprint(d),
            "severity": "major",
            "location": {"path": path.replace(os.sep, "/"),
                         "lines": {"begin": d.line, "end": max(d.line, d.end_line or 0)}},
        })
    return json.dumps(out, indent=2) + "\n"


def format_pylint(diags) -> str:
    """pylint's parseable format, as ruff writes it: ``path:line: [CODE] message``."""
    return "".join(f"{d.path}:{_cell(d)}{d.line}: [{d.code}] {d.message}\n" for d in diags)


def format_junit(diags, files: "list | None" = None) -> str:
    """JUnit XML: one test suite per file, one failing test case per finding (as ruff)."""
    from xml.sax.saxutils import escape, quoteattr

    by_file: dict = {}
    for d in diags:
        by_file.setdefault(d.path, []).append(d)
    for f in files or ():
        by_file.setdefault(f, [])
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="reflint" tests="{max(1, len(diags))}" '
             f'failures="{len(diags)}" errors="0">']
    if not by_file:
        lines += ['  <testsuite name="reflint" tests="1" disabled="0" errors="0" '
                  'failures="0" package="org.reflint">',
                  '    <testcase name="No errors found" classname="reflint"/>',
                  '  </testsuite>']
    for path, ds in by_file.items():
        lines.append(f'  <testsuite name={quoteattr(path)} tests="{max(1, len(ds))}" '
                     f'disabled="0" errors="0" failures="{len(ds)}" package="org.reflint">')
        if not ds:
            lines.append('    <testcase name="No errors found" classname=' +
                         quoteattr(path) + '/>')
        for d in ds:
            where = f"{_cell(d)}{d.line}:{d.column}"
            lines.append(f'    <testcase name={quoteattr(f"org.reflint.{d.code}")} '
                         f'classname={quoteattr(path)} line="{d.line}" column="{d.column}">')
            lines.append(f'      <failure message={quoteattr(d.message)}>'
                         f'{escape(f"{where}: {d.code} {d.message}")}</failure>')
            lines.append('    </testcase>')
        lines.append('  </testsuite>')
    lines.append('</testsuites>')
    return "\n".join(lines) + "\n"
