"""Crash containment in every mode (issue 29): a file whose check crashes native code (a
segmentation fault in libcst's parser), aborts or runs out of memory costs a diagnostic for
that file; the run, the other files' findings and fixes go on: with one file, several,
``-j 1``, the worker pool, standard input and ``--fix``.

The crash is injected in a subprocess (``engine.parse_module`` and ``fasttree.convert``
replaced by ones that read address 0 when the source holds a marker), so no test relies on a
real parser bug.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from reflint import isolate

pytestmark = pytest.mark.skipif(not isolate.enabled(), reason="needs fork (Linux)")

RUNNER = textwrap.dedent("""\
    import ctypes, os, sys
    import libcst
    from reflint import cli, engine
    orig = engine.parse_module
    orig_cst = libcst.parse_module
    def parse_cst(source, *a, **k):
        if "# FIXCRASH" in source and "x_ref[...]" in source:
            ctypes.string_at(0)
        return orig_cst(source, *a, **k)
    libcst.parse_module = parse_cst
    def parse(source):
        if "# CRASH" in source:
            ctypes.string_at(0)
        if "# ABORT" in source:
            os.abort()
        if "# FIXCRASH" in source and "x_ref[...]" in source:
            ctypes.string_at(0)
        return orig(source)
    engine.parse_module = parse
    # The findings come from the tree built from the stdlib ast (libcst parses only for a
    # fix's edits): the crash is injected where every analysed file passes, too.
    from reflint import fasttree
    orig_convert = fasttree.convert
    def convert(source, *a, **k):
        if "# CRASH" in source:
            ctypes.string_at(0)
        if "# ABORT" in source:
            os.abort()
        return orig_convert(source, *a, **k)
    fasttree.convert = convert
    orig_check = engine.check_module
    def check(module, path, settings, source=None, *a, **k):
        if source and "# HOG" in source:
            hog = bytearray(8 * 1024 ** 3)
        return orig_check(module, path, settings, source, *a, **k)
    engine.check_module = check
    if os.environ.get("FORCE_POOL"):
        cli.PARALLEL_MIN_CHARS = 0
    sys.exit(cli.main(sys.argv[1:]))
    """)

GOOD = "import jax\nx_ref = jax.new_ref(1)\ny = x_ref + 1\n"


def bad(marker: str) -> str:
    return f"import jax\n{marker}\nx_ref = jax.new_ref(1)\nw = x_ref + 3\n"


def run(tmp_path, args, stdin=None, env=None):
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    e = dict(os.environ, REFLINT_MAX_MEMORY="700MB", **(env or {}))
    return subprocess.run([sys.executable, str(runner), "check", "--no-cache",
                           "--format", "concise", *args], cwd=tmp_path, input=stdin,
                          capture_output=True, text=True, timeout=120, env=e)


def files(tmp_path, **named):
    for name, text in named.items():
        (tmp_path / name).write_text(text)


@pytest.mark.parametrize("args", [["a.py", "c.py"], ["-j", "1", "."], ["c.py"],
                                  ["-j", "2", "a.py", "b.py", "c.py"]])
def test_native_crash_costs_only_its_file(tmp_path, args):
    files(tmp_path, **{"a.py": GOOD, "b.py": GOOD, "c.py": bad("# CRASH")})
    env = {"FORCE_POOL": "1"} if "-j" in args and "2" in args else None
    r = run(tmp_path, args, env=env)
    assert r.returncode == 2, r.stderr  # REF903: reflint failed on a file
    assert "c.py:1:1: REF903" in r.stdout and "SIGSEGV" in r.stdout + r.stderr or \
        "died" in r.stdout, r.stdout
    assert "Traceback" not in r.stderr
    if "a.py" in args or "." in args:
        assert "a.py:3:5: REF007" in r.stdout


def test_native_crash_on_stdin(tmp_path):
    r = run(tmp_path, ["-"], stdin=bad("# CRASH"))
    assert r.returncode == 2
    assert "-:1:1: REF903" in r.stdout and "SIGSEGV" in r.stdout
    r = run(tmp_path, ["--fix", "-"], stdin=bad("# CRASH"))
    assert r.returncode == 2 and "REF903" in r.stderr
    assert r.stdout == bad("# CRASH")  # the input passes through


def test_crash_while_fixing_leaves_the_file_and_fixes_the_others(tmp_path):
    files(tmp_path, **{"a.py": GOOD, "c.py": bad("# FIXCRASH")})
    r = run(tmp_path, ["--fix", "a.py", "c.py"])
    assert "Traceback" not in r.stderr
    assert (tmp_path / "c.py").read_text() == bad("# FIXCRASH")
    assert "c.py: the process fixing it was killed by SIGSEGV" in r.stderr
    assert (tmp_path / "a.py").read_text() == GOOD.replace("x_ref +", "x_ref[...] +")
    assert "c.py:4:5: REF007" in r.stdout


@pytest.mark.parametrize("marker,how", [("# HOG", "more memory than the per-file limit"),
                                        ("# ABORT", "SIGABRT")])
@pytest.mark.parametrize("args", [["a.py", "c.py"], ["-j", "2", "a.py", "b.py", "c.py"],
                                  ["-"]])
def test_memory_limit_is_ref904_and_the_run_goes_on(tmp_path, marker, how, args):
    files(tmp_path, **{"a.py": GOOD, "b.py": GOOD, "c.py": bad(marker)})
    env = {"FORCE_POOL": "1"} if "-j" in args else None
    r = run(tmp_path, args, stdin=bad(marker) if args == ["-"] else None, env=env)
    assert "Traceback" not in r.stderr
    name = "-" if args == ["-"] else "c.py"
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith(f"{name}:1:1: REF904")),
                None)
    if "-j" in args and marker == "# ABORT":
        # The pool's worker died: checked again alone, then reported (REF903).
        assert f"{name}:1:1: REF903" in r.stdout
        return
    assert line is not None, r.stdout
    assert how in line
    assert r.returncode == 1
    if "a.py" in args:
        assert "a.py:3:5: REF007" in r.stdout


def test_map_isolated_in_process():
    got = list(isolate.map_isolated(lambda x: x * 2, [1, 2, 3]))
    assert got == [(1, 2), (2, 4), (3, 6)]


def test_map_isolated_reports_the_dying_item_and_goes_on():
    def f(x):
        if x == 2:
            os._exit(3)
        return x

    got = list(isolate.map_isolated(f, [1, 2, 3]))
    assert got[0] == (1, 1) and got[2] == (3, 3)
    assert isinstance(got[1][1], isolate.Died) and "status 3" in got[1][1].how


@pytest.mark.skipif(not isolate.enabled(), reason="checks run in this process here")
def test_a_child_keeps_its_last_files_objects_until_it_exits():
    """The forked child checking files exits (os._exit) after the last: that file's trees
    and analysis are kept (limits.keep_until_exit), not freed nor taken apart; earlier
    files' are freed as usual, and the parent keeps nothing."""
    from reflint import limits

    def f(x):
        return x, limits.keep_until_exit()

    got = list(isolate.map_isolated(f, [1, 2, 3], keep_last=True))
    assert [v for _, v in got] == [(1, False), (2, False), (3, True)]
    assert not limits.keep_until_exit(object())
    # A fix's passes are not kept (each pass would hold its trees to the end).
    got = list(isolate.map_isolated(f, [1, 2, 3]))
    assert [v for _, v in got] == [(1, False), (2, False), (3, False)]


