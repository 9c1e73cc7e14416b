"""End to end: every fixture under tests/fixtures/ runs through ``python -m reflint.runtime``.

A fixture with ``# expect: REFxxx[, REFyyy]`` lines must fail (exit 1) with a RefError whose
code is one of its expected codes; a fixture without them must exit 0.  Codes listed in
``reflint.runtime.NOT_ENFORCEABLE`` are only checked to run: exit 0, or exit 1 with one of
the expected codes.  Runs on the default JAX device (JAX_PLATFORMS is left alone).

A fixture whose run-time verdict depends on the installed JAX says so with header lines
``# runtime: jax<0.11: REF016`` (see tests/fixtures/README.md, "Verdicts that depend on the
JAX version"): the first line whose version condition holds for the installed JAX replaces the
verdict of the ``# expect:`` lines (``ok``: exit 0; ``REFxxx[, REFyyy]``: exit 1 with one of
those codes; ``error Name``: exit 1 with Python's/JAX's own ``Name`` exception, no REF code).

Fixtures matched by ``MISSING_IN_INSTALLED_JAX`` use names that the installed JAX (the
default lint target) does not have: running them must fail with JAX's own AttributeError or
ImportError, which shows that the static verdict (REF015: the name does not exist) is right.
Each fixture is a fresh process, like a user's run.

A fixture whose first line is ``# runtime: skip (REASON)`` is linted but not run (code for an
API the installed libraries lack: the seed's Flax NNX API before flax 0.12), and a fixture
expecting a code no rule (or no runtime check) of this checkout has yet is not run either.
"""

import fnmatch
import importlib.util
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import jax

from reflint.codes import CODES
from reflint.runtime import ERROR_CLASSES, NOT_ENFORCEABLE
from reflint.settings import DEFAULT_TARGET_JAX_VERSION, parse_version

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXPECT_RE = re.compile(r"#\s*expect:\s*(REF\d{3}(?:\s*,\s*REF\d{3})*)")
CODE_RE = re.compile(r"^(REF\d{3}) [a-z-]+: ", re.M)
TIMEOUT_S = 300
# Processes at once: one per core.  A run is CPU-bound (importing JAX: ~1 s of user time per
# process, wall = user), so more processes than cores do not help: measured on 2 cores for 45
# fixtures, 2, 3 and 4 workers all took 25-32 s, within the noise of a shared machine.
JOBS = int(os.environ.get("REFLINT_FIXTURE_JOBS", "0")) or max(2, min(8, os.cpu_count() or 2))

#: The one place listing fixtures that cannot run on the installed JAX, with the reason.
#: Keys are glob patterns relative to tests/fixtures/.
MISSING_IN_INSTALLED_JAX: dict[str, str] = {
    "unavailable_jax_api/missing_*.py":
        "REF015 positives linted for the default target JAX (" + DEFAULT_TARGET_JAX_VERSION
        + "): they use removed names (jax.array_ref, jax.experimental.mutable_array, ...), so "
        "on that JAX they stop with AttributeError/ImportError before doing anything else. "
        "REF015 positives that still run are the unavailable_jax_api/target_*.py fixtures "
        "(linted for an older target with `# fixture-target-jax-version:`).",
}


# Third-party libraries some fixtures import; without them installed the fixture is skipped.
OPTIONAL_LIBRARIES = ("flax", "optax", "chex", "equinox", "absl")
IMPORT_RE = re.compile(r"^\s*(?:import|from)\s+(\w+)", re.M)


def runtime_skip(path: Path) -> str | None:
    """Why the fixture is not run: its first-line ``# runtime: skip (...)`` comment, or a code
    no rule has yet; None when it runs."""
    verdict = runtime_verdict(path)
    if verdict is not None and verdict.startswith("skip"):
        return verdict[len("skip"):].strip() or "runtime: skip"
    pending = expected_codes(path) - set(CODES)
    if pending:
        return f"expects {', '.join(sorted(pending))}: no rule yet"
    unchecked = expected_codes(path) - set(ERROR_CLASSES) - set(NOT_ENFORCEABLE)
    if unchecked:
        return f"expects {', '.join(sorted(unchecked))}: no runtime check yet"
    return None


