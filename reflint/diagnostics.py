"""What rules produce: a Diagnostic, with an optional Fix made of text Edits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Fix:
    message: str
    edits: tuple
    applicability: str = SAFE

    def to_json(self) -> dict:
        return {"message": self.message, "applicability": self.applicability,
                "edits": [e.to_json() for e in self.edits]}


@dataclass(frozen=True)
class Related:
    line: int
    column: int
    message: str


@dataclass(frozen=True, order=True)
class Diagnostic:
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

    def to_json(self) -> dict:
        return {
            "path": self.path, "line": self.line, "column": self.column,
            "end_line": self.end_line, "end_column": self.end_column, "code": self.code,
            "name": self.name, "message": self.message,
            "fix": self.fix.to_json() if self.fix else None,
            "related": ({"line": self.related.line, "column": self.related.column,
                         "message": self.related.message} if self.related else None),
            "cell": self.cell or None,
        }

    @classmethod
    def from_json(cls, d: dict) -> "Diagnostic":
        fix = None
        if d.get("fix"):
            f = d["fix"]
            fix = Fix(f["message"], tuple(Edit(**e) for e in f["edits"]), f["applicability"])
        rel = Related(**d["related"]) if d.get("related") else None
        return cls(d["path"], d["line"], d["column"], d["code"], d["name"], d["message"],
                   d["end_line"], d["end_column"], fix, rel, d.get("cell") or 0)
