"""The runner: ``python -m reflint.runtime SCRIPT [ARGS...]`` / ``reflint run``."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from typing import Sequence

USAGE = """usage: python -m reflint.runtime [-v] SCRIPT [ARGS...]

Run SCRIPT (as __main__, with sys.argv = [SCRIPT, ARGS...]) with reflint's checked
JAX ref primitives and transforms installed.  Exit 1 with the REFxxx message on
stderr when a check fires; otherwise exit as the program does.

  -v, --verbose   print the JAX version and default device on stderr at start
                  (same as REFLINT_RUNTIME_VERBOSE=1)
"""

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_frames(tb: object) -> list[traceback.FrameSummary]:
    import jax

    jax_dir = os.path.dirname(os.path.abspath(jax.__file__))
    frames = traceback.extract_tb(tb)  # type: ignore[arg-type]
    keep = [f for f in frames
            if not (f.filename.startswith(_PKG_DIR) or f.filename.startswith(jax_dir)
                    or f.filename.endswith(("runpy.py", "contextlib.py"))
                    or "<frozen" in f.filename)]
    return keep or frames


def _find_ref_error(exc: BaseException):  # -> RefError | None
    from reflint.runtime.errors import translate

    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        err = translate(e)
        if err is not None:
            return err, e
        e = e.__cause__ or e.__context__
    return None, None


def _report(exc: BaseException) -> None:
    err, origin = _find_ref_error(exc)
    out = sys.stderr
    if err is None:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=out)
        return
    tb = exc.__traceback__ if err is exc else (origin.__traceback__ or exc.__traceback__)
    frames = _user_frames(tb)
    if os.environ.get("REFLINT_RUNTIME_VERBOSE") and err is not exc:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=out)
        out.write("\n")
    out.write("Traceback (most recent call last, reflint and JAX frames hidden):\n")
    out.write("".join(traceback.format_list(frames)))
    out.write(f"{err}\n")
    out.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run a script with the checks installed; return the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = bool(os.environ.get("REFLINT_RUNTIME_VERBOSE"))
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag in ("-v", "--verbose"):
            verbose = True
        elif flag in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        elif flag == "--":
            break
        else:
            sys.stderr.write(f"reflint.runtime: unknown option {flag}\n{USAGE}")
            return 2
    if not args:
        sys.stderr.write(USAGE)
        return 2
    script = args[0]
    if not os.path.exists(script):
        sys.stderr.write(f"reflint.runtime: no such file: {script}\n")
        return 2

    from reflint.runtime._checks import install, uninstall

    old_argv, old_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *args[1:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    install()
    try:
        if verbose:
            import jax

            sys.stderr.write(f"reflint.runtime: jax {jax.__version__}, default device "
                             f"{jax.devices()[0]} (backend {jax.default_backend()})\n")
            sys.stderr.flush()
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            code = e.code
            if code is None:
                return 0
            if isinstance(code, int):
                return code
            sys.stderr.write(f"{code}\n")
            return 1
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - reported like the interpreter would
            _report(e)
            return 1
        return 0
    finally:
        sys.stdout.flush()
        uninstall()
        sys.argv, sys.path[:] = old_argv, old_path
