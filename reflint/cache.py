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

Stale entries are never pruned automatically: delete the folder (``rm -rf .reflint_cache``) to
reclaim the space.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Optional

from . import __version__
from .diagnostics import Diagnostic

FORMAT = "v1"
DEFAULT_DIR_NAME = ".reflint_cache"
ENV_CACHE_DIR = "REFLINT_CACHE_DIR"

_FINGERPRINT: Optional[str] = None


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


class Cache:
    """Per-file results on disk. ``get``/``put`` never raise for I/O or content problems."""

    def __init__(self, directory: Optional[str] = None):
        self.directory = os.path.abspath(directory or default_cache_dir())
        self.root = os.path.join(self.directory, FORMAT)
        self._writable: Optional[bool] = None
        self.hits = 0
        self.misses = 0
        self.writes = 0

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
        try:
            with open(self._entry(key), "rb") as fh:
                raw = fh.read()
            entry = json.loads(raw)
            if not isinstance(entry, dict) or entry.get("key") != key or \
                    entry.get("path") != path:
                raise ValueError("foreign entry")
            items = entry["diagnostics"]
            if not isinstance(items, list):
                raise ValueError("bad entry")
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
        data = json.dumps({"key": key, "path": path,
                           "diagnostics": [d.to_json() for d in diagnostics]},
                          separators=(",", ":")).encode()
        target = self._entry(key)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            self._atomic_write(target, data)
            self.writes += 1
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
        for e in f.edits:
            if not all(type(v) is int for v in (e.line, e.column, e.end_line, e.end_column)) \
                    or not isinstance(e.content, str):
                return False
    if d.related is not None:
        r = d.related
        if type(r.line) is not int or type(r.column) is not int or \
                not isinstance(r.message, str):
            return False
    return True
