"""Start-up: importing reflint, and checking a file the pre-filter rules out, load neither
libcst nor the analysis (bench/startup.py measures the time; this checks what is imported)."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import sys
from reflint.cli import main
from reflint.rule import all_rules
rules = all_rules()  # every rule module, for codes, names and pre-filter triggers
assert len(rules) >= 15, rules
heavy = {m for m in ("libcst", "reflint.analysis", "reflint.fasttree",
                     "reflint.gate", "multiprocessing", "concurrent.futures.process")
         if m in sys.modules}
print("after import:", sorted(heavy))
code = main(["check", "--no-cache", sys.argv[1]])
heavy = {m for m in ("libcst", "reflint.analysis") if m in sys.modules}
print("after check:", sorted(heavy), code)
"""


def _run(path: str, **extra) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT, **extra)
    return subprocess.run([sys.executable, "-c", PROBE, path], capture_output=True,
                          text=True, env=env, cwd=ROOT, check=False).stdout


def test_a_file_without_ref_code_never_loads_libcst(tmp_path):
    f = tmp_path / "plain.py"
    f.write_text("import os\n\nprint(os.getcwd())\n# noqa: E501\n", encoding="utf-8")
    out = _run(str(f))
    assert "after import: []" in out, out
    assert "after check: [] 0" in out, out


def test_a_syntax_error_in_a_file_without_ref_code_is_still_reported(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("def f(:\n", encoding="utf-8")
    out = _run(str(f))
    assert "REF900" in out and out.rstrip().endswith("1"), out


def test_a_file_with_ref_code_loads_the_analysis(tmp_path):
    f = tmp_path / "refs.py"
    f.write_text("import jax\n\n\n@jax.jit\ndef f(x):\n    r = jax.new_ref(x)\n    return r\n",
                 encoding="utf-8")
    out = _run(str(f), REFLINT_ISOLATE="0")
    assert "REF001" in out and "after check: ['libcst', 'reflint.analysis'] 1" in out, out
    # Checked in a forked child (reflint.isolate): the analysis is loaded there only.
    out = _run(str(f))
    assert "REF001" in out and "after check: [] 1" in out, out


def test_lazy_module_behaves_like_the_module():
    import libcst

    from reflint._lazy import LazyModule

    lazy = LazyModule("libcst")
    assert lazy.Name is libcst.Name
    assert lazy.parse_module("x = 1\n").code == "x = 1\n"
    assert "Name" in vars(lazy)  # copied in: later lookups are plain attribute reads


def test_server_without_pygls_is_a_clear_error(monkeypatch, capsys):
    from reflint import cli

    monkeypatch.setitem(sys.modules, "pygls", None)
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    monkeypatch.delitem(sys.modules, "reflint.server", raising=False)
    assert cli.main(["server"]) == 2
    assert "pip install 'jax-reflint[server]'" in capsys.readouterr().err
