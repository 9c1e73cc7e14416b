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
code = main(["check", "--no-cache", *sys.argv[2:], sys.argv[1]])
heavy = {m for m in ("libcst", "reflint.analysis") if m in sys.modules}
print("after check:", sorted(heavy), code)
"""


def _run(path: str, *options: str, **extra) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT, **extra)
    return subprocess.run([sys.executable, "-c", PROBE, path, *options], capture_output=True,
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


def test_a_file_with_ref_code_loads_the_analysis_not_libcst(tmp_path):
    """The analysis runs on reflint's own nodes, built from the stdlib ``ast``: libcst is
    imported only to build a fix's edits (``--diff``, ``--fix``)."""
    f = tmp_path / "refs.py"
    f.write_text("import jax\n\n\n@jax.jit\ndef f(x):\n    r = jax.new_ref(x)\n    return r\n",
                 encoding="utf-8")
    out = _run(str(f), REFLINT_ISOLATE="0")
    assert "REF001" in out and "after check: ['reflint.analysis'] 1" in out, out
    fixable = tmp_path / "fixable.py"
    fixable.write_text("import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n"
                       "    r = jax.new_ref(x)\n    return jnp.sin(r)\n", encoding="utf-8")
    out = _run(str(fixable), REFLINT_ISOLATE="0")
    assert "REF007" in out and "fixable" in out, out
    assert "after check: ['reflint.analysis'] 1" in out, out
    out = _run(str(fixable), "--diff", REFLINT_ISOLATE="0")
    assert "jnp.sin(r[...])" in out and "after check: ['libcst', 'reflint.analysis'] 1" in out, \
        out
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


FORKS = """
import os
import sys

forks = []
real_fork = os.fork


def fork():
    forks.append(1)
    return real_fork()


os.fork = fork
from reflint.cli import main

code = main(["check", "--no-cache", "--format", "concise", *sys.argv[1:]])
sys.stdout.flush()
heavy = sorted(m for m in ("libcst", "reflint.analysis", "reflint.isolate") if m in sys.modules)
print("forks:", len(forks), "loaded:", heavy, "exit:", code)
"""


def _forks(*paths: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("REFLINT_ISOLATE", None)
    return subprocess.run([sys.executable, "-c", FORKS, *paths], capture_output=True,
                          text=True, env=env, cwd=ROOT, check=False).stdout


def test_files_the_pre_filter_rules_out_are_checked_without_a_child(tmp_path):
    # Neither a forked child (reflint.isolate guards libcst's native parser, which such a
    # file never reaches) nor libcst: their results are the same as in the child.
    plain = tmp_path / "plain.py"
    plain.write_text("import jax\n\nx = jax.numpy.zeros(3)\n", encoding="utf-8")
    noqa = tmp_path / "noqa.py"
    noqa.write_text("import os  # noqa: REF999\n", encoding="utf-8")
    skipped = tmp_path / "skipped.py"
    skipped.write_text("# reflint: skip-file\nimport jax\nr = jax.new_ref(1)\n", encoding="utf-8")
    out = _forks(str(plain), str(noqa), str(skipped))
    assert "noqa.py:1:20: REF901" in out, out
    assert out.rstrip().endswith("forks: 0 loaded: [] exit: 1"), out


def test_a_syntax_error_or_ref_code_is_checked_in_the_child(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("import os\n", encoding="utf-8")
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n", encoding="utf-8")
    out = _forks(str(plain), str(broken))
    assert "broken.py:1:7: REF900" in out, out
    assert out.rstrip().endswith("forks: 1 loaded: ['reflint.isolate'] exit: 1"), out
    refs = tmp_path / "refs.py"
    refs.write_text("import jax\n\n\n@jax.jit\ndef f(x):\n    r = jax.new_ref(x)\n    return r\n",
                    encoding="utf-8")
    out = _forks(str(plain), str(refs))
    assert "refs.py:7:12: REF001" in out, out
    assert out.rstrip().endswith("forks: 1 loaded: ['reflint.isolate'] exit: 1"), out


def test_rule_modules_are_listed_as_pkgutil_lists_them():
    import pkgutil

    import reflint.rules
    from reflint.rule import _module_names

    path = list(reflint.rules.__path__)
    assert _module_names(path) == [m.name for m in pkgutil.iter_modules(path)]


def test_help_is_formatted_at_the_terminal_width_as_argparse_does(monkeypatch):
    import argparse

    from reflint.cli import _HelpFormatter, build_parser

    for columns in ("40", "100", "200"):
        monkeypatch.setenv("COLUMNS", columns)
        lazy, plain = _HelpFormatter("reflint"), argparse.HelpFormatter("reflint")
        assert (lazy._width, lazy._max_help_position) == \
            (plain._width, plain._max_help_position)
        parser = build_parser()
        check = parser._subparsers._group_actions[0].choices["check"]
        assert check.formatter_class is _HelpFormatter
        text = check.format_help()
        check.formatter_class = argparse.HelpFormatter
        assert check.format_help() == text


def test_lazy_pattern_behaves_like_the_compiled_pattern():
    import re

    from reflint._lazy import lazy_re

    rx = lazy_re(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+))?", re.I)
    assert "search" not in vars(rx)  # not compiled yet
    compiled = re.compile(rx.pattern, re.I)
    for text in ("x = 1  # NOQA: ref001", "# noqa", "nothing"):
        assert repr(rx.search(text)) == repr(compiled.search(text))
    assert rx.flags == compiled.flags and rx.groupindex == compiled.groupindex
    assert rx.split("a#noqa b") == compiled.split("a#noqa b")
