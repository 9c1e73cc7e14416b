"""``[tool.reflint]`` in pyproject.toml: discovery, validation, and merging with CLI flags.

The nearest ``pyproject.toml`` with a ``[tool.reflint]`` table, searched upward from each
file's directory (or the working directory), configures that file; ``--config PATH``
configures every file. Patterns in ``exclude`` and ``per-file-ignores`` are relative to the
configuration file's directory. Command-line flags override the file: ``--select`` replaces
the file's selection (``select``, ``extend-select`` and ``ignore``), ``--extend-select`` and
``--ignore`` add to it.
"""

from __future__ import annotations

import os
import re
import sys

from . import jaxversion
from ._lazy import lazy, lazy_re
from ._record import record
from .limits import DEFAULT_MAX_FILE_SIZE
from .settings import (DEFAULT_EXCLUDE, Settings, default_select,
                       expand_codes, parse_version)

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

# Imported when a configuration is read.
tomllib = lazy("tomllib" if sys.version_info >= (3, 11) else "tomli")

KNOWN_KEYS = ("select", "extend-select", "ignore", "per-file-ignores", "exclude",
              "extend-exclude", "target-jax-version", "max-file-size", "unsafe-fixes",
              "respect-gitignore")
CONFIG_NAME = "pyproject.toml"


class ConfigError(Exception):
    """An invalid configuration: reported with exit code 2."""


@record
class Overrides:
    """What the command line says; None = not given."""

    select: Optional[list] = None
    extend_select: Optional[list] = None
    ignore: Optional[list] = None
    target_jax_version: Optional[str] = None
    exclude: Optional[list] = None
    extend_exclude: Optional[list] = None
    unsafe_fixes: Optional[bool] = None  # None: the configuration's (default false)
    report_unused_noqa: bool = False
    max_file_size: Optional[int] = None
    respect_gitignore: Optional[bool] = None


def _split(text: Optional[str]) -> Optional[list]:
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


_SIZE = lazy_re(r"^\s*(\d+)\s*(|b|kb|k|mb|m|gb|g|kib|mib|gib)\s*$", re.I)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000 ** 2, "mb": 1000 ** 2,
          "g": 1000 ** 3, "gb": 1000 ** 3, "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3}


def parse_size(value) -> int:
    """A size in bytes: an integer, or a string like "2MB", "500kB", "1MiB"."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size like 2000000 or \"2MB\", got {value!r}")
    if isinstance(value, int):
        n = value
    else:
        m = _SIZE.match(str(value))
        if not m:
            raise ValueError(f"expected a size like 2000000 or \"2MB\", got {value!r}")
        n = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if n <= 0:
        raise ValueError(f"a size must be positive, got {value!r}")
    return n


def overrides_from_args(args) -> Overrides:
    select = getattr(args, "select", None)
    if select is not None and not _split(select):
        raise ConfigError(f"--select {select!r} selects no rule (an unset variable?); "
                          f"use --select ALL, or name codes")
    size = getattr(args, "max_file_size", None)
    if size is not None:
        try:
            size = parse_size(size)
        except ValueError as e:
            raise ConfigError(f"--max-file-size: {e}") from None
    return Overrides(
        max_file_size=size,
        select=_split(getattr(args, "select", None)),
        extend_select=_split(getattr(args, "extend_select", None)),
        ignore=_split(getattr(args, "ignore", None)),
        target_jax_version=getattr(args, "target_jax_version", None),
        exclude=_split(getattr(args, "exclude", None)),
        extend_exclude=_split(getattr(args, "extend_exclude", None)),
        unsafe_fixes=getattr(args, "unsafe_fixes", None),
        respect_gitignore=getattr(args, "respect_gitignore", None),
        report_unused_noqa=bool(getattr(args, "report_unused_noqa", False)),
    )


def _has_reflint_table(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            text = fh.read()
    except OSError:
        return False
    if b"tool.reflint" not in text and b"reflint" not in text:
        return False
    return load_table(path) is not None


def find_config(start: str) -> Optional[str]:
    """The nearest pyproject.toml with a [tool.reflint] table in ``start`` or above."""
    d = os.path.abspath(start)
    while True:
        candidate = os.path.join(d, CONFIG_NAME)
        if os.path.isfile(candidate) and _has_reflint_table(candidate):
            return candidate
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def load_table(path: str) -> Optional[dict]:
    """The ``[tool.reflint]`` table of a TOML file (None if it has none)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte {e.object[e.start]:#04x} "
                          f"at offset {e.start})") from None
    except (RecursionError, MemoryError):
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    tool = data.get("tool")
    if not isinstance(tool, dict):
        return None
    table = tool.get("reflint")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.reflint] must be a table")
    return table


