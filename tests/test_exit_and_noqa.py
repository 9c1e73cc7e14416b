"""Exit codes that survive pipes, and ``# noqa`` on every line-ending style and spelling,
the same with the pre-filter on and off (issue 29)."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from reflint.engine import lint_source
from reflint.settings import Settings

BAD = "import jax\nx_ref = jax.new_ref(1)\ny = x_ref + 1\n"


def _piped(cmd, cwd, stdin=None):
    """Run ``cmd | head -c 0`` under pipefail; the exit status of reflint."""
    script = "set -o pipefail; " + " ".join(cmd) + (" < " + stdin if stdin else "") + \
        " | head -c 0"
    r = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                       timeout=120)
    return r


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
@pytest.mark.parametrize("fmt", ["text", "concise", "json"])
def test_findings_with_a_broken_pipe_still_exit_1(tmp_path, fmt):
    for i in range(40):  # enough output to fill the pipe
        (tmp_path / f"f{i}.py").write_text(BAD)
    cmd = [sys.executable, "-m", "reflint", "check", "--no-cache", "--format", fmt, "."]
    r = _piped(cmd, tmp_path)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr
    r = _piped([sys.executable, "-m", "reflint", "check", "--no-cache", "-"], tmp_path,
               stdin="f0.py")
    assert r.returncode == 1
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "c.py").write_text("x = 1\n")
    r = _piped([sys.executable, "-m", "reflint", "check", "--no-cache", "clean"], tmp_path)
    assert r.returncode == 0


LINES = ["import jax", "x_ref = jax.new_ref(1)", "y = x_ref + 1  # {noqa}"]
SPELLINGS = ["noqa", "NOQA", "NoQa", "noqa: REF007", "NOQA:REF007", "noqa : REF007",
             "noqa: REF00", "noqa: E501, REF007", "NOQA: ref007", "noqa: REF999"]


@pytest.mark.parametrize("newline,noqa", itertools.product(["\n", "\r\n", "\r"], SPELLINGS))
def test_noqa_on_every_line_ending_and_spelling(newline, noqa):
    source = newline.join(LINES).format(noqa=noqa) + newline
    on = lint_source(source, "a.py", Settings()).diagnostics
    off = lint_source(source, "a.py", Settings(), use_prefilter=False).diagnostics
    assert [(d.line, d.code, d.message) for d in on] == \
        [(d.line, d.code, d.message) for d in off]
    lf = lint_source("\n".join(LINES).format(noqa=noqa) + "\n", "a.py",
                     Settings()).diagnostics
    assert [(d.line, d.column, d.code) for d in on] == [(d.line, d.column, d.code) for d in lf]
    codes = [d.code for d in on]
    if "ref007" not in noqa and "REF999" not in noqa:
        assert codes == []
    elif "ref007" in noqa or "REF999" in noqa:
        assert codes == ["REF007", "REF901"]  # a code reflint does not know, with a hint


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_unknown_noqa_code_in_a_file_no_rule_analyses(newline):
    source = f"import os{newline}y = 1  # NOQA: ref007{newline}"
    on = lint_source(source, "a.py", Settings()).diagnostics
    off = lint_source(source, "a.py", Settings(), use_prefilter=False).diagnostics
    assert [(d.line, d.code) for d in on] == [(d.line, d.code) for d in off] == \
        [(2, "REF901")]
