"""The cost of checking module-level code grows linearly with the file (issue 29).

Each shape of bench/growth.py (an exported notebook, module-level item assignment,
concatenated generated programs, a deep ``a ** a ** ...`` chain) is checked at n and 4n
units; the CPU time ratio must stay well under the 16 of a quadratic cost (a linear cost
gives about 4). Ratios, not absolute times: the test holds on a slow or loaded machine.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import growth  # noqa: E402

from reflint.engine import lint_source  # noqa: E402
from reflint.settings import Settings  # noqa: E402

# n and 4n: a quadratic cost gives a ratio near 16, a linear one near 4.
SIZES = {"notebook": 200, "items": 200, "programs": 250, "power": 500}
MAX_RATIO = 6.5


def _cpu(source: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        lint_source(source, "case.py", Settings())
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("case", sorted(SIZES))
def test_module_level_code_is_linear(case):
    make = growth.CASES[case]
    n = SIZES[case]
    small, large = make(n), make(4 * n)
    lint_source(make(20), "warm.py", Settings())  # first-use costs (imports, caches)
    t_small = _cpu(small, 3)
    t_large = _cpu(large, 2)
    floor = 0.02  # below this, timer resolution dominates
    ratio = t_large / max(t_small, floor)
    assert ratio < MAX_RATIO, (f"{case}: {n} units {t_small:.2f} s, {4 * n} units "
                               f"{t_large:.2f} s (x{ratio:.1f}): super-linear")


def test_shapes_have_findings():
    """The shapes exercise the rules whose per-finding work used to be quadratic."""
    codes = {c: {d.code for d in lint_source(growth.CASES[c](60), "c.py",
                                             Settings()).diagnostics} for c in SIZES}
    assert "REF013" in codes["items"]
    assert codes["notebook"] and "REF900" not in codes["notebook"]
    assert codes["programs"]
