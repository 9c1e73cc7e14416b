"""Walks of stdlib ``ast`` trees, faster than ``ast.walk`` / ``ast.iter_child_nodes``.

Those read every field of every node through a generator (``ast.iter_fields``) and test
each value with ``isinstance(value, AST)``; here each node type's fields that can hold nodes
are listed once (not ``ctx``, names, strings, numbers, positions), and a field's value is
tested by its type. The same nodes in the same order as ``ast.iter_child_nodes`` /
``ast.walk``, but for the expression contexts (``Load``/``Store``/``Del``: read them as
``node.ctx``).
"""

from __future__ import annotations

import ast
from collections import deque

# The field that never holds a node worth walking: an expression context (Load/Store/Del,
# one shared object each). Identifiers and constants are strings or numbers (skipped by their
# type); a field named like an identifier may hold a node (``TypeAlias.name`` is a Name).
_LEAF_FIELDS = frozenset({"ctx"})
_FIELDS: dict = {}
_AST = ast.AST


def _fields(t: type) -> tuple:
    fields = _FIELDS.get(t)
    if fields is None:
        fields = _FIELDS[t] = tuple(f for f in t._fields if f not in _LEAF_FIELDS)
    return fields


def children(node) -> list:
    """``list(ast.iter_child_nodes(node))`` without expression contexts."""
    out = []
    for name in _FIELDS.get(type(node)) or _fields(type(node)):
        value = getattr(node, name, None)
        if type(value) is list:
            for v in value:
                if isinstance(v, _AST):
                    out.append(v)
        elif isinstance(value, _AST):
            out.append(value)
    return out


def walk(node) -> list:
    """``list(ast.walk(node))`` without expression contexts: the node and its descendants,
    breadth first (a list, built in one loop: a generator's step per node cost the
    summary's walks a fifth more)."""
    return select((node,), None)


def select(roots, types) -> list:
    """The nodes of ``types`` (a set of node classes; None: every node) in ``roots`` and
    below, in ``walk``'s order (each root's walk after the last's)."""
    out = []
    keep = out.append
    table = _FIELDS
    for root in roots:
        todo = deque([root])
        pop, push = todo.popleft, todo.append
        while todo:
            node = pop()
            t = type(node)
            for name in table.get(t) or _fields(t):  # children(), inline: a call less a node
                value = getattr(node, name, None)
                if type(value) is list:
                    for v in value:
                        if isinstance(v, _AST):
                            push(v)
                elif isinstance(value, _AST):
                    push(value)
            if types is None or t in types:
                keep(node)
    return out
