"""The target JAX version when none is given (as ruff infers its target from
``requires-python``).

In order: ``--target-jax-version``; ``target-jax-version`` in ``[tool.reflint]``; the JAX
requirement the project declares (``[project] dependencies`` or Poetry's
``[tool.poetry.dependencies]`` in the nearest ``pyproject.toml``, else ``requirements*.txt``
next to it): its lowest allowed version, since the code must run there; else the JAX installed
in the environment reflint runs in (read from its metadata, JAX is never imported); else the
newest measured version. ``reflint check --show-settings`` says which one applied and why.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys

from ._lazy import lazy, lazy_re
from .settings import DEFAULT_TARGET_JAX_VERSION, SUPPORTED_JAX_VERSIONS, parse_version

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

# Imported when a pyproject.toml is read.
tomllib = lazy("tomllib" if sys.version_info >= (3, 11) else "tomli")

# `jax`, `jax[cuda12]`, `JAX` — not `jaxlib`, `jax-foo`, `jaxtyping`.
_REQ = lazy_re(r"^\s*jax\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)", re.I)
_CLAUSE = lazy_re(r"^\s*(?P<op>===|==|~=|>=|<=|!=|>|<|\^|~)?\s*(?P<v>[0-9][0-9.]*)")


def _version(text: str) -> Optional[tuple]:
    """The release part of a version (``0.10.2`` of ``0.10.2rc1``, ``0.8`` of ``0.8.*``)."""
    m = re.match(r"\d+(?:\.\d+)*", text)
    if not m:
        return None
    parts = m.group(0).split(".")[:4]
    try:
        return parse_version(".".join(parts))
    except ValueError:
        return None


def lowest_allowed(spec: str) -> Optional[tuple]:
    """The lowest JAX version a requirement's specifiers allow (None when they set no bound):
    ``>=0.8``, ``==0.10.2``, ``~=0.9.0``, ``^0.8`` (Poetry) give their version; with only an
    upper bound (``<0.11``), the newest measured version below it."""
    lower = None
    upper = None  # (version, inclusive)
    for clause in spec.split(","):
        clause = clause.strip()
        if not clause or clause == "*":
            continue
        m = _CLAUSE.match(clause)
        if not m:
            continue
        op = m.group("op") or "=="
        v = _version(m.group("v"))
        if v is None or op == "!=":
            continue
        if op in ("==", "===", ">=", "~=", ">", "^", "~"):
            lower = v if lower is None else max(lower, v)
        elif op in ("<", "<="):
            upper = (v, op == "<=")
    if lower is not None:
        return lower
    if upper is not None:
        v, inclusive = upper
        if inclusive:
            return v
        below = [parse_version(s) for s in SUPPORTED_JAX_VERSIONS if parse_version(s) < v]
        return below[-1] if below else None
    return None


def _from_requirements(lines, where: str) -> Optional[tuple]:
    for line in lines:
        if not isinstance(line, str):
            continue
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        m = _REQ.match(line)
        if m is None:
            continue
        rest = m.group("spec").strip()
        if rest and rest[0] not in "=<>!~^(" and not rest[0].isdigit():
            continue  # `jax-foo`, `jaxlib`: another name
        v = lowest_allowed(rest.strip("() "))
        if v is not None:
            return v, f"{line} in {where}"
    return None


def _from_pyproject(path: str) -> Optional[tuple]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    if b"dependencies" not in raw:
        return None  # no requirement to read: TOML's parser (and its import) not needed
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    project = data.get("project")
    if isinstance(project, dict) and isinstance(project.get("dependencies"), list):
        found = _from_requirements(project["dependencies"], f"{path} [project] dependencies")
        if found:
            return found
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) \
        else {}
    deps = poetry.get("dependencies") if isinstance(poetry, dict) else None
    if isinstance(deps, dict):
        spec = deps.get("jax")
        if isinstance(spec, dict):
            spec = spec.get("version")
        if isinstance(spec, str):
            v = lowest_allowed(spec)
            if v is not None:
                return v, f"jax = {spec!r} in {path} [tool.poetry.dependencies]"
    return None


def _requirements_files(directory: str) -> list:
    try:  # glob.glob(directory + "/requirements*.txt"), without importing glob
        names = os.listdir(directory)
    except OSError:
        names = []
    files = sorted(os.path.join(directory, n) for n in fnmatch.filter(names, "requirements*.txt"))
    main = os.path.join(directory, "requirements.txt")
    return ([main] if main in files else []) + [f for f in files if f != main]


@functools.lru_cache(maxsize=256)
def declared(start: str) -> Optional[tuple]:
    """(version, reason) from the JAX requirement declared by the project around ``start``:
    the nearest ``pyproject.toml``, then the ``requirements*.txt`` files of that directory,
    searched upward until the project's root (a directory with ``pyproject.toml`` or ``.git``).
    """
    d = os.path.abspath(start)
    while True:
        pyproject = os.path.join(d, "pyproject.toml")
        if os.path.isfile(pyproject):
            found = _from_pyproject(pyproject)
            if found:
                return found
        for req in _requirements_files(d):
            try:
                with open(req, encoding="utf-8", errors="replace") as fh:
                    found = _from_requirements(fh.read().splitlines(), req)
            except OSError:
                continue
            if found:
                return found
        if os.path.isfile(pyproject) or os.path.exists(os.path.join(d, ".git")):
            return None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _dist_info_version(name: str) -> Optional[str]:
    """The ``Version:`` of the first ``<name>-*.dist-info`` along ``sys.path`` (where
    importlib.metadata looks first), read directly: importing importlib.metadata costs more
    than the rest of a small check's start-up. None when there is none (then importlib.metadata
    decides: eggs, odd layouts)."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info") and n.split("-", 1)[0].lower().replace("_", "-") == name:
                try:
                    with open(os.path.join(entry or ".", n, "METADATA"), encoding="utf-8",
                              errors="replace") as fh:
                        for line in fh:
                            if line.startswith("Version:"):
                                return line.split(":", 1)[1].strip()
                            if not line.strip():
                                break  # the end of the headers
                except OSError:
                    pass
                return None
    return None


@functools.lru_cache(maxsize=1)
def installed() -> Optional[tuple]:
    """(version, reason) of the JAX installed where reflint runs (its metadata only)."""
    text = _dist_info_version("jax")
    if text is None:
        try:
            from importlib.metadata import PackageNotFoundError, version
        except ImportError:  # pragma: no cover
            return None
        try:
            text = version("jax")
        except (PackageNotFoundError, ValueError, OSError):
            return None
        except Exception:  # noqa: BLE001 - broken metadata: no answer
            return None
    v = _version(text or "")
    if v is None:
        return None
    return v, f"jax {text} installed in {sys.prefix}"


def infer(start: str) -> tuple:
    """(version, reason) for code under ``start`` when no version is configured."""
    if os.environ.get("REFLINT_NO_INFER_TARGET"):
        return parse_version(DEFAULT_TARGET_JAX_VERSION), \
            "default: the newest measured version (REFLINT_NO_INFER_TARGET is set)"
    found = declared(start)
    if found:
        return found[0], f"inferred from the project's requirement: {found[1]}"
    found = installed()
    if found:
        return found[0], f"inferred from the environment: {found[1]}"
    return parse_version(DEFAULT_TARGET_JAX_VERSION), \
        "default: the newest measured version (no JAX requirement declared, none installed)"
