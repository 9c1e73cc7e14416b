"""Output formats: pure functions of a list of diagnostics."""

from __future__ import annotations

import json
import os
import re
import sys

from .diagnostics import SAFE


def use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


_LINES = re.compile(r"\r\n|\r|\n")
# Characters a terminal acts on: C0 controls but tab, DEL, C1 controls, and the bidirectional
# overrides and isolates ("Trojan source"). Text outputs show each as one visible character
# (a control picture, or U+FFFD), so a file, a path or a cached message cannot move the
# cursor, recolour or reorder the output, and code-frame carets stay aligned.
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


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


def format_text(diags, sources: dict, color: bool = False, unsafe_fixes: bool = False) -> str:
    out = []
    lines_of: dict = {}  # path -> the source's lines (split once per file)
    for d in diags:
        head = (f"{_c(printable(d.path), '1', color)}:{d.line}:{d.column}: "
                f"{_c(printable(d.code), '1;31', color)} {printable(d.message)}")
        out.append(head)
        src = sources.get(d.path)
        if src is not None:
            lines = lines_of.get(d.path)
            if lines is None:
                # Lines as Python counts them (str.splitlines also splits at form feeds).
                lines = lines_of[d.path] = _LINES.split(src)
            if 0 < d.line <= len(lines):
                text = lines[d.line - 1]
                width = (d.end_column - d.column) if d.end_line == d.line else \
                    max(1, len(text) - d.column + 1)
                text, column, width = _frame(text, d.column, width)
                out.append(f"  {d.line:>4} | {printable(text)}")
                caret = " " * (column - 1) + "^" * max(1, width)
                out.append(f"       | {_c(caret, '31', color)}")
        if d.fix is not None:
            if d.fix.applicability == SAFE:
                out.append(f"  = help: {printable(d.fix.message)} (fixable with --fix)")
            else:
                out.append(f"  = help: {printable(d.fix.message)} (unsafe fix: --fix "
                           f"--unsafe-fixes)")
        out.append("")
    return "\n".join(out)


def format_concise(diags) -> str:
    return "\n".join(f"{printable(d.path)}:{d.line}:{d.column}: {printable(d.code)} "
                     f"{printable(d.message)}" for d in diags) + \
        ("\n" if diags else "")


def format_json(diags) -> str:
    return json.dumps([d.to_json() for d in diags], indent=2) + "\n"


def summary_line(n_diags: int, n_files: int, n_fixable: int) -> str:
    if n_diags == 0:
        return f"All checks passed ({n_files} file{'s' if n_files != 1 else ''} checked)."
    s = f"Found {n_diags} error{'s' if n_diags != 1 else ''} in {n_files} file" + \
        ("s" if n_files != 1 else "") + "."
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
        out.append(f"::error {','.join(props)}::{_gh_escape_data(d.message)}")
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
        result = {
            "ruleId": d.code,
            "level": "error",
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(d.path),
                "region": _region(d.line, d.column, d.end_line, d.end_column)}}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
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
