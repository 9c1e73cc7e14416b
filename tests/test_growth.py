"""The cost of checking module-level code grows linearly with the file (issue 29).

Each shape of bench/growth.py (an exported notebook, module-level item assignment,
concatenated generated programs, a deep ``a ** a ** ...`` chain) is checked at n and 4n
units. The work is counted, not timed: the number of Python and C function calls made while
checking (``sys.setprofile`` on this thread and on the large-stack thread reflint analyses big
files on) is the same on every run and on any machine, so a loaded CI machine cannot fail the
test. The ratio must stay well under the 16 of a quadratic cost (a linear cost gives about 4).
Work done inside one C call (a quadratic ``list.index`` loop, say) is not counted: the timings of
``python bench/growth.py`` cover that.
"""

from __future__ import annotations

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import growth  # noqa: E402

from reflint.engine import lint_source  # noqa: E402
from reflint.settings import Settings  # noqa: E402

# n and 4n: a quadratic cost gives a ratio near 16, a linear one near 4.
SIZES = {"notebook": 200, "items": 200, "programs": 250, "power": 500}
MAX_RATIO = 5.5


def _calls(source: str) -> int:
    """Function calls (Python and C) made while checking ``source``: deterministic work."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call" or event == "c_call":
            count += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        lint_source(source, "case.py", Settings())
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return count


@pytest.mark.parametrize("case", sorted(SIZES))
def test_module_level_code_is_linear(case):
    make = growth.CASES[case]
    n = SIZES[case]
    small, large = make(n), make(4 * n)
    lint_source(make(20), "warm.py", Settings())  # first-use costs (imports, caches)
    w_small, w_large = _calls(small), _calls(large)
    ratio = w_large / w_small
    assert ratio < MAX_RATIO, (f"{case}: {n} units {w_small} calls, {4 * n} units "
                               f"{w_large} calls (x{ratio:.1f}): super-linear")


def test_shapes_have_findings():
    """The shapes exercise the rules whose per-finding work used to be quadratic."""
    codes = {c: {d.code for d in lint_source(growth.CASES[c](60), "c.py",
                                             Settings()).diagnostics} for c in SIZES}
    assert "REF013" in codes["items"]
    assert codes["notebook"] and "REF900" not in codes["notebook"]
    assert codes["programs"]
