"""Resolved settings of one run (and of one file: per-file-ignores, see ``for_path``)."""

from __future__ import annotations

import os

from ._record import field, record, replace
from .codes import CODES, OPT_IN_CODES

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

# The measured versions (reflint/api.py MEASURED_VERSIONS); the default target is the newest.
SUPPORTED_JAX_VERSIONS = ("0.7.1", "0.7.2", "0.8.0", "0.9.0", "0.10.2", "0.11.2", "0.12.0.1")
DEFAULT_TARGET_JAX_VERSION = SUPPORTED_JAX_VERSIONS[-1]

# Directories never walked into (a file named on the command line is still checked).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    "node_modules", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".reflint_cache", ".eggs", "__pypackages__", "*.egg-info",
)


def parse_version(text: str) -> tuple:
    parts = []
    for p in str(text).strip().split("."):
        if not p.isdigit():
            raise ValueError(f"invalid JAX version {text!r} (expected e.g. 0.10.2)")
        parts.append(int(p))
    if not 1 <= len(parts) <= 4:  # 0.12.0.1 has four
        raise ValueError(f"invalid JAX version {text!r} (expected e.g. 0.10.2)")
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def default_select() -> frozenset:
    return frozenset(c for c in CODES if c not in OPT_IN_CODES)


@record
class Settings:
    """The rules and options a check runs with (from flags and configuration)."""

    select: frozenset = field(default_factory=default_select)
    target_jax_version: tuple = parse_version(DEFAULT_TARGET_JAX_VERSION)
    # Where the target version comes from (--show-settings): a flag, the configuration, the
    # project's JAX requirement, the installed JAX, or the default (reflint.jaxversion).
    target_jax_source: str = "default: the newest measured version"
    unsafe_fixes: bool = False
    # ((glob pattern, frozenset of codes), ...): codes ignored in the files a pattern matches.
    per_file_ignores: tuple = ()
    exclude: tuple = DEFAULT_EXCLUDE
    extend_exclude: tuple = ()
    # Directory that patterns are relative to (the configuration file's directory or cwd).
    root: str = ""
    config_file: Optional[str] = None
    # Files larger than this many bytes are reported (REF904) and not read.
    max_file_size: int = 2_000_000
    # Paths ignored by .gitignore files are not walked into (ruff's respect-gitignore).
    respect_gitignore: bool = True

    def enabled(self, code: str) -> bool:
        return code in self.select

    def key(self) -> str:
        """A stable string for cache keys."""
        pfi = ";".join(f"{p}={','.join(sorted(c))}" for p, c in self.per_file_ignores)
        return "|".join([",".join(sorted(self.select)),
                         ".".join(map(str, self.target_jax_version)), str(self.unsafe_fixes),
                         pfi, self.root])

    # -- per file ----------------------------------------------------------------------

    def for_path(self, path: str) -> "Settings":
        """These settings with the per-file-ignores that match ``path`` applied."""
        if not self.per_file_ignores or not path or path == "-":
            return self
        ignored = set()
        for pattern, codes in self.per_file_ignores:
            if path_matches(path, pattern, self.root):
                ignored |= codes
        if not ignored:
            return replace(self, per_file_ignores=())
        return replace(self, select=frozenset(self.select - ignored), per_file_ignores=())

    def excluding_pattern(self, path: str) -> Optional[str]:
        """The ``exclude``/``extend-exclude`` pattern that excludes ``path`` (or None)."""
        return next((p for p in tuple(self.exclude) + tuple(self.extend_exclude)
                     if path_matches(path, p, self.root, ancestors=False)), None)

    def is_excluded(self, path: str) -> bool:
        """Whether ``path`` itself (a file or directory, not its parents) matches ``exclude``
        or ``extend-exclude``."""
        return any(path_matches(path, p, self.root, ancestors=False)
                   for p in tuple(self.exclude) + tuple(self.extend_exclude))


def expand_codes(items, include_opt_in: bool = False) -> set:
    """Expand a list of codes, prefixes or names (REF, REF00, REF001, ref-returned, ALL).

    Opt-in codes (``OPT_IN_CODES``) are selected only when named exactly, unless
    ``include_opt_in`` (used for ``ignore``: ``ignore = ["REF"]`` ignores everything)."""
    opt_in = frozenset() if include_opt_in else OPT_IN_CODES
    out = set()
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"expected a rule code, got {item!r}")
        item = item.strip()
        if not item:
            raise ValueError("empty rule code (an unset variable?)")
        if item.upper() == "ALL":
            out |= set(CODES) - set(opt_in)
            continue
        exact = {c for c in CODES if c == item.upper()} | {c for c, n in CODES.items()
                                                           if n == item}
        matched = exact or {c for c in CODES if c.startswith(item.upper())
                            and c not in opt_in}
        if not matched and not any(c.startswith(item.upper()) for c in CODES):
            raise ValueError(f"unknown rule code or prefix: {item}")
        out |= matched
    return out


# -- path patterns ----------------------------------------------------------------------------

def _glob_regex(pattern: str):
    """The compiled glob (reflint.globs: linear-time matching; ``.match(text)``). An invalid
    pattern (rejected when the configuration is read) matches nothing."""
    from .globs import GlobError, compile_glob

    try:
        return compile_glob(pattern)
    except GlobError:
        return _NOTHING


class _Nothing:
    @staticmethod
    def match(text: str) -> bool:
        return False


_NOTHING = _Nothing()


def path_matches(path: str, pattern: str, root: str = "", ancestors: bool = True) -> bool:
    """Match a path against a pattern the way ruff and flake8 users expect.

    A pattern without ``/`` (``build``, ``*_pb2.py``) matches any component of the path. A
    pattern with ``/`` (``tests/**``, ``src/gen/*.py``, ``tests/``) matches the path relative to
    ``root`` (the configuration file's directory). With ``ancestors``, a pattern also matches
    the files below a matching directory (per-file-ignores); without, only the path itself
    (exclusion while walking, where excluded directories are pruned)."""
    pattern = pattern.replace(os.sep, "/")
    if not ancestors and "/" not in pattern.rstrip("/"):
        # The file or directory's own name (the common case: every file is tested against
        # every exclude pattern while walking).
        name = os.path.basename(os.path.normpath(path))
        if name in ("", ".", ".."):
            name = os.path.basename(os.path.abspath(path))
        return bool(_glob_regex(pattern.rstrip("/")).match(name))
    abspath = os.path.abspath(path)
    base = os.path.abspath(root or os.getcwd())
    rel = os.path.relpath(abspath, base).replace(os.sep, "/")
    if "/" not in pattern.rstrip("/"):
        pat = pattern.rstrip("/")
        # Inside the root: the path's components below the root; outside: its basename.
        parts = rel.split("/") if not rel.startswith("..") else [os.path.basename(abspath)]
        rx = _glob_regex(pat)
        if not ancestors:
            return bool(rx.match(os.path.basename(abspath)))
        return any(rx.match(p) for p in parts if p and p != "..")
    if rel.startswith(".."):
        return False
    pat = pattern[2:] if pattern.startswith("./") else pattern
    if pat.startswith("/"):
        pat = os.path.relpath(pat, base).replace(os.sep, "/")
    pat = pat.rstrip("/")
    rx = _glob_regex(pat)
    if not ancestors:
        return bool(rx.match(rel))
    parts = rel.split("/")
    return any(rx.match("/".join(parts[:i])) for i in range(len(parts), 0, -1))
