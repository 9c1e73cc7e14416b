"""End to end: every fixture under tests/fixtures/ runs through ``python -m reflint.runtime``.

A fixture with ``# expect: REFxxx[, REFyyy]`` lines must fail (exit 1) with a RefError whose
code is one of its expected codes; a fixture without them must exit 0.  Codes listed in
``reflint.runtime.NOT_ENFORCEABLE`` are only checked to run: exit 0, or exit 1 with one of
the expected codes.  Runs on the default JAX device (JAX_PLATFORMS is left alone).
"""

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reflint.runtime import NOT_ENFORCEABLE

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
EXPECT_RE = re.compile(r"#\s*expect:\s*(REF\d{3}(?:\s*,\s*REF\d{3})*)")
CODE_RE = re.compile(r"^(REF\d{3}) [a-z-]+: ", re.M)
TIMEOUT_S = 300


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
def results():
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(FILES, pool.map(_run, FILES)))


def test_smoke_fixtures_present():
    smoke = [p for p in FILES if p.parent.name == "runtime_smoke"]
    assert any(expected_codes(p) for p in smoke) and any(not expected_codes(p) for p in smoke)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_fixture_under_runtime(results, path):
    p = results[path]
    device = next((ln for ln in p.stderr.splitlines() if "default device" in ln), "?")
    print(f"{path.relative_to(FIXTURES)}: {device}")
    expected = expected_codes(path)
    found = CODE_RE.findall(p.stderr)
    detail = f"rc={p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-4000:]}"
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
