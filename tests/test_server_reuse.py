"""reflint.server_reuse: the keystrokes whose findings the server reuses instead of analysing
must have exactly ``reflint check``'s findings on the edited text (a differential over the
fixtures' files and random edits), and the edits that could change them are analysed."""

from __future__ import annotations

import glob
import os
import random

from reflint import server_reuse
from reflint.engine import lint_source
from reflint.settings import Settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BUGGY = """import jax
import jax.numpy as jnp

# a comment
def f(x):  # trailing
    r = jax.new_ref(x)
    y = (1 +  # inside brackets
         2)
    s = '''a # not a comment
    b'''
    return jnp.sum(r)
"""


def _lint(text: str) -> list:
    return lint_source(text, "/tmp/reuse/a.py", Settings()).diagnostics


def _reuse(old: str, new: str):
    return server_reuse.reuse(old, server_reuse.line_facts(old), new, _lint(old))


def test_line_facts():
    facts = server_reuse.line_facts(BUGGY)
    lines = BUGGY.split("\n")
    assert facts[3] == 0  # "# a comment"
    assert facts[4] == lines[4].index("#")  # the def's trailing comment
    assert facts[5] == server_reuse.NO_COMMENT
    assert facts[6] == server_reuse.OTHER  # inside brackets: the comment is part of them
    assert facts[8] == server_reuse.OTHER  # inside a string
    assert server_reuse.line_facts("x = (\n") is None  # does not tokenize


def test_comment_edits_are_reused():
    assert _reuse(BUGGY, BUGGY.replace("# a comment", "# a comment, longer")) is not None
    assert _reuse(BUGGY, BUGGY.replace("# trailing", "# trailing!")) is not None
    new = BUGGY.replace("    y = (1 +", "    y = (1 +").replace(
        "import jax.numpy as jnp\n", "import jax.numpy as jnp  # np\n")
    facts = _reuse(BUGGY, new)
    assert facts is not None and facts[1] == len("import jax.numpy as jnp  ")


def test_edits_that_may_change_findings_are_not_reused():
    cases = [
        BUGGY.replace("# a comment", "# noqa: REF007"),  # suppressions are read
        BUGGY.replace("# a comment", "# reflint: skip-file"),
        BUGGY.replace("# inside brackets", "# inside brackets!"),  # part of an expression
        BUGGY.replace("# not a comment", "# not a comment!"),  # inside a string
        BUGGY.replace("    return jnp.sum(r)", "    return jnp.sum(r)  # here"),  # a finding
        BUGGY.replace("# a comment", "# a\ncomment"),  # a new line
        BUGGY.replace("# trailing", "# trailing\x00"),
        BUGGY.replace("(x):", "(xx):"),  # code
        BUGGY.replace("# a comment", "a comment"),  # the '#' itself
    ]
    for new in cases:
        assert new != BUGGY
        assert _reuse(BUGGY, new) is None, new


def _edits(rng: random.Random, text: str):
    """Random one-line edits: characters typed in comments, comments appended, and
    characters typed anywhere."""
    lines = text.split("\n")
    for _ in range(12):
        i = rng.randrange(len(lines))
        line = lines[i]
        kind = rng.random()
        if kind < 0.4 and "#" in line:
            col = rng.randint(line.index("#") + 1, len(line))
        elif kind < 0.8:
            col = len(line)
        else:
            col = rng.randint(0, len(line))
        ins = rng.choice(["#", " # note", "x", "(", "'", '"""', " # x_ref[...] = 1",
                          "\\", " noqa", " # new_ref(", "é", "𝜋"])
        new = lines[:i] + [line[:col] + ins + line[col:]] + lines[i + 1:]
        yield "\n".join(new)