def test_no_isolation_when_switched_off(monkeypatch):
    monkeypatch.setenv("REFLINT_ISOLATE", "0")
    pid = os.getpid()
    assert list(isolate.map_isolated(lambda x: os.getpid(), [1])) == [(1, pid)]


FLAKE8_RUNNER = RUNNER.replace("sys.exit(cli.main(sys.argv[1:]))",
                               "from flake8.main.cli import main\nsys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("marker,code", [("# CRASH", "REF903"), ("# HOG", "REF904")])
def test_flake8_plugin_contains_crashes(tmp_path, jobs, marker, code):
    """Under flake8 too, a crash in native code or an exhausted memory limit while checking
    one file costs that file a diagnostic; flake8's run and the other files' findings go on."""
    files(tmp_path, **{"a.py": GOOD, "b.py": GOOD, "c.py": bad(marker)})
    runner = tmp_path / "runner.py"
    runner.write_text(FLAKE8_RUNNER)
    e = dict(os.environ, REFLINT_MAX_MEMORY="700MB")
    r = subprocess.run([sys.executable, str(runner), "--isolated", "--select", "REF",
                        "-j", jobs, "a.py", "b.py", "c.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env=e)
    assert "Traceback" not in r.stderr, r.stderr
    assert f"c.py:1:1: {code}" in r.stdout, r.stdout
    assert "a.py:3:5: REF007" in r.stdout and "b.py:3:5: REF007" in r.stdout
    assert "c.py:4:5: REF007" not in r.stdout


def test_worker_keeps_its_state_and_survives_a_death():
    """``isolate.Worker``: one child serves calls in turn (its state carries over); a call
    that kills it returns ``Died`` and the next call starts a new child."""
    seen = []

    def f(x):
        if x == "die":
            os._exit(5)
        if x == "raise":
            raise ValueError("boom")
        seen.append(x)
        return len(seen)

    w = isolate.Worker(f)
    try:
        assert [w.call(1), w.call(2)] == [1, 2]  # the child's list grows: one child
        died = w.call("die")
        assert isinstance(died, isolate.Died) and "status 5" in died.how
        assert w.call(3) == 1  # a new child, fresh state
        with pytest.raises(ValueError, match="boom"):
            w.call("raise")
        assert w.call(4) == 2
        assert seen == []  # nothing ran in this process
    finally:
        w.close()
