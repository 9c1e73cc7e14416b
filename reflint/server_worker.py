"""What ``reflint server`` runs in its worker processes: the same calls as ``reflint check``.

Kept apart from reflint.server so that a worker imports neither pygls nor the protocol types,
and light itself (the engine is imported by the first call, not by this module): the server
process imports it at launch, before it has imported anything heavy, to name the functions
its workers run.
"""

from __future__ import annotations

import gc
from typing import Optional


# The paths whose last text this worker analysed (the `ast` stage let it through, or a rule
# found something): the next text of the same document, a keystroke later, is analysed
# without asking the stage again.
_ANALYSED: dict = {}
MAX_ANALYSED = 256


def lint_text(text: str, path: str, settings) -> list:
    """The diagnostics of ``text`` as ``reflint check`` reports them for a file ``path``
    with these bytes (``reflint.cli._lint_task``: a failure is a REF903, not an exception).

    A fix's edits are not built (they take libcst's own parse and a second analysis): its
    message and applicability are known, the edits come from ``fix_edits`` when a code
    action asks for them (a LazyFix). A notebook's findings keep built fixes (the server
    maps them onto its cells). A path whose last text was analysed is analysed without the
    `ast` stage's walk (``lint_source(ask_gate=False)``: the same findings, a walk less per
    keystroke)."""
    from .engine import internal_error, lint_source

    enabled = gc.isenabled()
    gc.disable()  # as in the CLI: a syntax tree is many young objects without cycles
    try:
        ask = not _ANALYSED.get(path, False)
        result = lint_source(text, path, settings, lazy_fixes=not path.endswith(".ipynb"),
                             ask_gate=ask)
        if len(_ANALYSED) >= MAX_ANALYSED and path not in _ANALYSED:
            _ANALYSED.clear()
        # Analysed because the gate said so, or with a rule's finding (which the gate lets
        # through): a text analysed unasked without one asks the gate next time.
        _ANALYSED[path] = result.stage == "analysed" and (
            ask or any(not d.code.startswith("REF9") for d in result.diagnostics))
        return result.diagnostics
    except Exception as e:  # noqa: BLE001 - one bad text must not stop the server
        return [internal_error(path, e)]
    finally:
        if enabled:
            gc.enable()
            gc.collect(0)


def analyse_text(text: str, path: str, settings) -> tuple:
    """(``lint_text``'s diagnostics, the text's line facts for reusing them after an edit
    that only changes a comment: reflint.server_reuse.line_facts)."""
    from .server_reuse import line_facts

    return lint_text(text, path, settings), line_facts(text)


def analyse_notebook(program: str, path: str, settings) -> tuple:
    """``analyse_text`` of a notebook's joined cells (reflint.notebook): the diagnostics are
    on the program's lines; the server maps them to the cells."""
    if not program.strip():
        return [], None
    return analyse_text(program, path, settings)


def fix_edits(text: str, path: str, settings, keys: list) -> dict:
    """{key: the edits of the fix of the finding ``key`` (line, column, code) of ``text``}
    for a LazyFix of ``lint_text``; a finding without a fix (or gone) maps to ()."""
    from .engine import FixSource

    enabled = gc.isenabled()
    gc.disable()
    try:
        source = FixSource(text, path, settings)
        out = {}
        for key in keys:
            fix = source.fix_for(tuple(key))
            out[tuple(key)] = tuple(fix.edits) if fix is not None else ()
        return out
    finally:
        if enabled:
            gc.enable()
            gc.collect(0)


def fix_text(text: str, path: str, settings) -> tuple:
    """``reflint check --fix`` on ``text``: (fixed text or None, number of fixes, error)."""
    from .engine import fix_source

    try:
        outcome = fix_source(text, path, settings)
    except Exception as e:  # noqa: BLE001
        return None, 0, f"{type(e).__name__}: {e}"
    if outcome.error or not outcome.fixed:
        return None, 0, outcome.error
    return outcome.source, outcome.fixed, None


def warm_up() -> Optional[str]:
    """Import the analysis now (a worker's first document is then as fast as the
    next ones): lint a tiny program with a finding."""
    from .settings import Settings

    lint_text("import jax\n\ndef f(x):\n    r = jax.new_ref(x)\n    return r\n", "warm.py",
              Settings())
    return None


def watch_parent(server_pid: int) -> None:
    """A worker's initializer: end this process when the server is gone (killed with
    SIGKILL, it cannot stop its workers itself). A daemon thread checks every second that
    the parent is still the server."""
    import os
    import threading
    import time

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != server_pid:
                os._exit(0)

    threading.Thread(target=watch, name="reflint-watch-parent", daemon=True).start()