def missing_libraries(path: Path) -> list[str]:
    used = set(IMPORT_RE.findall(path.read_text(encoding="utf-8")))
    return [m for m in OPTIONAL_LIBRARIES
            if m in used and importlib.util.find_spec(m) is None]


def missing_in_installed_jax(path: Path) -> str | None:
    rel = path.relative_to(FIXTURES).as_posix()
    return next((why for pat, why in MISSING_IN_INSTALLED_JAX.items()
                 if fnmatch.fnmatchcase(rel, pat)), None)


# `# runtime: jax<0.11: REF016` — see tests/fixtures/README.md.
RUNTIME_LINE_RE = re.compile(r"^#\s*runtime\s*:.*$", re.M)
# `# runtime: skip (REASON)` is the same mechanism with no version condition: never run.
RUNTIME_RE = re.compile(
    r"^#\s*runtime:\s*(?:jax\s*(<=|>=|==|!=|<|>)\s*(\d+(?:\.\d+){0,3})\s*:\s*"
    r"(ok|error\s+[A-Za-z_][\w.]*|REF\d{3}(?:\s*,\s*REF\d{3})*)|(skip\b.*?))\s*$")
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
            "always": lambda a, b: True}
INSTALLED_JAX = parse_version(jax.__version__.split("+")[0].split("rc")[0].split(".dev")[0])


def runtime_directives(path: Path) -> list[tuple[str, tuple, str]]:
    """The ``# runtime: jax<OP><VERSION>: <VERDICT>`` lines of a fixture, in order, as
    (op, version, verdict).  A malformed ``# runtime`` line raises ValueError."""
    out = []
    for m in RUNTIME_LINE_RE.finditer(path.read_text(encoding="utf-8")):
        d = RUNTIME_RE.match(m.group(0))
        if d is None:
            raise ValueError(f"{path.name}: malformed runtime line {m.group(0)!r} (expected "
                             "e.g. '# runtime: jax<0.11: REF016', ': ok' or ': error TypeError')")
        if d.group(4) is not None:
            out.append(("always", (), d.group(4)))
        else:
            out.append((d.group(1), parse_version(d.group(2)),
                        re.sub(r"\s+", " ", d.group(3))))
    return out


def runtime_verdict(path: Path, installed: tuple = INSTALLED_JAX) -> str | None:
    """The verdict of the first directive whose condition holds for ``installed``, or None
    (then the ``# expect:`` lines decide)."""
    for op, version, verdict in runtime_directives(path):
        if _COMPARE[op](installed, version):
            return verdict
    return None


def fixture_files():
    files = sorted(p for p in FIXTURES.rglob("*.py")
                   if p.name != "__init__.py" and not p.name.startswith("_"))
    return files


def expected_codes(path: Path) -> set[str]:
    codes: set[str] = set()
    for m in EXPECT_RE.finditer(path.read_text(encoding="utf-8")):
        codes.update(c.strip() for c in m.group(1).split(","))
    return codes