def test_reused_findings_are_reflint_checks_on_the_edited_text():
    """Differential: over the fixtures with findings and random one-line edits, every edit
    the server would answer without analysing has exactly the findings of the old text."""
    rng = random.Random(23)
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.py"),
                             recursive=True))
    rng.shuffle(files)
    reused = analysed = 0
    for path in files[:40]:
        with open(path, encoding="utf-8") as fh:
            old = fh.read()
        old_diags = _lint(old)
        facts = server_reuse.line_facts(old)
        for new in _edits(rng, old):
            if server_reuse.reuse(old, facts, new, old_diags) is None:
                analysed += 1
                continue
            reused += 1
            assert _lint(new) == old_diags, (path, new)
    assert reused >= 60 and analysed >= 60, (reused, analysed)


def test_successive_reuses_keep_the_facts_right():
    """As the server does: each keystroke either reuses (then the facts it derives are what
    tokenizing the new text gives) or analyses."""
    text, facts, diags = BUGGY, server_reuse.line_facts(BUGGY), _lint(BUGGY)
    reused = 0
    for ch in "  # typed here, then more":
        first, rest = text.split("\n", 1)
        new = first + ch + "\n" + rest
        got = server_reuse.reuse(text, facts, new, diags)
        if got is None:
            facts, diags = server_reuse.line_facts(new), _lint(new)
        else:
            reused += 1
            assert got == server_reuse.line_facts(new)
            assert diags == _lint(new)
            facts = got
        text = new
    assert reused >= 20


def _name_edits(rng, text: str, n: int = 40):
    """One-line edits as typing in code makes them: a name or a number lengthened or
    shortened, a space typed; also next to quotes, comments and indentation."""
    lines = text.split("\n")
    for _ in range(n):
        i = rng.randrange(len(lines))
        line = lines[i]
        col = rng.randrange(len(line) + 1)
        if rng.random() < 0.3 and col < len(line):
            end = min(len(line), col + rng.randint(1, 3))
            new_line = line[:col] + line[end:]  # a deletion (whatever it removes)
        else:
            new_line = line[:col] + rng.choice(["x", "_1", " ", "ab", "f", "rb", "9"]) + \
                line[col:]
        yield "\n".join(lines[:i] + [new_line] + lines[i + 1:])


def test_facts_moved_by_a_name_edit_are_line_facts():
    """Differential: over the fixtures and random one-line edits, the facts the server
    derives for a keystroke in code (``edited_facts``, when the new text parses) are what
    tokenizing the new text gives."""
    import ast

    rng = random.Random(231)
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.py"),
                             recursive=True))
    rng.shuffle(files)
    derived = refused = 0
    for path in files[:60] + [None]:
        if path is None:
            old = BUGGY
        else:
            with open(path, encoding="utf-8") as fh:
                old = fh.read()
        facts = server_reuse.line_facts(old)
        if facts is None:
            continue
        for new in _name_edits(rng, old):
            try:
                ast.parse(new)
            except (SyntaxError, ValueError):
                continue  # the server tokenizes (or not) what does not parse
            got = server_reuse.edited_facts(old, facts, new)
            if got is None:
                refused += 1
                continue
            derived += 1
            assert got == server_reuse.line_facts(new), (path, new)
    assert derived >= 100 and refused >= 20, (derived, refused)


def test_facts_are_not_moved_across_structure():
    facts = server_reuse.line_facts(BUGGY)
    for old, new in [("def f(x):", "def f(x): "), ("    r = jax", "     r = jax"),
                     ("    r = jax", "    xr = jax"), ("s = '''a", "s = f'''a"),
                     ("return jnp", "return (jnp"), ("# a comment", "#x a comment")]:
        edited = BUGGY.replace(old, new, 1)
        got = server_reuse.edited_facts(BUGGY, facts, edited)
        assert got is None or got == server_reuse.line_facts(edited), (old, new)
    # The trailing comment moves with the code typed before it.
    edited = BUGGY.replace("def f(x):", "def fgh(x):")
    got = server_reuse.edited_facts(BUGGY, facts, edited)
    assert got == server_reuse.line_facts(edited) and got[4] == facts[4] + 2
