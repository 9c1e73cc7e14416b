"""Limits and name tables of the analysis."""

from __future__ import annotations

import builtins

from .. import api

_BUILTIN_NAMES = frozenset(dir(builtins))


# Methods that mutate Python containers in place (recorded in ``mutating_calls``).
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "update", "add", "setdefault", "appendleft", "extendleft",
    "pop", "popitem", "remove", "discard", "clear",
})


MAX_ROUNDS = 4


# How deep the dependence on differentiated inputs follows calls of local functions.
MAX_DEPENDENCE_DEPTH = 8


# How often a loop body runs while the dependence around it grows.
DEPENDENCE_LOOP_RUNS = 3


EMPTY: frozenset = frozenset()


# Python builtins and array attributes whose result carries no derivative (REF008).
_NO_TANGENT_BUILTINS = frozenset({
    "len", "isinstance", "type", "hasattr", "id", "callable", "range", "print", "repr", "str",
    "bool", "issubclass",
})


_METADATA_ATTRIBUTES = frozenset({
    "shape", "ndim", "size", "dtype", "sharding", "aval", "weak_type", "itemsize", "nbytes",
})


_CONTAINER_CONSTRUCTORS = api.CONTAINER_CONSTRUCTORS

