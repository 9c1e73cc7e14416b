"""End to end: every fixture under tests/fixtures/ runs through ``python -m reflint.runtime``.

A fixture with ``# expect: REFxxx[, REFyyy]`` lines must fail (exit 1) with a RefError whose
code is one of its expected codes; a fixture without them must exit 0.  Codes listed in
``reflint.runtime.NOT_ENFORCEABLE`` are only checked to run: exit 0, or exit 1 with one of
the expected codes.  Runs on the default JAX device (JAX_PLATFORMS is left alone).

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

from reflint.codes import CODES
from reflint.runtime import ERROR_CLASSES, NOT_ENFORCEABLE
from reflint.settings import DEFAULT_TARGET_JAX_VERSION

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
OPTIONAL_LIBRARIES = ("flax", "optax", "chex", "equinox")
IMPORT_RE = re.compile(r"^\s*(?:import|from)\s+(\w+)", re.M)


RUNTIME_SKIP_RE = re.compile(r"\A#\s*runtime:\s*skip\b\s*(.*)")


def runtime_skip(path: Path) -> str | None:
    """Why the fixture is not run: its first-line ``# runtime: skip (...)`` comment, or a code
    no rule has yet; None when it runs."""
    text = path.read_text(encoding="utf-8")
    m = RUNTIME_SKIP_RE.match(text)
    if m:
        return m.group(1).strip() or "runtime: skip"
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
    try:
        return subprocess.run([sys.executable, "-m", "reflint.runtime", str(path)],
                              capture_output=True, text=True, env=env, cwd=path.parent,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, -9, e.stdout or "", f"timeout: {e}")


FILES = fixture_files()


@pytest.fixture(scope="module")
def results(request):
    """Run the fixtures of the selected tests (all of them, or those chosen with -k)."""
    chosen = {item.callspec.params["path"] for item in request.session.items
              if getattr(item, "module", None) is request.module
              and "path" in getattr(getattr(item, "callspec", None), "params", {})}
    files = [p for p in FILES if p in chosen and not missing_libraries(p)
             and not runtime_skip(p)]
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        return dict(zip(files, pool.map(_run, files)))


def test_smoke_fixtures_present():
    smoke = [p for p in FILES if p.parent.name == "runtime_smoke"]
    assert any(expected_codes(p) for p in smoke) and any(not expected_codes(p) for p in smoke)


def test_missing_in_installed_jax_patterns_match():
    for pattern in MISSING_IN_INSTALLED_JAX:
        assert any(fnmatch.fnmatchcase(p.relative_to(FIXTURES).as_posix(), pattern)
                   for p in FILES), f"stale pattern {pattern}"


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture_under_runtime(results, path):
    missing = missing_libraries(path)
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (not installed)")
    if runtime_skip(path):
        pytest.skip(runtime_skip(path))
    p = results[path]
    device = next((ln for ln in p.stderr.splitlines() if "default device" in ln), "?")
    print(f"{path.relative_to(FIXTURES)}: {device}")
    expected = expected_codes(path)
    found = CODE_RE.findall(p.stderr)
    detail = f"rc={p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-4000:]}"
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
