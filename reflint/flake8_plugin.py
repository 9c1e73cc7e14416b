"""flake8 plugin: reflint's analysis and rules, reported through flake8 (code prefix REF).

There is no second implementation: the plugin joins the lines flake8 read, runs
``reflint.engine.lint_source`` on them with the settings ``reflint check`` would use for the
file (the nearest ``[tool.reflint]``), and yields flake8's tuples. flake8 then applies its own
selection (``--select``, ``extend-select``, ``per-file-ignores``) and ``# noqa`` handling.
"""

from __future__ import annotations

import ast
import os
from typing import Iterator

from . import __version__
from .config import Resolver
from .engine import lint_source

_RESOLVER = None


def _settings_for(filename: str):
    global _RESOLVER
    if _RESOLVER is None:
        _RESOLVER = Resolver()
    if filename in ("stdin", "-", "") or not os.path.exists(filename):
        base = os.path.dirname(os.path.abspath(filename)) if filename not in ("stdin", "-", "") \
            else os.getcwd()
        return _RESOLVER.for_dir(base if os.path.isdir(base) else os.getcwd())
    return _RESOLVER.for_file(filename)


class Flake8Plugin:
    """Registered as ``REF = "reflint.flake8_plugin:Flake8Plugin"`` (flake8.extension)."""

    name = "reflint"
    version = __version__

    def __init__(self, tree, lines, filename):
        # flake8's ``ast`` of the file: the pre-filter's second stage and the fast tree
        # (reflint.fasttree) start from it instead of parsing the file again.
        self.tree = tree
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[tuple]:
        source = "".join(self.lines)
        settings = _settings_for(self.filename)
        try:
            tree = self.tree if isinstance(self.tree, ast.Module) else None
            result = lint_source(source, self.filename, settings, tree=tree)
        except (Exception, RecursionError, MemoryError) as e:  # noqa: BLE001 - as `reflint
            # check`: report (REF903), do not crash
            from .engine import internal_error

            yield 1, 0, f"REF903 {internal_error(self.filename, e).message}", type(self)
            return
        for d in result.diagnostics:
            # flake8 columns are 0-based in the tuple; flake8 adds 1 when printing.
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
