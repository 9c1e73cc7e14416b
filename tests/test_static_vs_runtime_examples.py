"""The seed doc's examples: the static verdict matches what the runtime companion raises
(tests/test_runtime_runner.py runs the same programs), and reflint's own repository is clean."""

import os

import pytest

from conftest import ROOT, SEED_EXAMPLE_CODES, run_reflint
from reflint.engine import lint_source
from reflint.settings import Settings

EXAMPLES = os.path.join(ROOT, "tests", "runtime_examples")
EXPECTED = SEED_EXAMPLE_CODES


@pytest.mark.parametrize("name", sorted(os.listdir(EXAMPLES)))
def test_seed_example_static_verdict(name):
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as fh:
        codes = {d.code for d in lint_source(fh.read(), name, Settings()).diagnostics}
    assert codes == ({EXPECTED[name]} if name in EXPECTED else set())


def test_repository_lints_itself_clean():
    r = run_reflint("check", "--no-cache", ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
