"""pytest support for reflint's runtime checks (not auto-loaded).

Enable it with ``-p reflint.runtime.pytest_plugin`` on the command line or
``pytest_plugins = ["reflint.runtime.pytest_plugin"]`` in a top-level conftest.py.

* the ``reflint_checks`` fixture turns the checks on for one test and yields the
  ``reflint.runtime`` module (so ``pytest.raises(reflint_checks.RefError)`` works);
* ``--reflint-checks`` turns them on for every test;
* ``@pytest.mark.reflint_checks`` turns them on for the marked tests.
"""

from __future__ import annotations

from typing import Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--reflint-checks", action="store_true", default=False,
                     help="run every test with reflint's runtime ref checks installed")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers",
                            "reflint_checks: run this test with reflint's runtime ref checks")


@pytest.fixture
def reflint_checks() -> Iterator[object]:
    """Install reflint's checked ref primitives and transforms for the test."""
    import reflint.runtime as rt

    with rt.checks():
        yield rt


@pytest.fixture(autouse=True)
def _reflint_checks_auto(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.config.getoption("--reflint-checks") or request.node.get_closest_marker(
            "reflint_checks"):
        request.getfixturevalue("reflint_checks")
    yield