def _str_list(path, key, value) -> list:
    if isinstance(value, str) or not isinstance(value, list) or \
            not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [tool.reflint] {key} must be a list of strings, "
                          f"got {value!r}")
    return value


def _codes(path, key, value, include_opt_in=False) -> set:
    try:
        return expand_codes(_str_list(path, key, value), include_opt_in=include_opt_in)
    except ValueError as e:
        raise ConfigError(f"{path}: [tool.reflint] {key}: {e}") from None


def _check_globs(where: str, patterns) -> None:
    """Each pattern is a valid glob (reflint.globs), else a one-line error naming the key."""
    from .globs import check

    for pattern in patterns:
        why = check(pattern)
        if why:
            raise ConfigError(f"{where}: invalid pattern {pattern!r}: {why}")


def validate(table: dict, path: str) -> dict:
    """Check keys and value types; returns the table with codes expanded."""
    unknown = sorted(k for k in table if k not in KNOWN_KEYS)
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        raise ConfigError(f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {names} in "
                          f"[tool.reflint] (known keys: {', '.join(KNOWN_KEYS)})")
    out: dict = {}
    for key in ("select", "extend-select"):
        if key in table:
            out[key] = _codes(path, key, table[key])
    if "ignore" in table:
        out["ignore"] = _codes(path, "ignore", table["ignore"], include_opt_in=True)
    for key in ("exclude", "extend-exclude"):
        if key in table:
            out[key] = tuple(_str_list(path, key, table[key]))
            _check_globs(f"{path}: [tool.reflint] {key}", out[key])
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{path}: [tool.reflint] per-file-ignores must be a table of "
                              f"pattern = [codes], got {pfi!r}")
        _check_globs(f"{path}: [tool.reflint] per-file-ignores", list(pfi))
        out["per-file-ignores"] = tuple(
            (pattern, frozenset(_codes(path, f"per-file-ignores {pattern!r}", codes,
                                       include_opt_in=True)))
            for pattern, codes in pfi.items())
    for key in ("unsafe-fixes", "respect-gitignore"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{path}: [tool.reflint] {key} must be true or false, got "
                                  f"{table[key]!r}")
            out[key] = table[key]
    if "max-file-size" in table:
        try:
            out["max-file-size"] = parse_size(table["max-file-size"])
        except ValueError as e:
            raise ConfigError(f"{path}: [tool.reflint] max-file-size: {e}") from None
    if "target-jax-version" in table:
        v = table["target-jax-version"]
        if not isinstance(v, str):
            raise ConfigError(f"{path}: [tool.reflint] target-jax-version must be a string "
                              f"like \"0.10.2\", got {v!r}")
        try:
            out["target-jax-version"] = parse_version(v)
        except ValueError as e:
            raise ConfigError(f"{path}: [tool.reflint] target-jax-version: {e}") from None
    return out


