"""libcst, where reflint still needs it: its parser and its code generation.

The analysis runs on ``reflint.nodes`` (plain classes named and shaped as libcst's nodes),
built from the stdlib ``ast`` by ``reflint.fasttree``. libcst's parser is needed only for a
fix's edits (they keep the file's parentheses, comments and whitespace) and for syntax that
CPython's parser rejects and libcst's accepts; its tree is then converted here, every node and
field (libcst's whitespace and comments are kept as they are: ``KEPT``), keeping the map back
to libcst's nodes for their text and positions
(``nodes.Module.code_for_node``, :class:`Positions`). Importing this module imports libcst.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import libcst as cst

from . import nodes

__all__ = ["parse_module", "parse_expression", "to_nodes", "positions_of", "unvalidated"]

_VALIDATION = threading.local()


def _install_validation_switch() -> None:
    """Make libcst's per-node validation (``CSTNode.__post_init__``) switchable per thread.

    The only place reflint touches libcst's classes: once, the hook is wrapped so that a thread
    inside :func:`unvalidated` skips it; every other thread (a flake8 worker, a language
    server's request) validates as libcst does."""
    base = cst.CSTNode
    original = base.__dict__.get("__post_init__")
    if original is None or getattr(original, "_reflint_switch", False):
        return

    def __post_init__(self) -> None:
        if not getattr(_VALIDATION, "off", False):
            original(self)

    __post_init__._reflint_switch = True  # type: ignore[attr-defined]
    base.__post_init__ = __post_init__  # type: ignore[method-assign]


_install_lock = threading.Lock()


@contextmanager
def unvalidated():
    """libcst nodes built in this block, by this thread, skip ``_validate()``: for trees of
    source that libcst's own parser (or CPython's) has just accepted."""
    with _install_lock:
        _install_validation_switch()
    was = getattr(_VALIDATION, "off", False)
    _VALIDATION.off = True
    try:
        yield
    finally:
        _VALIDATION.off = was


def parse_module_cst(source: str) -> cst.Module:
    """``libcst.parse_module``, without libcst's per-node validation (the parser has just
    checked the source; validating every node again costs about a tenth of the parse)."""
    with unvalidated():
        return cst.parse_module(source)


def parse_module(source: str) -> nodes.Module:
    """The file parsed by libcst, as reflint's nodes (``to_nodes``)."""
    return to_nodes(parse_module_cst(source))


def parse_expression(text: str):
    """An expression parsed by libcst, as reflint's nodes (no text or positions kept)."""
    return _Converter().convert(cst.parse_expression(text))


def to_nodes(module: cst.Module) -> nodes.Module:
    """libcst's tree as reflint's nodes; the result's ``_cst`` is ``module`` and ``_cst_of``
    maps id(each new node) to libcst's node."""
    conv = _Converter()
    own = conv.convert(module)
    own._cst = module
    own._cst_of = conv.of
    return own


# libcst's whitespace and comments stay libcst's objects in the converted tree (about half of
# its nodes): nothing reads them but a fix's layout checks (by class name: ``is_whitespace``).
KEPT = frozenset({"SimpleWhitespace", "ParenthesizedWhitespace", "TrailingWhitespace",
                  "EmptyLine", "Newline", "Comment"})

_NODE, _SEQ, _KEEP, _OTHER = range(4)


class _Converter:
    def __init__(self) -> None:
        self.of: dict = {}
        self._plans: dict = {}
        self._kinds: dict = {tuple: _SEQ, list: _SEQ}

    def _plan(self, t: type) -> tuple:
        own = nodes.NODE_CLASSES.get(t.__name__)
        if own is None:
            raise ValueError(f"libcst's {t.__name__} has no reflint node (tools/gen_nodes.py)")
        plan = self._plans[t] = (own, own._fields)
        return plan

    def _kind(self, t: type) -> int:
        if issubclass(t, cst.CSTNode):
            k = _KEEP if t.__name__ in KEPT else _NODE
        else:
            k = _OTHER
        self._kinds[t] = k
        return k

    def convert(self, node):
        try:
            return self._convert(node)
        except RecursionError:  # deeper than this thread's stack: the iterative way
            self.of.clear()
            return self._convert_deep(node)

    def _convert(self, n):
        plan = self._plans.get(type(n)) or self._plan(type(n))
        own, fields = plan
        new = own.__new__(own)
        d = new.__dict__
        kinds, convert = self._kinds, self._convert
        for f in fields:
            v = getattr(n, f)
            k = kinds.get(type(v))
            if k is None:
                k = self._kind(type(v))
            if k == _NODE:
                v = convert(v)
            elif k == _SEQ:
                if v:
                    v = type(v)(convert(x) if (kinds.get(type(x)) or self._kind(type(x))) ==
                                _NODE else x for x in v)
            elif v is cst.MaybeSentinel.DEFAULT:
                v = nodes.MaybeSentinel.DEFAULT
            d[f] = v
        self.of[id(new)] = n
        return new

    def _convert_deep(self, node):
        """``_convert`` without recursion: children before parents, on a stack."""
        kinds = self._kinds

        def is_node(x) -> bool:
            return (kinds.get(type(x)) or self._kind(type(x))) == _NODE

        done: dict = {}  # id(libcst node) -> our node
        stack = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in done:
                continue
            own, fields = self._plans.get(type(n)) or self._plan(type(n))
            if not expanded:
                stack.append((n, True))
                for f in fields:
                    v = getattr(n, f)
                    if type(v) is tuple or type(v) is list:
                        stack.extend((x, False) for x in v if is_node(x) and id(x) not in done)
                    elif is_node(v) and id(v) not in done:
                        stack.append((v, False))
                continue
            new = own.__new__(own)
            d = new.__dict__
            for f in fields:
                v = getattr(n, f)
                if type(v) is tuple or type(v) is list:
                    v = type(v)(done[id(x)] if is_node(x) else x for x in v)
                elif is_node(v):
                    v = done[id(v)]
                elif v is cst.MaybeSentinel.DEFAULT:
                    v = nodes.MaybeSentinel.DEFAULT
                d[f] = v
            done[id(n)] = new
            self.of[id(new)] = n
        return done[id(node)]


class Positions:
    """libcst's ``PositionProvider`` ranges of a converted tree's nodes, computed at once for
    the whole module: ``get(node)`` gives a ``nodes.CodeRange`` (or None)."""

    def __init__(self, module: nodes.Module) -> None:
        self._of = module._cst_of
        self._ranges = cst_positions(module._cst)

    def get(self, node):
        c = self._of.get(id(node))
        r = self._ranges.get(c) if c is not None else None
        return None if r is None else own_range(r)


def own_range(r) -> nodes.CodeRange:
    """libcst's CodeRange as reflint's (the same numbers, one type for every tree)."""
    return nodes.CodeRange(nodes.CodePosition(r.start.line, r.start.column),
                           nodes.CodePosition(r.end.line, r.end.column))


def positions_of(module: nodes.Module) -> Positions:
    return Positions(module)


def cst_positions(module: cst.Module) -> dict:
    """PositionProvider's ranges for every node of libcst's ``module``: one code generation
    pass. (``MetadataWrapper.resolve`` gives the same mapping but also walks the whole tree
    once more, with an empty batch of visitors: about 40 % of the cost.)"""
    try:
        provider = cst.metadata.PositionProvider()
        provider._gen_impl(module)
        return provider._computed
    except AttributeError:  # pragma: no cover - libcst internals changed
        wrapper = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
        return wrapper.resolve(cst.metadata.PositionProvider)
