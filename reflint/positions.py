"""Positions of the nodes of a tree libcst parsed, computed for the nodes asked about only.

libcst's ``PositionProvider`` generates the code of the whole module to position any node:
for a 100,000-line file with one finding that was most of the run. Here a node's position
comes from the code generation of the one top-level statement that holds it, shifted by the
line where CPython's ``ast`` says that statement starts; top-level statements start at column
0, so columns need no shift. Anything unexpected (a statement count that does not match the
``ast``, a line whose text differs) falls back to the whole-module provider, so the positions
are always libcst's own. The tree is reflint's (``reflint.cstbridge.to_nodes``), whose
``_cst_of`` maps each node to libcst's.
"""

from __future__ import annotations

import ast
import re
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from ._lazy import lazy

cst = lazy("reflint.nodes")
_analysis = lazy("reflint.analysis")
cstbridge = lazy("reflint.cstbridge")

_LINES = re.compile(r"\r\n|\r|\n")


class LazyPositions:
    """``PositionProvider``-like: ``get(node)`` gives the node's ``CodeRange`` (or None)."""

    def __init__(self, module, source: str, tree: Optional[ast.Module]):
        self.module = module  # reflint's nodes
        self._cst = module._cst  # libcst's tree
        self._cst_of = module._cst_of  # id(our node) -> libcst's node
        self.source = source
        self._lines: Optional[list] = None
        self._starts = _statement_lines(module, tree) if tree is not None else None
        self._owner: dict = {}  # id(node) -> index of its top-level statement
        self._walked = 0  # top-level statements indexed so far
        self._ranges: dict = {}  # index -> {libcst's node: CodeRange} (shifted)
        self._full = None

    def get(self, node):
        """The ``nodes.CodeRange`` of ``node`` (one of ours), or None."""
        if self._starts is None:
            return self._whole().get(node)
        i = self._owner.get(id(node))
        while i is None and self._walked < len(self.module.body):
            j = self._walked
            self._walked += 1
            stack = [self.module.body[j]]
            while stack:
                n = stack.pop()
                self._owner[id(n)] = j
                stack.extend(_analysis.child_nodes(n))
            i = self._owner.get(id(node))
        if i is None:
            return self._whole().get(node)
        ranges = self._ranges.get(i)
        if ranges is None:
            ranges = self._ranges[i] = self._statement(i)
            if ranges is None:
                self._starts = None  # something unexpected: libcst's own provider from now on
                return self._whole().get(node)
        return ranges.get(self._cst_of.get(id(node)))

    def _whole(self):
        if self._full is None:
            self._full = cstbridge.Positions(self.module)  # the whole module's, at once
        return self._full

    def _statement(self, i: int) -> Optional[dict]:
        stmt = self._cst.body[i]
        local = self._cst.with_changes(body=[stmt], header=[], footer=[])
        ranges = cstbridge.cst_positions(local)
        # The statement's first line of code, in the local code and in the file.
        first = 1 + len(stmt.leading_lines)
        decorators = getattr(stmt, "decorators", ())
        if decorators:
            first += len(decorators[0].leading_lines)
        shift = self._starts[i] - first
        if self._lines is None:
            self._lines = _LINES.split(self.source)
        local_lines = _LINES.split(local.code)
        if not (0 < first <= len(local_lines) and 0 < self._starts[i] <= len(self._lines)) or \
                local_lines[first - 1] != self._lines[self._starts[i] - 1]:
            return None
        CodeRange, CodePosition = cst.CodeRange, cst.CodePosition
        out = {}
        for n, r in ranges.items():
            if n is local:
                continue
            out[n] = CodeRange(CodePosition(r.start.line + shift, r.start.column),
                               CodePosition(r.end.line + shift, r.end.column))
        return out


def _statement_lines(module, tree: ast.Module) -> Optional[list]:
    """The first line of code (a decorator's, for a decorated definition) of each top-level
    statement of ``module``, from ``tree`` (None if the two do not match)."""
    body = tree.body
    out = []
    k = 0
    for stmt in module.body:
        n = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        if k + n > len(body):
            return None
        a = body[k]
        line = a.lineno
        decorators = getattr(a, "decorator_list", None)
        if decorators:
            line = min(line, decorators[0].lineno)
        out.append(line)
        k += n
    return out if k == len(body) else None
