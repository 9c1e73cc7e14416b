"""Work that cannot be lost or broken (issue 29): ``--fix`` replaces a file only if it still
holds what was read; the REF007 fix inside a walrus keeps its meaning; standard input is
bounded by the size limit; ``reflint run`` on a FIFO does not block."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from reflint import cli
from reflint.engine import fix_source, lint_source
from reflint.settings import Settings

BAD = "import jax\nx_ref = jax.new_ref(1)\ny = x_ref + 1\n"


def test_fix_does_not_overwrite_an_edit_saved_meanwhile(tmp_path):
    p = tmp_path / "a.py"
    p.write_text(BAD)
    edited = BAD + "# the user's edit, saved while reflint ran\n"
    p.write_text(edited)
    problem = cli._write_fixed(str(p), BAD.replace("x_ref +", "x_ref[...] +"),
                               [str(tmp_path)], expected=BAD)
    assert problem == cli.CHANGED_SINCE_READ
    assert p.read_text() == edited
    # What was read is still there: written.
    p.write_text(BAD)
    assert cli._write_fixed(str(p), "fixed\n", [str(tmp_path)], expected=BAD) is None
    assert p.read_text() == "fixed\n"


def test_fix_run_reports_a_file_edited_during_the_run(tmp_path):
    """The edit lands between the check and the write (the fix itself is slowed down)."""
    (tmp_path / "a.py").write_text(BAD)
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent(f"""\
        import sys
        from reflint import cli, isolate
        orig = isolate.fix_sources
        def slow(items):
            out = orig(items)
            with open({str(tmp_path / "a.py")!r}, "a") as fh:
                fh.write("# saved meanwhile\\n")
            return out
        isolate.fix_sources = slow
        sys.exit(cli.main(["check", "--no-cache", "--fix", {str(tmp_path / "a.py")!r}]))
        """))
    r = subprocess.run([sys.executable, str(runner)], capture_output=True, text=True,
                       timeout=120)
    assert "changed since reflint read it" in r.stderr
    assert (tmp_path / "a.py").read_text() == BAD + "# saved meanwhile\n"
    assert r.returncode == 1  # the finding is still there


@pytest.mark.parametrize("source", [
    "y = (z := x_ref) + 1\nz[...] = 2\n",
    "if ( z := x_ref ) > 0:\n    z[...] = 1\n",
    "y = jax.numpy.sin(z := x_ref)\nz[...] = 2\n",
])
def test_walrus_fix_keeps_what_the_name_is_bound_to(source):
    src = "import jax\nx_ref = jax.new_ref(1)\n" + source
    out = fix_source(src, "a.py", Settings(unsafe_fixes=True)).source
    # z is still bound to the ref itself (its later write stays a ref write).
    assert "x_ref[...]" not in out
    assert "[...]" in out.splitlines()[2]
    assert not [d for d in lint_source(out, "a.py", Settings()).diagnostics
                if d.code == "REF007"]
    compile(out, "a.py", "exec")


def test_stdin_is_bounded_by_the_size_limit(tmp_path):
    r = subprocess.run(f"head -c 3000000 /dev/zero | {sys.executable} -m reflint check -",
                       shell=True, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "REF904" in r.stdout and "too large" in r.stdout
    assert "MemoryError" not in r.stderr + r.stdout
    r = subprocess.run([sys.executable, "-m", "reflint", "check", "--max-file-size", "10",
                        "-"], input=BAD, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "REF904" in r.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_run_on_a_fifo_does_not_block(tmp_path):
    fifo = tmp_path / "script.py"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "reflint", "run", str(fifo)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "FIFO" in r.stderr and "Traceback" not in r.stderr
