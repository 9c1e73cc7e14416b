"""What rules produce: a Diagnostic, with an optional Fix made of text Edits."""

from __future__ import annotations

from ._record import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

SAFE = "safe"
UNSAFE = "unsafe"


@record(frozen=True)
class Edit:
    """Replace the source between two 1-based (line, column) positions with ``content``."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> dict:
        return {"line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column, "content": self.content}


@record(frozen=True)
class Fix:
    """A fix: its message, its text edits and how safe it is (``applicability``)."""

    message: str
    edits: tuple
    applicability: str = SAFE

    def to_json(self) -> dict:
        return {"message": self.message, "applicability": self.applicability,
                "edits": [e.to_json() for e in self.edits]}


class LazyFix:
    """A fix whose edits are built when first read.

    The findings of a file come from the analysis of the tree built from the stdlib ``ast``
    (reflint.fasttree), which has no parentheses, comments or whitespace: what a fix says
    (``message``, ``applicability``) is known there, its edits need libcst's own tree.
    ``source`` (reflint.engine.FixSource) parses the file with libcst once, for all the fixes
    of the file, when the first of them is asked for its edits; ``key`` (line, column, code)
    names the finding. A fix libcst's tree does not give has no edits."""

    __slots__ = ("message", "applicability", "source", "key", "_edits")

    def __init__(self, message: str, applicability: str, source, key: tuple,
                 edits: Optional[tuple] = None):
        self.message = message
        self.applicability = applicability
        self.source = source
        self.key = key
        self._edits = edits

    @property
    def edits(self) -> tuple:
        if self._edits is None:
            fix = self.source.fix_for(self.key) if self.source is not None else None
            self._edits = tuple(fix.edits) if fix is not None else ()
        return self._edits

    @property
    def resolved(self) -> bool:
        return self._edits is not None

    def resolve(self, edits) -> None:
        """Give the fix its edits, built elsewhere (the language server asks a worker)."""
        self._edits = tuple(edits)

    def unbuilt(self) -> "LazyFix":
        """A copy without edits and without a file (for the same finding in another text)."""
        return LazyFix(self.message, self.applicability, None, self.key)

    def __getstate__(self):
        return (self.message, self.applicability, self.source, self.key, self._edits)

    def __setstate__(self, state):
        self.message, self.applicability, self.source, self.key, self._edits = state

    def __eq__(self, other):
        if not isinstance(other, (Fix, LazyFix)):
            return NotImplemented
        return (self.message, self.applicability, tuple(self.edits)) == \
            (other.message, other.applicability, tuple(other.edits))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyFix({self.message!r}, {self.applicability!r}, key={self.key!r})"

    def to_json(self, resolve: bool = True) -> dict:
        if not resolve and self._edits is None:
            return {"message": self.message, "applicability": self.applicability,
                    "edits": None, "key": list(self.key)}
        return {"message": self.message, "applicability": self.applicability,
                "edits": [e.to_json() for e in self.edits]}


@record(frozen=True)
class Related:
    """A place a finding points to besides its own (where the ref was made ...)."""

    line: int
    column: int
    message: str


@record(frozen=True, order=True)
class Diagnostic:
    """One finding of a rule in a file; findings sort by path, line, column and code."""

    path: str
    line: int
    column: int
    code: str
    name: str = field(compare=False)
    message: str = field(compare=False)
    end_line: int = field(default=0, compare=False)
    end_column: int = field(default=0, compare=False)
    fix: Optional[Fix] = field(default=None, compare=False)
    related: Optional[Related] = field(default=None, compare=False)
    # In a Jupyter notebook: the code cell (1-based; ``line`` is then the line in the cell).
    cell: int = field(default=0, compare=False)

    def to_json(self, resolve: bool = True) -> dict:
        """``resolve=False`` (the cache): a LazyFix not built yet stays so (``"edits":
        null``)."""
        return {
            "path": self.path, "line": self.line, "column": self.column,
            "end_line": self.end_line, "end_column": self.end_column, "code": self.code,
            "name": self.name, "message": self.message,
            "fix": (self.fix.to_json(resolve) if isinstance(self.fix, LazyFix) else
                    self.fix.to_json() if self.fix else None),
            "related": ({"line": self.related.line, "column": self.related.column,
                         "message": self.related.message} if self.related else None),
            "cell": self.cell or None,
        }

    @classmethod
    def from_json(cls, d: dict) -> "Diagnostic":
        fix = None
        if d.get("fix"):
            f = d["fix"]
            if f.get("edits") is None and "key" in f:
                # A LazyFix not built when cached: reflint.engine.attach_fix_source gives it
                # its file again.
                fix = LazyFix(f["message"], f["applicability"], None, tuple(f["key"]))
            else:
                fix = Fix(f["message"], tuple(Edit(**e) for e in f["edits"]),
                          f["applicability"])
        rel = Related(**d["related"]) if d.get("related") else None
        return cls(d["path"], d["line"], d["column"], d["code"], d["name"], d["message"],
                   d["end_line"], d["end_column"], fix, rel, d.get("cell") or 0)
