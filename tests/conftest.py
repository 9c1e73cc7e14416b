import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# The seed doc's error examples (tests/runtime_examples/errN_*.py) and the code each must get,
# statically and at run time; the ok_*.py examples must get none.
SEED_EXAMPLE_CODES = {
    "err1_return_ref.py": "REF001",
    "err2_passed_twice.py": "REF002",
    "err3_closed_and_passed.py": "REF003",
    "err4_freeze_jit_arg.py": "REF004",
    "err5_vmap_closed_write.py": "REF005",
    "err6_diff_into_plumbing.py": "REF008",
}
EXPECT = re.compile(r"#\s*expect:\s*(REF\d{3}(?:\s*,\s*REF\d{3})*)")


def fixture_files():
    out = []
    for root, _, files in os.walk(FIXTURES):
        for f in sorted(files):
            if f.endswith(".py") and not f.startswith("_"):
                out.append(os.path.join(root, f))
    return sorted(out)


def installed_sources() -> list:
    """(path, source) of every ``.py`` file of the installed jax and, when present, flax,
    sorted by package then path: real code nobody here wrote."""
    import glob

    import jax

    from reflint.engine import decode

    roots = [os.path.dirname(jax.__file__)]
    try:
        import flax

        roots.append(os.path.dirname(flax.__file__))
    except ImportError:
        pass
    out = []
    for root in roots:
        for p in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
            with open(p, "rb") as fh:
                out.append((p, decode(fh.read())))
    return out


def expectations(source: str) -> set:
    exp = set()
    for i, line in enumerate(source.splitlines(), start=1):
        m = EXPECT.search(line)
        if m:
            for code in re.split(r"\s*,\s*", m.group(1)):
                exp.add((i, code))
    return exp


# A fixture may lint against another JAX version than the default target with a line
# `# fixture-target-jax-version: 0.7.1` (REF015 fixtures: code written for another JAX that
# still runs on the installed one).
TARGET = re.compile(r"^#\s*fixture-target-jax-version:\s*([0-9.]+)\s*$", re.M)


def fixture_settings(source: str, **kwargs):
    from reflint.settings import Settings, parse_version

    m = TARGET.search(source)
    if m:
        kwargs["target_jax_version"] = parse_version(m.group(1))
    return Settings(**kwargs)


def strip_expect_comments(source: str) -> str:
    return re.sub(r"[ \t]*#\s*expect:[^\n]*", "", source)


def reflint_cmd():
    exe = shutil.which("reflint", path=os.path.dirname(sys.executable)) or shutil.which("reflint")
    return [exe] if exe else [sys.executable, "-m", "reflint"]


def run_reflint(*args, cwd=None, input=None):
    return subprocess.run(reflint_cmd() + list(args), capture_output=True, text=True, cwd=cwd,
                          input=input, timeout=300)


@pytest.fixture
def reflint():
    return run_reflint
