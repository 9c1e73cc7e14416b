"""The Rule base class and the registry of rules (modules of ``reflint.rules``)."""

from __future__ import annotations

import importlib
import os
import re

from . import api
from .codes import CODES
from .diagnostics import Diagnostic, Fix, Related

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Iterator, Optional

    from .analysis import ModuleAnalysis


# Pre-filter triggers for rules that need a Ref value: the name of any API that produces one
# (see api.REF_SOURCES; api.REF_KEYWORD_SOURCES: `nnx.Param(x, ref=True)`), as a whole word.
REF_TRIGGERS = api.ref_trigger()

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Known limits",
                "JAX versions", "Runtime message")


class Finding:
    """A rule's raw result: nodes, not yet positions (positions are resolved lazily)."""

    __slots__ = ("node", "message", "related_node", "related_message", "fix")

    def __init__(self, node, message, related_node=None, related_message="", fix=None):
        self.node = node
        self.message = message
        self.related_node = related_node
        self.related_message = related_message
        self.fix = fix  # callable(analysis) -> Fix | None, or None


class Rule:
    """One rule: a stable code, a kebab-case name, documentation in the docstring."""

    code: str = ""
    name: str = ""
    fixable: str = ""  # "", "safe" or "unsafe"
    # Regex of source text without which the rule cannot fire (used by the pre-filter), or a
    # tuple of regexes that must all match (each somewhere in the text); "" makes every file a
    # candidate. Rules that need a Ref value use REF_TRIGGERS.
    triggers: "str | tuple" = ""

    def check(self, analysis: "ModuleAnalysis") -> Iterator[Finding]:  # pragma: no cover
        raise NotImplementedError

    # -- documentation -------------------------------------------------------------------

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        return parse_doc_sections(cls.__doc__ or "")

    @classmethod
    def examples(cls) -> tuple[str, str]:
        """The code of the 'Example' (must fire) and 'Use instead' (must not) sections."""
        sections = cls.doc_sections()
        return (_code_block(sections.get("Example", "")),
                _code_block(sections.get("Use instead", "")))

    def to_diagnostic(self, analysis, finding: Finding, path: str) -> Diagnostic:
        pos = analysis.position(finding.node)
        line, col, end_line, end_col = pos if pos else (1, 1, 1, 1)
        related = None
        if finding.related_node is not None:
            rpos = analysis.position(finding.related_node)
            if rpos:
                related = Related(rpos[0], rpos[1], finding.related_message)
        fix: Optional[Fix] = None
        if finding.fix is not None:
            fix = finding.fix(analysis)
            if fix is None and getattr(finding.fix, "layout", False):
                # The factory said no from the tree's layout (commas, whitespace): on the
                # tree built from ``ast``, which has none, that is no answer (engine).
                analysis.layout_fix_undecided = True
        return Diagnostic(path=path, line=line, column=col, code=self.code, name=self.name,
                          message=finding.message, end_line=end_line, end_column=end_col,
                          fix=fix, related=related)


def parse_doc_sections(doc: str) -> dict[str, str]:
    """Split a docstring into ``## Section`` parts (first line is the summary)."""
    import inspect

    text = inspect.cleandoc(doc)
    sections: dict[str, str] = {}
    current = "Summary"
    lines: list[str] = []
    for line in text.splitlines():
        m = re.match(r"^##\s+(.*?)\s*$", line)
        if m:
            sections[current] = "\n".join(lines).strip()
            current, lines = m.group(1), []
        else:
            lines.append(line)
    sections[current] = "\n".join(lines).strip()
    # The summary is one line wherever it is shown (`reflint rules`, tables, hovers).
    sections["Summary"] = " ".join(sections.get("Summary", "").split())
    return sections


def _code_block(text: str) -> str:
    m = re.search(r"```python\n(.*?)```", text, re.S)
    return m.group(1) if m else ""


_RULES: Optional[list] = None


def all_rules() -> list[Rule]:
    """Every rule, ordered by code: one module per rule in ``reflint.rules``."""
    global _RULES
    if _RULES is None:
        import reflint.rules as pkg

        found = []
        for name in _module_names(pkg.__path__):
            if name.startswith("_"):
                continue
            module = importlib.import_module(f"reflint.rules.{name}")
            for obj in vars(module).values():
                if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and \
                        obj.__module__ == module.__name__:
                    found.append(obj())
        for r in found:
            if CODES.get(r.code) != r.name:
                raise RuntimeError(f"rule {r.code} is named {r.name!r}, codes.py says "
                                   f"{CODES.get(r.code)!r}")
        _RULES = sorted(found, key=lambda r: r.code)
    return _RULES


def _module_names(path: list) -> list:
    """The names of the modules in the folders ``path``, as ``pkgutil.iter_modules`` gives
    them (pkgutil itself imports typing: start-up); a folder that cannot be listed (a zip
    archive) is asked through pkgutil."""
    from importlib.machinery import all_suffixes

    names: list = []
    suffixes = sorted(all_suffixes(), key=len, reverse=True)  # as inspect.getmodulename
    for folder in path:
        try:
            files = sorted(os.listdir(folder))
        except OSError:
            import pkgutil

            names += [m.name for m in pkgutil.iter_modules([folder]) if m.name not in names]
            continue
        for fn in files:
            name = next((fn[:-len(s)] for s in suffixes if fn.endswith(s)), None)
            if name is None and os.path.isfile(os.path.join(folder, fn, "__init__.py")):
                name = fn  # a package
            if name and name != "__init__" and name not in names:
                names.append(name)
    return names


def rule_by_code(code: str) -> Optional[Rule]:
    for r in all_rules():
        if r.code == code or r.name == code:
            return r
    return None

