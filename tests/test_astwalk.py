"""reflint.astwalk: the same nodes, in the same order, as the stdlib's walks (expression
contexts aside), on every syntax the fixtures and the installed sources hold."""

import ast
import sys

import pytest

from reflint import astwalk

from conftest import fixture_files, installed_sources

_CONTEXTS = (ast.Load, ast.Store, ast.Del)

NEWER = {
    (3, 10): "match p:\n    case [1, *rest] | {'k': v, **kw} if v:\n        pass\n"
             "    case Point(x=0, y=yy) as pt:\n        pass\n",
    (3, 11): "try:\n    pass\nexcept* ValueError as e:\n    pass\n",
    (3, 12): "type Alias[T: int, *Ts, **P] = list[T]\n"
             "def f[T](x: T) -> T:\n    return x\n",
}


def _sources():
    for path in fixture_files()[::2]:
        with open(path, encoding="utf-8") as fh:
            yield path, fh.read()
    yield from installed_sources()[::25]
    for version, text in NEWER.items():
        if sys.version_info >= version:
            yield f"python{version}", text
    yield "misc", ("from . import a as b, c\nimport d.e as f\nglobal g\n"
                   "x = f'{a!r:>{w}}' + lambda *a, k=1, **kw: (yield)\n"
                   "async def h():\n    async with a as (b, c):\n        await d\n"
                   "    async for i in j:\n        del i[0], k.m\n")


@pytest.mark.parametrize("path,text", list(_sources()), ids=lambda v: str(v)[-40:])
def test_walk_and_children_are_the_stdlib_s_without_contexts(path, text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("not this Python's syntax")
    want = [n for n in ast.walk(tree) if not isinstance(n, _CONTEXTS)]
    assert [id(n) for n in astwalk.walk(tree)] == [id(n) for n in want]
    for node in want:
        assert [id(c) for c in astwalk.children(node)] == \
            [id(c) for c in ast.iter_child_nodes(node) if not isinstance(c, _CONTEXTS)]
