"""The result cache: diagnostics of one file, keyed by everything they depend on.

A key is the SHA-256 of: the cache format, reflint's version and a hash of reflint's own source
files (rules included, so editing a rule invalidates every entry), the resolved settings
(``Settings.key()``), the path as given on the command line (it is part of every diagnostic)
and the file's bytes. An entry is one small JSON file ``<dir>/v1/<key[:2]>/<key>.json`` holding
the key, the path and the diagnostics (``Diagnostic.to_json``).

Robustness: an entry that cannot be read, does not parse, names another key or path, or does
not deserialize is a miss, never trusted. Entries are written to a temporary file in the same
folder and moved into place with ``os.replace``, so concurrent runs never see half an entry
(the last writer wins; both wrote the same content). A cache that cannot be written (read-only
file system, permissions) is silently skipped.

Authenticity (docs/guarantees.md): a cache entry can hide a finding, so an entry is trusted
only when it carries an HMAC-SHA256 of its key and content under a secret of this machine and
user (32 random bytes in ``$XDG_CACHE_HOME/reflint/secret``, else ``~/.cache/reflint/secret``,
mode 0600, created on first use, outside any checked tree; ``REFLINT_CACHE_SECRET`` names
another file). An entry written elsewhere (committed to a repository, copied from another
machine, forged from the key, which anyone can compute) fails the check and is a miss. Without
a usable secret the cache is off. The cache folder is not used when it, or a folder under it,
is a symbolic link (nothing is read or written through one), nor when git tracks a file in it
(a committed ``.reflint_cache``).

Module summaries (reflint.summary, the summary phase of a project run) are cached too, keyed by
the fingerprint, the module's path and name and the file's bytes: ``<dir>/v1/s/<key[:2]>/<key>``,
a pickle behind the same HMAC (checked before anything is unpickled: an entry this machine's
reflint did not write is a miss, never loaded).

Stale entries are never pruned automatically: delete the folder (``rm -rf .reflint_cache``) to
reclaim the space.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
import tempfile
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from . import __version__
from .diagnostics import Diagnostic

FORMAT = "v1"
DEFAULT_DIR_NAME = ".reflint_cache"
ENV_CACHE_DIR = "REFLINT_CACHE_DIR"
ENV_SECRET = "REFLINT_CACHE_SECRET"
SECRET_BYTES = 32

_FINGERPRINT: Optional[str] = None
MISS = object()  # Cache.get_summary: no usable entry


def fingerprint() -> str:
    """reflint's version plus a hash of every source file of reflint and its rules."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        h = hashlib.sha256(f"reflint {__version__} cache {FORMAT}\0".encode())
        dirs = [os.path.dirname(os.path.abspath(__file__))]
        try:
            import reflint.rules as rules_pkg

            dirs.extend(os.path.abspath(p) for p in rules_pkg.__path__)
        except ImportError:  # pragma: no cover - broken install
            pass
        for i, d in enumerate(dirs):
            try:
                names = sorted(n for n in os.listdir(d) if n.endswith(".py"))
            except OSError:  # pragma: no cover
                continue
            for n in names:
                try:
                    with open(os.path.join(d, n), "rb") as fh:
                        data = fh.read()
                except OSError:  # pragma: no cover
                    continue
                h.update(f"{i}/{n}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
                h.update(data)
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def project_root(start: Optional[str] = None) -> str:
    """The nearest ancestor of ``start`` (default: the cwd) holding pyproject.toml or .git;
    ``start`` itself when there is none."""
    start = os.path.abspath(start or os.getcwd())
    d = start
    while True:
        if os.path.exists(os.path.join(d, "pyproject.toml")) or \
                os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return start
        d = parent


def default_cache_dir() -> str:
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return env
    return os.path.join(project_root(), DEFAULT_DIR_NAME)


def secret_path() -> str:
    env = os.environ.get(ENV_SECRET)
    if env:
        return os.path.abspath(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "reflint", "secret")


def load_secret(path: Optional[str] = None) -> Optional[bytes]:
    """This machine's cache secret (created if absent), or None when it cannot be had: the
    file is a link, not a regular file, not ours, readable by others or too short, or
    cannot be created."""
    path = path or secret_path()
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(2):
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            if not _create_secret(path):
                return None
            continue
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        if not stat.S_ISREG(st.st_mode) or len(data) < SECRET_BYTES:
            return None
        if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
            return None
        return data
    return None


def _create_secret(path: str) -> bool:
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
    except FileExistsError:
        return True  # another run created it meanwhile
    except OSError:
        return False
    try:
        os.write(fd, os.urandom(SECRET_BYTES))
    finally:
        os.close(fd)
    return True


def tracked_by_git(directory: str) -> bool:
    """Whether git's index (of the work tree holding ``directory``) lists a file under
    ``directory``: a cache committed to the repository. Reads the index file (no git
    process): a conservative byte search for the folder's path, relative to the work tree."""
    d = os.path.abspath(directory)
    top = os.path.dirname(d)
    while True:
        dot_git = os.path.join(top, ".git")
        if os.path.lexists(dot_git):
            break
        parent = os.path.dirname(top)
        if parent == top:
            return False
        top = parent
    git_dir = dot_git
    if os.path.isfile(dot_git):  # a worktree or submodule: "gitdir: <path>"
        try:
            with open(dot_git, encoding="utf-8", errors="replace") as fh:
                line = fh.readline().strip()
        except OSError:
            return False
        if not line.startswith("gitdir:"):
            return False
        git_dir = os.path.join(top, line[len("gitdir:"):].strip())
    rel = os.path.relpath(d, top).replace(os.sep, "/")
    try:
        with open(os.path.join(git_dir, "index"), "rb") as fh:
            index = fh.read()
    except OSError:
        return False
    return (rel + "/").encode("utf-8", "surrogateescape") in index


class Cache:
    """Per-file results on disk. ``get``/``put`` never raise for I/O or content problems."""

    def __init__(self, directory: Optional[str] = None, secret: Optional[bytes] = None):
        self.directory = os.path.abspath(directory or default_cache_dir())
        self.root = os.path.join(self.directory, FORMAT)
        self._writable: Optional[bool] = None
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.summary_hits = 0
        self.summary_misses = 0
        self._secret = secret
        self.disabled: Optional[str] = None  # why the cache is off, or None
        if self._secret is None:
            self._secret = load_secret()
        if self._secret is None:
            self.disabled = (f"no usable cache secret ({secret_path()}): the cache is off")
        elif self._linked():
            self.disabled = f"{self.directory} is (or holds) a symbolic link: the cache is off"
        elif tracked_by_git(self.directory):
            self.disabled = (f"{self.directory} is tracked by git (a committed cache): it is "
                             f"ignored; remove it from the repository")
        if self.disabled and self.disabled.startswith(self.directory):
            print(f"reflint: warning: {self.disabled}", file=sys.stderr)

    def _linked(self) -> bool:
        for p in (self.directory, self.root):
            try:
                if stat.S_ISLNK(os.lstat(p).st_mode):
                    return True
            except OSError:
                pass
        return False

    def _mac(self, key: str, path: str, items) -> str:
        body = json.dumps([key, path, items], separators=(",", ":"), sort_keys=True)
        return hmac.new(self._secret, body.encode("utf-8", "surrogateescape"),
                        hashlib.sha256).hexdigest()

    # -- keys ------------------------------------------------------------------------------

    def key(self, path: str, data: bytes, settings, project: str = "") -> str:
        """``project``: the digest of the facts the file reads from other modules
        (reflint.project), "" for none."""
        h = hashlib.sha256()
        h.update(fingerprint().encode())
        h.update(b"\0")
        h.update(settings.key().encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(path.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(data)
        if project:
            h.update(b"\0project\0" + project.encode())
        return h.hexdigest()

    def _entry(self, key: str) -> str:
        return os.path.join(self.root, key[:2], f"{key}.json")

    # -- reading ---------------------------------------------------------------------------

    def get(self, key: str, path: str) -> Optional[list]:
        """The cached diagnostics, or None on a miss (absent, unreadable or foreign entry)."""
        if self.disabled:
            return None
        try:
            raw = _read_entry(self._entry(key), 1 << 24)
            entry = json.loads(raw)
            if not isinstance(entry, dict) or entry.get("key") != key or \
                    entry.get("path") != path:
                raise ValueError("foreign entry")
            items = entry["diagnostics"]
            if not isinstance(items, list):
                raise ValueError("bad entry")
            mac = entry.get("mac")
            if not isinstance(mac, str) or \
                    not hmac.compare_digest(mac, self._mac(key, path, items)):
                raise ValueError("not written by this machine's reflint")
            diags = [Diagnostic.from_json(d) for d in items]
            for d in diags:
                if d.path != path or not _well_typed(d):
                    raise ValueError("bad entry")
        except Exception:  # noqa: BLE001 - any problem: a miss
            self.misses += 1
            return None
        self.hits += 1
        return diags

    # -- writing ---------------------------------------------------------------------------

    def _ensure_root(self) -> bool:
        if self.disabled:
            return False
        if self._writable is None:
            try:
                os.makedirs(self.root, exist_ok=True)
                gitignore = os.path.join(self.directory, ".gitignore")
                if not os.path.exists(gitignore):
                    self._atomic_write(gitignore, b"# Automatically created by reflint.\n*\n")
                self._writable = True
            except OSError:
                self._writable = False
        return self._writable

    def put(self, key: str, path: str, diagnostics: list) -> None:
        if not self._ensure_root():
            return
        items = [d.to_json(resolve=False) for d in diagnostics]
        data = json.dumps({"key": key, "path": path, "diagnostics": items,
                           "mac": self._mac(key, path, items)},
                          separators=(",", ":")).encode("utf-8", "surrogateescape")
        target = self._entry(key)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if self._linked() or stat.S_ISLNK(os.lstat(os.path.dirname(target)).st_mode):
                return  # never written through a link
            self._atomic_write(target, data)
            self.writes += 1
        except OSError:
            pass

    # -- module summaries ---------------------------------------------------------------------

    def summary_key(self, path: str, module: str, data: bytes) -> str:
        h = hashlib.sha256()
        h.update(fingerprint().encode())
        h.update(b"\0summary\0")
        h.update(f"{os.path.abspath(path)}\0{module}\0".encode("utf-8", "surrogateescape"))
        h.update(data)
        return h.hexdigest()

    def _summary_entry(self, key: str) -> str:
        return os.path.join(self.root, "s", key[:2], key)

    def _summary_mac(self, key: str, payload: bytes) -> bytes:
        return hmac.new(self._secret, key.encode() + b"\0" + payload, hashlib.sha256).digest()

    def get_summary(self, key: str):
        """The cached summary (a ``reflint.summary.ModuleSummary``, or None for a module
        that does not parse), or ``MISS``."""
        if self.disabled:
            return MISS
        try:
            raw = _read_entry(self._summary_entry(key), 1 << 26)
            mac, payload = raw[:32], raw[32:]
            expected = self._summary_mac(key, payload)
            if len(mac) != 32 or not hmac.compare_digest(mac, expected):
                raise ValueError("not written by this machine's reflint")
            import pickle

            got = pickle.loads(payload)
            from .summary import ModuleSummary

            if got is not None and not isinstance(got, ModuleSummary):
                raise ValueError("bad entry")
        except Exception:  # noqa: BLE001 - any problem: a miss
            self.summary_misses += 1
            return MISS
        self.summary_hits += 1
        return got

    def put_summary(self, key: str, summary) -> None:
        if not self._ensure_root():
            return
        try:
            import pickle

            payload = pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an unpicklable summary is not cached
            return
        target = self._summary_entry(key)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if self._linked() or stat.S_ISLNK(os.lstat(os.path.dirname(target)).st_mode):
                return
            self._atomic_write(target, self._summary_mac(key, payload) + payload)
        except OSError:
            pass

    @staticmethod
    def _atomic_write(target: str, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def _well_typed(d: Diagnostic) -> bool:
    """Every field of a cached diagnostic has its type (valid JSON can hold anything: an entry
    that does not is a miss, never a crash in the output)."""
    ints = (d.line, d.column, d.end_line, d.end_column)
    if not all(type(v) is int for v in ints) or \
            not all(isinstance(v, str) for v in (d.code, d.name, d.message)):
        return False
    if d.fix is not None:
        f = d.fix
        if not isinstance(f.message, str) or not isinstance(f.applicability, str):
            return False
        if getattr(f, "resolved", True) is False:  # a LazyFix: its key names the finding
            k = f.key
            if not (len(k) == 3 and type(k[0]) is int and type(k[1]) is int and
                    isinstance(k[2], str)):
                return False
        for e in (f.edits if getattr(f, "resolved", True) else ()):
            if not all(type(v) is int for v in (e.line, e.column, e.end_line, e.end_column)) \
                    or not isinstance(e.content, str):
                return False
    if d.related is not None:
        r = d.related
        if type(r.line) is not int or type(r.column) is not int or \
                not isinstance(r.message, str):
            return False
    return True


def _read_entry(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the cache entry at ``path``, never through a symlink (of
    the entry or of its folder): ``ValueError``/``OSError`` otherwise."""
    if stat.S_ISLNK(os.lstat(os.path.dirname(path)).st_mode):
        raise ValueError("linked folder")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit)
