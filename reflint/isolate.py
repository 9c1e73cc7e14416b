"""Checking in a process that may die without taking the run down (docs/guarantees.md).

libcst's parser is native code: a crash in it (a segmentation fault, an abort when an
allocation fails) ends the process it runs in. So every file's check runs in a child process
forked from the one that holds the run (``map_isolated``; ``call_isolated`` for one call,
used for one file, standard input and ``--fix``): when the child dies, the file it was
checking is reported and a new child goes on with the files left. A fork of the running
process (imports already done, copy-on-write memory) costs about a millisecond or two of
start-up (``bench/startup.py`` measures it), paid once per run, plus once per crash.

The child has a memory limit (``RLIMIT_AS``): the address space it starts with plus
``REFLINT_MAX_MEMORY`` (default 3 GiB, which includes the 1 GiB stack reserved for deep
files; ``0`` turns the limit off). A file that needs more gets a ``MemoryError`` (or its
native allocation fails and the child aborts): REF904 for that file, the run goes on.

Where ``fork`` is not available (Windows, macOS, where forking a process with system
frameworks loaded is unsafe) or ``REFLINT_ISOLATE=0``, everything runs in this process, as
before.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Callable, Iterable, Optional

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None  # type: ignore[assignment]

DEFAULT_MAX_MEMORY = 3 * 1024 ** 3
_HEADER = struct.Struct("<Q")


def enabled() -> bool:
    """Whether checks run in a forked child."""
    if os.environ.get("REFLINT_ISOLATE", "1").strip() in ("0", "no", "false", "off"):
        return False
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def memory_budget() -> Optional[int]:
    """Bytes of address space a child may add to what it starts with (None: no limit).
    ``REFLINT_MAX_MEMORY``: a size like ``3GiB`` or ``500MB``, or ``0`` for no limit; a value
    that is not a size is ignored (the default applies)."""
    raw = os.environ.get("REFLINT_MAX_MEMORY", "").strip()
    if not raw:
        return DEFAULT_MAX_MEMORY
    if raw == "0":
        return None
    from .config import parse_size

    try:
        return parse_size(raw)
    except ValueError:
        return DEFAULT_MAX_MEMORY


def limit_memory(budget: Optional[int] = None) -> Optional[int]:
    """Limit this process's address space to what it uses now plus ``budget`` bytes (the
    default: ``memory_budget()``). Returns the limit set, or None."""
    budget = memory_budget() if budget is None else budget
    if not budget or resource is None:
        return None
    try:
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
    limit = used + budget
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft != resource.RLIM_INFINITY and soft < limit:
            return soft
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        return None
    return limit


class Died(Exception):
    """The child checking an item died: ``how`` says how (a signal or an exit status)."""

    def __init__(self, how: str, signum: Optional[int] = None):
        super().__init__(how)
        self.how = how
        self.signum = signum

    @property
    def memory(self) -> bool:
        """Whether the death looks like an exhausted memory limit (an abort when a native
        allocation failed, or the out-of-memory killer)."""
        return self.signum in (signal.SIGABRT, signal.SIGKILL)


def _status(status: int) -> Died:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return Died(f"killed by {name}", sig)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return Died(f"exited with status {code}")


def map_isolated(fn: Callable, items: list, keep_last: bool = False) -> Iterable:
    """``(item, fn(item))`` for each item, in order, computed in a forked child (one child
    for all the items, a new one after a crash). When the child dies during an item,
    ``(item, Died)`` is yielded for that item and the next child starts after it. An
    exception raised by ``fn`` is re-raised here. Without isolation, runs in this process.
    ``keep_last``: what ``fn`` leaves to ``limits.keep_until_exit`` on the last item is not
    freed (the child exits then; a check's trees, not the passes of a fix)."""
    if not items:
        return
    if not enabled():
        for item in items:
            yield item, fn(item)
        return
    start = 0
    while start < len(items):
        got = 0
        for index, ok, value in _child_run(fn, items, start, keep_last):
            got += 1
            if ok == "died":
                yield items[index], value
            elif ok == "raised":
                raise value
            else:
                yield items[index], value
        if got == 0:  # could not fork at all: the rest here
            for item in items[start:]:
                yield item, fn(item)
            return
        start = index + 1


def _child_run(fn: Callable, items: list, start: int, keep_last: bool = False):
    """Run ``fn`` on ``items[start:]`` in a child; yield (index, "ok"/"raised", value) per
    item, then, if the child died before the end, (index, "died", Died) for the item it was
    on. Yields nothing if the child could not be started."""
    try:
        r, w = os.pipe()
    except OSError:
        return
    budget = memory_budget()  # read here: the child imports nothing
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if budget:
                limit_memory(budget)
            with os.fdopen(w, "wb") as out:
                for i in range(start, len(items)):
                    if keep_last and i == len(items) - 1:
                        from . import limits

                        limits.exit_after_this_file()  # (os._exit below frees it all)
                    try:
                        msg = (i, "ok", fn(items[i]))
                    except BaseException as e:  # noqa: BLE001 - re-raised in the parent
                        msg = (i, "raised", e)
                    try:
                        data = pickle.dumps(msg, pickle.HIGHEST_PROTOCOL)
                    except Exception as e:  # noqa: BLE001 - an unpicklable exception
                        data = pickle.dumps((i, "raised", RuntimeError(repr(e))))
                    out.write(_HEADER.pack(len(data)))
                    out.write(data)
                    out.flush()
                    if msg[1] == "raised":
                        break
        except BaseException:  # noqa: BLE001 - the parent reports the item
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    index = start
    finished = False
    ok = None
    try:
        with os.fdopen(r, "rb") as inp:
            while True:
                head = inp.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    break
                (n,) = _HEADER.unpack(head)
                data = inp.read(n)
                if len(data) < n:
                    break
                i, ok, value = pickle.loads(data)
                index = i + 1
                yield i, ok, value
                if ok == "raised":
                    break
        finished = True
    finally:
        if not finished:  # the caller stopped early (or an error here): end the child
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _, status = _wait(pid)
    if ok == "raised":
        return
    if index < len(items):
        yield index, "died", _status(status)


def _wait(pid: int):
    while True:
        try:
            return os.waitpid(pid, 0)
        except InterruptedError:  # pragma: no cover - retried by Python itself
            continue
        except ChildProcessError:
            return pid, 0


def call_isolated(fn: Callable, *args):
    """``fn(*args)`` in a forked child: its value, or a ``Died`` instance when the child
    died. Exceptions propagate. Without isolation, runs here."""
    for _, value in map_isolated(lambda a: fn(*a), [args]):
        return value
    return None  # pragma: no cover


class Worker:
    """A forked child kept between calls: ``call(*args)`` runs ``fn(*args)`` there, so a crash
    costs one call (a ``Died`` is returned and the next call forks a new child) while the
    child's imports and caches stay warm from one call to the next. For callers that get
    their items one at a time (the flake8 plugin). Arguments and results are pickled; a
    process forked from this one (flake8's own workers) starts its own child."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self._owner = None  # the pid that started the child
        self._pid = 0
        self._to = self._from = None

    def call(self, *args):
        if not enabled():
            return self.fn(*args)
        if self._owner != os.getpid():
            self._start()
        try:
            _send(self._to, args)
            reply = _receive(self._from)
        except OSError:
            reply = None
        if reply is None:  # the child died on this call
            return self._reap()
        ok, value = reply
        if ok == "raised":
            raise value
        return value

    def _start(self) -> None:
        self._forget()
        budget = memory_budget()
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: serves calls until its input ends; never returns
            code = 0
            try:
                os.close(down_w)
                os.close(up_r)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                if budget:
                    limit_memory(budget)
                with os.fdopen(down_r, "rb") as inp, os.fdopen(up_w, "wb") as out:
                    while True:
                        args = _receive(inp)
                        if args is None:
                            break
                        try:
                            msg = ("ok", self.fn(*args))
                        except BaseException as e:  # noqa: BLE001 - re-raised in the parent
                            msg = ("raised", e)
                        _send(out, msg)
            except BaseException:  # noqa: BLE001 - the parent sees the pipe close
                code = 70
            finally:
                os._exit(code)
        os.close(down_r)
        os.close(up_w)
        self._owner, self._pid = os.getpid(), pid
        self._to, self._from = os.fdopen(down_w, "wb"), os.fdopen(up_r, "rb")

    def _forget(self) -> None:
        """Drop the pipes of a child this process does not own (inherited through a fork) or
        that has died."""
        for f in (self._to, self._from):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        self._to = self._from = None
        self._owner = None

    def _reap(self) -> Died:
        self._forget()
        try:
            os.kill(self._pid, signal.SIGKILL)
        except OSError:
            pass
        _, status = _wait(self._pid)
        return _status(status)

    def close(self) -> None:
        if self._owner == os.getpid():
            self._forget()  # the child sees its input end and exits
            _wait(self._pid)


def _send(out, obj) -> None:
    try:
        data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - an unpicklable value or exception
        data = pickle.dumps(("raised", RuntimeError(repr(e))))
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def _receive(inp):
    """The next object on ``inp``, or None at its end."""
    head = inp.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (n,) = _HEADER.unpack(head)
    data = inp.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


def out_of_memory(path: str):
    """REF904 for a file whose check needed more memory than the per-file limit."""
    from .engine import not_checked

    budget = memory_budget()
    limit = f" ({budget / 1024 ** 3:.1f} GiB, REFLINT_MAX_MEMORY)" if budget else ""
    return not_checked(path, f"checking it needs more memory than the per-file limit{limit}")


def describe_death(path: str, died: Died):
    """The diagnostic for a file whose checking process died: REF904 when it looks like the
    memory limit (an abort or a kill), REF903 otherwise (a crash in native code: a bug)."""
    from .engine import internal_error

    if died.memory:
        budget = memory_budget()
        limit = f" of {budget / 1024 ** 3:.1f} GiB (REFLINT_MAX_MEMORY)" if budget else ""
        from .engine import not_checked

        return not_checked(path, f"the process checking it was {died.how}, most likely over "
                                 f"the per-file memory limit{limit}")
    return internal_error(path, RuntimeError(
        f"the process checking this file was {died.how} (a crash in native code)"))


def lint_bytes(data: bytes, path: str, settings):
    """``engine.lint_bytes`` in a child process: a crash or the memory limit costs a
    diagnostic, not the run (one file, standard input)."""
    from .engine import FileResult, lint_bytes as lint

    res = call_isolated(_lint_bytes_total, lint, data, path, settings)
    if isinstance(res, Died):
        return FileResult(path, [describe_death(path, res)])
    return res


def _lint_bytes_total(lint, data, path, settings):
    from .engine import FileResult, internal_error

    try:
        return lint(data, path, settings)
    except MemoryError:
        return FileResult(path, [out_of_memory(path)])
    except (Exception, RecursionError) as e:  # noqa: BLE001 - one file only
        return FileResult(path, [internal_error(path, e)])


def preload() -> None:
    """Import what checking a file needs here, once, so that each forked child inherits it
    instead of importing it again (``--fix`` forks once per fixed file)."""
    global _PRELOADED
    if _PRELOADED:
        return
    _PRELOADED = True
    from .engine import fix_source as fix
    from .settings import Settings

    # One small fix imports libcst, the analysis and the rules, and fills their first-use
    # tables, in this process: every child starts warm.
    fix("import jax\nx_ref = jax.new_ref(1.0)\ny = x_ref + 1\n", "warm.py", Settings())


_PRELOADED = False


def fix_source(source: str, path: str, settings):
    """``engine.fix_source`` in a child process; when the child dies (or runs out of memory)
    nothing is fixed and ``error`` says why."""
    return fix_sources([(source, path, settings)])[0]


def fix_sources(items: list) -> list:
    """``engine.fix_source(source, path, settings)`` for each item, all in one child process
    (a new one after a crash): the outcomes, in order. A file whose fixing kills the child
    or exhausts the memory limit is left unchanged, and its outcome's ``error`` says why."""
    from .engine import FixOutcome

    if not items:
        return []
    if enabled():
        preload()
    out = []
    for (source, path, _), res in map_isolated(_fix_total, items):
        if isinstance(res, Died):
            res = FixOutcome(source, 0, [], f"the process fixing it was {res.how}; file left "
                                            f"unchanged")
        out.append(res)
    return out


def _fix_total(item):
    from .engine import FixOutcome, fix_source as fix

    source, path, settings = item
    try:
        return fix(source, path, settings)
    except MemoryError:
        return FixOutcome(source, 0, [], "fixing it needs more memory than the per-file "
                                         "limit; file left unchanged")
