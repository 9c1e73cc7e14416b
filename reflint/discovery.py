"""Which files a run checks: walking the paths named (exclusions, ``.gitignore``, virtual
environments), what is not a regular file (REF904), and reading a file without blocking.

Shared by the command line (reflint.cli) and the language server (reflint.server), neither of
which imports the other for it.
"""

from __future__ import annotations

import errno
import os
import stat

from .config import Resolver
from .settings import DEFAULT_EXCLUDE, Settings

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional


class UsageError(Exception):
    """A run that cannot start as asked (exit 2): a path that does not exist ..."""


def _is_venv(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "pyvenv.cfg"))


PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    """A Jupyter notebook, by its name (reflint.notebook reads it; imported only then)."""
    return str(path).lower().endswith(NOTEBOOK_SUFFIX)


def is_lintable_name(path: str) -> bool:
    """A file reflint checks when it is named: Python source, stub or notebook, or a file
    without a suffix whose first line is a Python shebang (a script)."""
    if path.endswith(PYTHON_SUFFIXES) or is_notebook(path):
        return True
    if "." in os.path.basename(path):
        return False
    try:
        with open(path, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return True  # reported by the checks that open it
    return first.startswith(b"#!") and b"python" in first


def discover(paths: list, resolver: Optional[Resolver] = None, force_exclude: bool = False,
             problems: Optional[list] = None, excluded: Optional[list] = None,
             warnings: Optional[list] = None) -> list:
    """(file, settings) for the Python files under ``paths``.

    Directories matching ``exclude``/``extend-exclude`` (and virtual environments) are not
    walked into. Files and directories named explicitly are checked even when excluded,
    unless ``force_exclude`` (as in ruff). Entries that cannot be checked (an unreadable
    directory, a FIFO, socket or device named ``*.py``, a dangling symbolic link or a link
    loop) are never opened: with ``problems`` (a list), each is appended to it as
    ``(path, settings, reason)`` (reported as REF904); a directory named ``x.py`` is walked.

    Paths ignored by ``.gitignore`` files are not walked into (``respect-gitignore``, as
    ruff; reflint.gitignore). ``excluded`` collects ``(path, pattern)`` for the paths the
    configuration excluded (not the default patterns); ``warnings`` what the user should
    hear about (a named file that is not Python, a named path that is excluded)."""
    from . import gitignore

    resolver = resolver or Resolver()
    out = []

    def note_excluded(path, settings):
        if excluded is not None:
            pattern = settings.excluding_pattern(path)
            if pattern is not None and pattern not in DEFAULT_EXCLUDE:
                excluded.append((os.path.normpath(path), pattern))

    def warn(text):
        if warnings is not None:
            warnings.append(text)

    def problem(path, settings, reason):
        if problems is not None:
            problems.append((path, settings, reason))

    for p in paths:
        if not os.path.isdir(p):
            if not os.path.lexists(p):
                raise UsageError(f"{p}: no such file or directory")
            settings = resolver.for_file(p)
            if force_exclude and excluded_with_parents(p, settings):
                warn(f"{p} is excluded by the configuration (--force-exclude): not checked")
                continue
            if os.path.isfile(p) and not is_lintable_name(p):
                warn(f"{p} is not a Python file or notebook (.py, .pyi, .ipynb): not checked")
                continue
            reason = unfit(p)
            if reason:
                problem(p, settings, reason)
            else:
                out.append((p, settings))
            continue
        if force_exclude and excluded_with_parents(p, resolver.for_dir(p)):
            warn(f"{p} is excluded by the configuration (--force-exclude): not checked")
            continue
        top = resolver.for_dir(p)
        ignore_rules: dict = {}
        if top.respect_gitignore:
            stop = top.root if top.config_file else None
            ignore_rules[os.path.abspath(p)] = gitignore.ancestor_rules(p, stop) + \
                gitignore.read_rules(os.path.abspath(p))

        def walk_error(e: OSError, p=p) -> None:
            where = e.filename or p
            problem(where, resolver.for_dir(os.path.dirname(where) or "."),
                    f"cannot read directory: {e.strerror or e}")

        for root, dirs, files in os.walk(p, onerror=walk_error):
            settings = resolver.for_dir(root)
            rules = ignore_rules.pop(os.path.abspath(root), None)
            kept = []
            for d in sorted(dirs):
                full = os.path.join(root, d)
                if _is_venv(full):
                    continue
                if resolver.for_dir(full).is_excluded(full):
                    note_excluded(full, resolver.for_dir(full))
                    continue
                if rules and gitignore.ignored(rules, os.path.abspath(full), True):
                    continue
                kept.append(d)
                if rules is not None:
                    ignore_rules[os.path.abspath(full)] = rules + \
                        gitignore.read_rules(os.path.abspath(full))
            dirs[:] = kept
            for f in sorted(files):
                if f.endswith((".py", ".pyi", NOTEBOOK_SUFFIX)):
                    path = os.path.normpath(os.path.join(root, f))
                    if settings.is_excluded(path):
                        note_excluded(path, settings)
                        continue
                    if rules and gitignore.ignored(rules, os.path.abspath(path), False):
                        continue
                    reason = unfit(path)
                    if reason is None:
                        out.append((path, settings))
                    elif reason:
                        problem(path, settings, reason)
    seen = set()
    unique = []
    for f, s in out:
        key = os.path.normpath(f)
        if key not in seen:
            seen.add(key)
            unique.append((f, s))
    return unique


def unfit(path: str) -> Optional[str]:
    """Why ``path`` cannot be checked (without opening it), "" for a directory (skipped
    quietly: it is walked, not read), or None for a regular file."""
    try:
        st = os.stat(path)
    except OSError as e:
        if os.path.islink(path):
            if e.errno == errno.ELOOP:
                return "symbolic link loop"
            return f"dangling symbolic link (to {os.readlink(path)!r})"
        return f"cannot read file: {e.strerror or e}"
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return ""
    kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) \
        else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
    return f"{kind}, not a regular file"


def read_source_file(path: str, max_size: int) -> bytes:
    """The bytes of ``path``, never blocking: raises ``Unfit`` (reported as REF904) for what
    is not a regular file or is larger than ``max_size`` bytes, OSError if it cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unfit("not a regular file")
        if st.st_size > max_size:
            raise Unfit(f"file too large ({st.st_size:,} bytes; max-file-size is "
                        f"{max_size:,})")
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_size:  # grew while read
                raise Unfit(f"file too large (more than max-file-size, {max_size:,} bytes)")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class Unfit(Exception):
    """A file reflint does not check (REF904); the message says why."""


def excluded_with_parents(path: str, settings: Settings) -> bool:
    """``--force-exclude``: the path or one of its directories (below the root) is excluded."""
    path = os.path.abspath(path)
    root = os.path.abspath(settings.root or os.getcwd())
    while True:
        if settings.is_excluded(path):
            return True
        parent = os.path.dirname(path)
        if parent == path or not parent.startswith(root) or parent == root:
            return False
        path = parent
