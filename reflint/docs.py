"""Rule documentation: rendered from each rule's docstring (the single source)."""

from __future__ import annotations

import os

from .rule import DOC_SECTIONS, all_rules

DOCS_URL = "docs/rules/{code}.md"  # a rule's page, relative to the repository root

# Where the rule pages are on the web: the one place that says so. Diagnostics link there in
# the language server (codeDescription.href), SARIF (helpUri) and `reflint rule`. The pages
# are the repository's docs/rules/ files, read on the repository host; `main` holds every
# published code (codes are stable). REFLINT_DOCS_URL overrides it, e.g. for a mirror or a
# tag: a template with {code} ("https://example.org/reflint/{code}.html") or a base to which
# "{code}.md" is appended; an empty REFLINT_DOCS_URL turns the links off.
REPOSITORY_URL = "https://github.com/jax-reflint/reflint"
RULES_URL = REPOSITORY_URL + "/blob/main/" + DOCS_URL
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
    from .codes import CODES

    lines += ["", "Reported by reflint itself (files it could not check, suppression comments):",
              "", "| code | name | summary |", "|---|---|---|"]
    for code in sorted(META_DOCS):
        lines.append(f"| [{code}]({code}.md) | {CODES[code]} | {META_DOCS[code][0]} |")
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
    for code in sorted(META_DOCS):
        path = os.path.join(directory, f"{code}.md")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(render_meta(code))
        written.append(path)
    path = os.path.join(directory, "README.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_index())
    written.append(path)
    return written


# -- codes without a rule module (reported by the engine) ----------------------------------

META_DOCS = {
    "REF900": ("A file could not be decoded or parsed.", """\
## What it does
Reports a file that is not valid Python: undecodable (bad PEP 263 encoding, invalid UTF-8),
holding NUL bytes, a syntax error, or nesting deeper than CPython's parser accepts (thousands
of nested parentheses or unary operators). The message and position are CPython's own; for
syntax newer than the running Python that no parser here understands, the message names it.
Syntax newer than the running Python that libcst understands (PEP 695 on Python 3.11) is
checked, not reported.

## Why is this bad?
No rule can check a file that does not parse, so its findings would be silently missing.
The run goes on with the other files; the exit code is 1.
"""),
    "REF901": ("A `# noqa` comment names a REF code that does not exist.", """\
## What it does
Reports codes in `# noqa: ...` comments that start with `REF` but are not reflint codes (nor
prefixes of codes), such as `# noqa: REF999` or a lower-case `# noqa: ref001`. Codes of other
tools (`E501`, `B008`) are left alone.

## Why is this bad?
A misspelled code suppresses nothing: the finding it was meant to silence is still reported,
or the comment silently rots.

## Example
```python
x = 1  # noqa: REF999
```

## Use instead
```python
x = 1
```
"""),
    "REF902": ("A `# noqa` comment names a REF code that suppresses nothing.", """\
## What it does
Reports REF codes in `# noqa: ...` comments that suppress no finding on their line. Off by
default: enable it with `reflint check --report-unused-noqa` or
`extend-select = ["REF902"]` (prefixes and `ALL` do not select it). Codes of rules that are
not enabled are not reported.

## Why is this bad?
Stale suppressions hide the next real finding on the same line.

## Example
```python
x = 1  # noqa: REF007
```

## Use instead
```python
x = 1
```
"""),
    "REF903": ("reflint itself failed on a file (a bug in reflint: please report it).", """\
## What it does
Reports a file on which reflint failed: an unexpected exception in the analysis, a recursion
deeper than even the large stack allows, or a worker process that died while checking it (a
crash in a native parser, the out-of-memory killer). The message names the file and the error.
Reported whatever the selection; `# noqa` does not hide it.

## Why is this bad?
The file was not checked, through no fault of its own: its findings are missing. Every other
file's results are still reported, and the exit code is 2 (even with `--exit-zero`), so CI
does not pass silently. Please report it with the file (or a reduced copy) at the project's
issue tracker.
"""),
    "REF904": ("A file was not checked: too large, not a regular file, or unreadable.", """\
## What it does
Reports a path that discovery found, or that was named, but that reflint does not read:
larger than `max-file-size` (default 2 MB; `[tool.reflint] max-file-size = "5MB"` or
`--max-file-size`), a FIFO, socket or device named `*.py` (never opened, so a pipe cannot
block the run), a dangling symbolic link or a link loop, a file or directory that cannot be
read (permissions), or valid Python that libcst cannot parse and reflint cannot analyse
otherwise. Reported whatever the selection.

## Why is this bad?
A skipped file's findings are missing: an unreadable directory must not turn into "All checks
passed". The run goes on; the exit code is 1. Exclude the path (`extend-exclude`) if it is
not meant to be checked.
"""),
}


def render_meta(code: str) -> str:
    from .codes import CODES

    summary, body = META_DOCS[code]
    from .codes import ALWAYS_CODES

    if code in ALWAYS_CODES:
        return (f"# {code} {CODES[code]}\n\n{summary}\n\n{body.rstrip()}\n\n## Suppressing\n\n"
                f"Cannot be suppressed or deselected: a file reflint did not check is always "
                f"reported (see docs/guarantees.md). Exclude the path to skip it.\n")
    return (f"# {code} {CODES[code]}\n\n{summary}\n\n{body.rstrip()}\n\n## Suppressing\n\n"
            f"Add `# noqa: {code}` at the end of the reported line, or disable the check with "
            f"`--ignore {code}` / `ignore = [\"{code}\"]` in `[tool.reflint]`.\n")


def doc_url(code: str):
    """The web page of a code's documentation (RULES_URL, or REFLINT_DOCS_URL when set);
    None when REFLINT_DOCS_URL is set empty."""
    template = os.environ.get("REFLINT_DOCS_URL", RULES_URL).strip()
    if not template:
        return None
    if "{code}" not in template:
        template = template.rstrip("/") + "/{code}.md"
    return template.replace("{code}", code)


def _plain(markdown: str) -> str:
    return markdown.replace("```python\n", "").replace("```", "")


def rule_help() -> list:
    """(code, name, summary, what it does, markdown, text) for every reportable code."""
    from .codes import CODES

    out = []
    for r in all_rules():
        md = render_rule(r)
        out.append((r.code, r.name, r.doc_sections().get("Summary", ""),
                    r.doc_sections().get("What it does", ""), md, _plain(md)))
    for code in sorted(META_DOCS):
        md = render_meta(code)
        summary = META_DOCS[code][0]
        out.append((code, CODES[code], summary, summary, md, _plain(md)))
    return out


if __name__ == "__main__":  # pragma: no cover
    import sys

    for p in generate(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"):
        print(p)
