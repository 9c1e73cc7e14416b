"""Modules imported on first use, so that ``import reflint`` (and a check of a file that the
pre-filter rules out) never pays for the analysis (nor libcst, which only fixes need).

``cst = lazy("reflint.nodes")`` is a module object whose first attribute access imports the
module and copies its namespace in: from then on ``cst.Name`` is an ordinary module attribute
lookup, as fast as with ``from reflint import nodes as cst``. Rule modules import the node
classes and the analysis this way, so loading the rules (for their codes, names and
pre-filter triggers) stays cheap.
"""

from __future__ import annotations

import importlib
import threading
import types

_LOCK = threading.Lock()


class LazyModule(types.ModuleType):
    """Stands for the module ``target`` until an attribute is read."""

    def __init__(self, target: str):
        super().__init__(f"{target} (lazy)")
        self.__dict__["_lazy_target"] = target

    def __getattr__(self, attr: str):
        # Called only for names not (yet) in this object's namespace.
        target = self.__dict__["_lazy_target"]
        with _LOCK:
            module = importlib.import_module(target)
            if "_lazy_loaded" not in self.__dict__:
                names = {k: v for k, v in vars(module).items()
                         if not (k.startswith("__") and k.endswith("__"))}
                self.__dict__.update(names)
                self.__dict__["_lazy_loaded"] = True
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_target']!r}>"


_MODULES: dict = {}


def lazy(target: str) -> LazyModule:
    """The (shared) lazy stand-in for the module named ``target``."""
    mod = _MODULES.get(target)
    if mod is None:
        mod = _MODULES[target] = LazyModule(target)
    return mod


def loaded(target: str) -> bool:
    """Whether the lazy stand-in for ``target`` has imported it yet (tests use this)."""
    mod = _MODULES.get(target)
    return mod is not None and "_lazy_loaded" in mod.__dict__


class LazyPattern:
    """``re.compile(pattern, flags)``, compiled when first used: a module's patterns that a
    run never needs (a check of files without noqa comments or syntax errors) cost nothing at
    import. Its methods and attributes are the compiled pattern's, copied in at the first
    use: from then on ``rx.search`` is an ordinary attribute read."""

    _ATTRIBUTES = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn",
                   "split", "scanner", "pattern", "flags", "groups", "groupindex")

    def __init__(self, pattern, flags: int = 0):
        self._spec = (pattern, flags)

    def __getattr__(self, attr: str):
        # Called only for names not (yet) in this object's namespace.
        if attr.startswith("__") or attr == "_spec":
            raise AttributeError(attr)
        import re

        rx = re.compile(*self._spec)
        for name in self._ATTRIBUTES:
            self.__dict__[name] = getattr(rx, name)
        return getattr(rx, attr)

    def __repr__(self) -> str:
        return f"lazy re.compile({self._spec[0]!r}, {self._spec[1]!r})"


def lazy_re(pattern, flags: int = 0) -> LazyPattern:
    """``re.compile(pattern, flags)``, compiled when first used (LazyPattern)."""
    return LazyPattern(pattern, flags)