def build_settings(table: Optional[dict], config_file: Optional[str], cli: Overrides,
                   start: Optional[str] = None) -> Settings:
    """Merge defaults, a validated [tool.reflint] table and the command line. Without a
    configured target JAX version, it is inferred for the code under ``start`` (default: the
    configuration's directory, or the working directory): reflint.jaxversion."""
    table = table or {}
    select = set(table.get("select", default_select()))
    select |= table.get("extend-select", set())
    select -= table.get("ignore", set())
    try:
        if cli.select is not None:
            select = expand_codes(cli.select)
        if cli.extend_select:
            select |= expand_codes(cli.extend_select)
        if cli.report_unused_noqa:
            select.add("REF902")
        if cli.ignore:
            select -= expand_codes(cli.ignore, include_opt_in=True)
        if cli.target_jax_version:
            version = parse_version(cli.target_jax_version)
            why = "from --target-jax-version"
        elif "target-jax-version" in table:
            version = table["target-jax-version"]
            why = f"from {config_file} [tool.reflint]"
        else:
            version = None
    except ValueError as e:
        raise ConfigError(str(e)) from None
    _check_globs("--exclude", cli.exclude or ())
    _check_globs("--extend-exclude", cli.extend_exclude or ())
    exclude = tuple(cli.exclude) if cli.exclude is not None else \
        table.get("exclude", DEFAULT_EXCLUDE)
    extend_exclude = table.get("extend-exclude", ()) + tuple(cli.extend_exclude or ())
    root = os.path.dirname(os.path.abspath(config_file)) if config_file else os.getcwd()
    if version is None:
        version, why = jaxversion.infer(start or root)
    return Settings(select=frozenset(select), target_jax_version=version,
                    target_jax_source=why,
                    unsafe_fixes=cli.unsafe_fixes if cli.unsafe_fixes is not None else
                    table.get("unsafe-fixes", False),
                    respect_gitignore=cli.respect_gitignore
                    if cli.respect_gitignore is not None else
                    table.get("respect-gitignore", True),
                    per_file_ignores=table.get("per-file-ignores", ()),
                    exclude=exclude, extend_exclude=extend_exclude, root=root,
                    config_file=config_file,
                    max_file_size=cli.max_file_size or table.get("max-file-size",
                                                                 DEFAULT_MAX_FILE_SIZE))


class Resolver:
    """Settings per directory: the nearest configuration, or the one given with --config."""

    def __init__(self, cli: Optional[Overrides] = None, config_path: Optional[str] = None):
        self.cli = cli or Overrides()
        self.config_path = config_path
        self._by_config: dict = {}
        self._by_dir: dict = {}
        if config_path is not None:
            if not os.path.isfile(config_path):
                raise ConfigError(f"{config_path}: no such configuration file")
            self._fixed = self._settings_for_config(os.path.abspath(config_path))

    def _settings_for_config(self, config_file: Optional[str],
                             start: Optional[str] = None) -> Settings:
        """The settings of ``config_file``; without one, those of the project around
        ``start`` (its declared JAX requirement sets the target version)."""
        # The project's declared JAX requirement is looked up from the directory itself (the
        # nearest pyproject.toml or requirements*.txt, which need not hold [tool.reflint]).
        found = None
        if start is not None and not self.cli.target_jax_version:
            found = jaxversion.declared(start)
        if found is None:
            start = None  # the same answer for every directory of this configuration
        key = (config_file, found)
        s = self._by_config.get(key)
        if s is None:
            table = None
            if config_file is not None:
                raw = load_table(config_file)
                if raw is None and self.config_path is not None:
                    raw = {}  # --config on a file without [tool.reflint]: defaults
                table = validate(raw or {}, config_file)
            s = build_settings(table, config_file, self.cli, start)
            self._by_config[key] = s
        return s

    def for_dir(self, directory: str) -> Settings:
        if self.config_path is not None:
            return self._fixed
        d = os.path.abspath(directory)
        s = self._by_dir.get(d)
        if s is None:
            s = self._settings_for_config(find_config(d), d)
            self._by_dir[d] = s
        return s

    def for_file(self, path: str) -> Settings:
        return self.for_dir(os.path.dirname(os.path.abspath(path)))


def show_settings(settings: Settings) -> str:
    """``reflint check --show-settings``: the resolved settings, one per line."""
    lines = [
        f"config-file = {settings.config_file or '(none: defaults)'}",
        f"root = {settings.root}",
        f"select = [{', '.join(sorted(settings.select))}]",
        f"target-jax-version = {'.'.join(map(str, settings.target_jax_version))}"
        f"  # {settings.target_jax_source}",
        f"exclude = [{', '.join(settings.exclude)}]",
        f"extend-exclude = [{', '.join(settings.extend_exclude)}]",
        "per-file-ignores = {" + ", ".join(f"{p!r}: [{', '.join(sorted(c))}]"
                                           for p, c in settings.per_file_ignores) + "}",
        f"unsafe-fixes = {str(settings.unsafe_fixes).lower()}",
        f"respect-gitignore = {str(settings.respect_gitignore).lower()}",
        f"max-file-size = {settings.max_file_size}",
    ]
    return "\n".join(lines) + "\n"
