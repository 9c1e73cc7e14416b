"""Limits that keep one hostile file from taking the run down (docs/guarantees.md).

* ``call_deep``: the per-file work (fast tree, analysis, rules, libcst's native parser) runs
  on a thread with a large stack and a raised recursion limit when the source is big enough
  to nest deeply, so deep-but-valid code (a 50,000-term ``x + x + ...`` is a binary-operator
  tree 50,000 levels deep) is analysed instead of overflowing the C stack; anything deeper
  still ends in a ``RecursionError`` (reported for that file), never in a segmentation fault.
* ``nesting``: a cheap measure of bracket and unary-operator nesting, used before libcst's
  native parser is ever given text that CPython's parser rejected (libcst's parser overflows
  its stack on a few thousand nested levels).
* ``DEFAULT_MAX_FILE_SIZE``: files above it are reported (REF904) and not read.
"""

from __future__ import annotations

import io
import sys
import threading

DEFAULT_MAX_FILE_SIZE = 2_000_000  # bytes; `max-file-size`, `--max-file-size`

# Sources shorter than this cannot nest deeper than the default limits allow: run inline.
DEEP_SOURCE_CHARS = 4_000
# The thread stack and recursion limit for bigger sources: a Python-level recursion costs at
# most a few hundred bytes of C stack (3.11 inlines Python-to-Python calls), so the limit
# stays far below what the stack can hold.
DEEP_STACK_BYTES = 1024 * 1024 * 1024
DEEP_RECURSION_LIMIT = 400_000

# Above this bracket/unary nesting, text that CPython rejected never reaches libcst's parser.
LIBCST_MAX_NESTING = 150

_LOCK = threading.Lock()
_DEEP_THREAD = "reflint-deep"

# A forked child checking its last file (reflint.isolate) exits right after it (``os._exit``):
# the file's trees and analysis are then left here (``keep_until_exit``) rather than freed
# object by object, a few percent of a one-file check.
_KEPT_UNTIL_EXIT: "list | None" = None


def exit_after_this_file() -> None:
    """This process ends (``os._exit``) once the file it checks next is done."""
    global _KEPT_UNTIL_EXIT
    _KEPT_UNTIL_EXIT = []


def keep_until_exit(*objects) -> bool:
    """Keep ``objects`` alive until the process exits, if it exits after this file (nothing
    to free, nor to take apart): whether they are kept."""
    kept = _KEPT_UNTIL_EXIT
    if kept is None:
        return False
    kept.extend(objects)
    return True


def call_deep(fn, *args, size: int = 0, **kwargs):
    """``fn(*args, **kwargs)``, on a large-stack thread when ``size`` (the source's length)
    allows deep nesting. Exceptions propagate to the caller."""
    if size < DEEP_SOURCE_CHARS or threading.current_thread().name == _DEEP_THREAD:
        return fn(*args, **kwargs)  # small, or already on the large stack (no re-locking)
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            box["error"] = e

    with _LOCK:  # the recursion limit is per interpreter: one deep call at a time
        old_stack = threading.stack_size()
        old_limit = sys.getrecursionlimit()
        try:
            threading.stack_size(DEEP_STACK_BYTES)
            t = threading.Thread(target=run, name=_DEEP_THREAD, daemon=True)
            t.start()
        except (RuntimeError, ValueError, MemoryError):  # no such stack here: run inline
            threading.stack_size(old_stack)
            return fn(*args, **kwargs)
        threading.stack_size(old_stack)
        sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
        try:
            t.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["value"]


_UNARY = frozenset({"-", "+", "~"})
_UNARY_WORDS = frozenset({"not", "await", "lambda", "yield"})


def nesting(source: str) -> int:
    """The deepest bracket nesting plus the longest run of prefix operators (``- - x``,
    ``not not x``) in ``source``, from its tokens; tokenizer errors end the count there."""
    import tokenize  # (only for text CPython's parser rejected)

    depth = best = run = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            tp, text = tok.type, tok.string
            if tp == tokenize.OP:
                if text in "([{":
                    depth += 1
                elif text in ")]}":
                    depth = max(0, depth - 1)
                if text in _UNARY:
                    run += 1
                else:
                    run = 0
            elif tp == tokenize.NAME and text in _UNARY_WORDS:
                run += 1
            elif tp not in (tokenize.NL, tokenize.COMMENT):
                run = 0
            if depth + run > best:
                best = depth + run
    except (tokenize.TokenError, SyntaxError, IndentationError, MemoryError, RecursionError):
        pass
    return best
