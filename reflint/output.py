"""Output formats: pure functions of a list of diagnostics."""

from __future__ import annotations

import json
import os
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


def format_text(diags, sources: dict, color: bool = False, unsafe_fixes: bool = False) -> str:
    out = []
    for d in diags:
        head = (f"{_c(d.path, '1', color)}:{d.line}:{d.column}: "
                f"{_c(d.code, '1;31', color)} {d.message}")
        out.append(head)
        src = sources.get(d.path)
        if src is not None:
            lines = src.splitlines()
            if 0 < d.line <= len(lines):
                text = lines[d.line - 1]
                out.append(f"  {d.line:>4} | {text}")
                width = (d.end_column - d.column) if d.end_line == d.line else \
                    max(1, len(text) - d.column + 1)
                caret = " " * (d.column - 1) + "^" * max(1, width)
                out.append(f"       | {_c(caret, '31', color)}")
        if d.fix is not None:
            if d.fix.applicability == SAFE:
                out.append(f"  = help: {d.fix.message} (fixable with --fix)")
            else:
                out.append(f"  = help: {d.fix.message} (unsafe fix: --fix --unsafe-fixes)")
        out.append("")
    return "\n".join(out)


def format_concise(diags) -> str:
    return "\n".join(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}" for d in diags) + \
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


__all__ = ["format_text", "format_concise", "format_json", "summary_line", "use_color", "write",
           "sys"]