def _run(path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["REFLINT_RUNTIME_VERBOSE"] = "1"  # the runner prints the JAX device used on stderr
    # JOBS processes share the device: on a GPU each would take 75 % of its memory at start
    # (XLA's preallocation), and the runs fail with out-of-memory errors and heap corruption
    # (measured on an H200: 218 of 543 failed with it, none without).
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        return subprocess.run([sys.executable, "-m", "reflint.runtime", str(path)],
                              capture_output=True, text=True, env=env, cwd=path.parent,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, -9, e.stdout or "", f"timeout: {e}")


FILES = fixture_files()


@pytest.fixture(scope="module")
def results(request):
    """The runs of the fixtures of the selected tests (all of them, or those chosen with -k),
    as futures: all are started at once (JOBS at a time) and each test waits for its own, so
    the tests report one by one as their runs finish instead of after all of them."""
    chosen = {item.callspec.params["path"] for item in request.session.items
              if getattr(item, "module", None) is request.module
              and "path" in getattr(getattr(item, "callspec", None), "params", {})}
    files = [p for p in FILES if p in chosen and not missing_libraries(p)
             and not runtime_skip(p)]
    pool = ThreadPoolExecutor(max_workers=JOBS)
    try:
        yield {f: pool.submit(_run, f) for f in files}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def test_smoke_fixtures_present():
    smoke = [p for p in FILES if p.parent.name == "runtime_smoke"]
    assert any(expected_codes(p) for p in smoke) and any(not expected_codes(p) for p in smoke)


def test_runtime_directives_parse():
    """Every `# runtime:` line of every fixture is well formed; each names codes that exist."""
    from reflint.codes import CODES

    seen = 0
    for path in FILES:
        for _op, _version, verdict in runtime_directives(path):
            seen += 1
            if verdict.startswith("REF"):
                assert set(re.split(r"\s*,\s*", verdict)) <= set(CODES), path
    assert seen, "no fixture uses a `# runtime:` line"


def test_runtime_verdict_first_match_wins(tmp_path):
    f = tmp_path / "f.py"
    f.write_text('"""doc"""\n# runtime: jax<0.11: REF016\n# runtime: jax>=0.12: error TypeError\n'
                 "x = 1  # expect: REF017\n")
    assert runtime_verdict(f, (0, 10, 2)) == "REF016"
    assert runtime_verdict(f, (0, 11, 2)) is None  # no line holds: `# expect:` decides
    assert runtime_verdict(f, (0, 12, 0, 1)) == "error TypeError"
    f.write_text("# runtime: jax<0.11 REF016\n")
    with pytest.raises(ValueError, match="malformed"):
        runtime_directives(f)


def test_missing_in_installed_jax_patterns_match():
    for pattern in MISSING_IN_INSTALLED_JAX:
        assert any(fnmatch.fnmatchcase(p.relative_to(FIXTURES).as_posix(), pattern)
                   for p in FILES), f"stale pattern {pattern}"


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture_under_runtime(results, path):
    missing = missing_libraries(path)
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (not installed)")
    if runtime_skip(path):
        pytest.skip(runtime_skip(path))
    p = results[path].result()
    device = next((ln for ln in p.stderr.splitlines() if "default device" in ln), "?")
    print(f"{path.relative_to(FIXTURES)}: {device}")
    expected = expected_codes(path)
    found = CODE_RE.findall(p.stderr)
    detail = f"rc={p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-4000:]}"
    verdict = runtime_verdict(path)
    if verdict is not None:  # this JAX's verdict, declared by a `# runtime:` line
        detail = f"verdict for jax {jax.__version__}: {verdict}\n{detail}"
        if verdict == "ok":
            assert p.returncode == 0, detail
        elif verdict.startswith("error "):
            name = verdict.split()[1].rsplit(".", 1)[-1]
            assert p.returncode == 1 and not found, detail
            assert re.search(rf"^(?:[\w.]+\.)?{re.escape(name)}: ", p.stderr, re.M), detail
        else:
            codes = set(re.split(r"\s*,\s*", verdict))
            assert p.returncode == 1 and found and found[0] in codes, detail
        return
    if missing_in_installed_jax(path):
        assert expected == {"REF015"}, "only REF015 positives may use names JAX lacks"
        installed = re.search(r"reflint\.runtime: jax (\S+),", p.stderr)
        if installed and installed.group(1) == DEFAULT_TARGET_JAX_VERSION:
            assert p.returncode == 1 and not found, detail
            assert re.search(r"^(AttributeError|ImportError): ", p.stderr, re.M), detail
        else:  # another JAX is installed: it may have the names
            assert p.returncode == 0 or (p.returncode == 1 and not found), detail
        return
    if not expected:
        assert p.returncode == 0, detail
        return
    if expected <= set(NOT_ENFORCEABLE):
        assert p.returncode == 0 or (p.returncode == 1 and found and found[0] in expected), \
            detail
        return
    assert p.returncode == 1, detail
    assert found, detail
    assert found[0] in expected, detail
