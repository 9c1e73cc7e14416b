"""Rule documentation: rendered from each rule's docstring (the single source)."""

from __future__ import annotations

import os

from .rule import DOC_SECTIONS, all_rules

DOCS_URL = "docs/rules/{code}.md"
REQUIRED_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead",
                     "Known limits", "JAX versions", "Runtime message")


def render_rule(rule) -> str:
    sections = rule.doc_sections()
    out = [f"# {rule.code} {rule.name}", "", sections.get("Summary", ""), ""]
    fix = {"safe": "Safe autofix available (`reflint check --fix`).",
           "unsafe": "Unsafe autofix available (`reflint check --fix --unsafe-fixes`)."}
    if rule.fixable:
        out += [f"*{fix[rule.fixable]}*", ""]
    order = list(DOC_SECTIONS) + ["Fix safety"]
    for name in ["What it does", "Why is this bad?", "Example", "Use instead", "Fix safety",
                 "Known limits", "JAX versions", "Runtime message"]:
        if name in sections and sections[name]:
            out += [f"## {name}", "", sections[name], ""]
    for name, body in sections.items():
        if name not in order and name != "Summary" and body:
            out += [f"## {name}", "", body, ""]
    out += ["## Suppressing", "",
            f"Add `# noqa: {rule.code}` at the end of the reported line, or disable the rule "
            f"with `--ignore {rule.code}` / `ignore = [\"{rule.code}\"]` in `[tool.reflint]`.",
            ""]
    return "\n".join(out).rstrip() + "\n"


def render_index() -> str:
    lines = ["# reflint rules", "", "| code | name | fix | summary |", "|---|---|---|---|"]
    for r in all_rules():
        lines.append(f"| [{r.code}]({r.code}.md) | {r.name} | {r.fixable or ''} | "
                     f"{r.doc_sections().get('Summary', '')} |")
    return "\n".join(lines) + "\n"


def generate(directory: str) -> list:
    """Write docs/rules/*.md; returns the paths written."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for r in all_rules():
        path = os.path.join(directory, f"{r.code}.md")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(render_rule(r))
        written.append(path)
    path = os.path.join(directory, "README.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_index())
    written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover
    import sys

    for p in generate(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"):
        print(p)
