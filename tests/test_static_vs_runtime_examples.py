"""The seed doc's examples: the static verdict matches what the runtime companion raises
(tests/test_runtime_runner.py runs the same programs), and reflint's own repository is clean."""

import os

import pytest

from conftest import ROOT, run_reflint
from reflint.engine import lint_source
from reflint.settings import Settings

EXAMPLES = os.path.join(ROOT, "tests", "runtime_examples")
EXPECTED = {
    "err1_return_ref.py": "REF001",
    "err2_passed_twice.py": "REF002",
    "err3_closed_and_passed.py": "REF003",
    "err4_freeze_jit_arg.py": "REF004",
    "err5_vmap_closed_write.py": "REF005",
    "err6_diff_into_plumbing.py": "REF008",
}


@pytest.mark.parametrize("name", sorted(os.listdir(EXAMPLES)))
def test_seed_example_static_verdict(name):
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as fh:
        codes = {d.code for d in lint_source(fh.read(), name, Settings()).diagnostics}
    assert codes == ({EXPECTED[name]} if name in EXPECTED else set())


def test_repository_lints_itself_clean():
    r = run_reflint("check", "--no-cache", ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
