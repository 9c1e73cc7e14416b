"""Planted-bug measure for refs outside Pallas kernels: the brief's mistakes, planted one at a
time in real code that creates refs (``r = jax.new_ref(x)``, ``jax.array_ref``,
``core.mutable_array``, ``jax.empty_ref``), each checked for the rule that must report it.

* ``read`` (REF007): a read ``r[...]`` (or ``r[i]``) of a ref the function created, used as an
  Array (an operand of an arithmetic, comparison or unary operator, an argument of a
  ``jax.numpy``/``jax.lax``/``numpy`` function, the receiver of an Array-only method: the uses
  of tests/pallas_planted.py), loses its index: ``r[...] + 1`` -> ``r + 1``.
* ``return`` (REF001): ``return r[...]`` (or that read as an element of a returned tuple) in a
  function compiled with ``jax.jit`` (its decorator, or ``jax.jit(f)`` in the module) returns
  the ref: ``return r``. A ref created inside the trace escapes it.
* ``twice`` (REF002): a call of such a function given two distinct refs created in the calling
  function, ``f(a, b)``, gets the first twice: ``f(a, a)``.
* ``init`` (REF028): in a function accumulating into a ref it takes (``acc_ref[...] += v``, or
  ``acc_ref[...] = acc_ref[...] * a + v``: a store whose value reads the ref's contents), the
  ``@pl.when(...)`` body that only initialises that ref (``acc_ref[...] = jnp.zeros(...)``)
  loses the initialisation (``pass`` in its place), when the function writes the ref nowhere
  else. Reported on an accumulation's line when the function is a Pallas kernel (a function
  nothing launches is a miss to read by hand).
* ``rebind`` (REF019): in a kernel given by name to ``pallas_call`` in the module (also
  through ``functools.partial(kernel, **config)``), launched with no scratch buffers, grid
  spec or aliases (so a parameter it writes is an output), the one store ``o_ref[...] = v``
  of a parameter used nowhere else (but for its shape or dtype) loses its ``[...]``:
  ``o_ref = v``. The output is never written.
* ``wrong_ref`` (REF029): in such a kernel writing one parameter, its last, the store writes
  the first parameter (an input) instead: ``o_ref[...] = v`` -> ``x_ref[...] = v``. The
  input's write is dropped and the output never written.
* ``discard`` (REF023): a functional update rebinding its receiver, ``x = x.at[i].set(v)``
  (any method of ``api.AT_UPDATE_METHODS``), loses its assignment: ``x.at[i].set(v)``; the
  update is thrown away. Anywhere (not only where refs are made); a receiver reflint cannot
  tell from a ref is a miss to read by hand.

Decided on the syntax, without reflint. The sources are read where they are (installed or
fetched); nothing of them is copied into this repository.

Usage: ``python tests/refs_planted.py DIR_OR_FILE...`` prints the figure per kind and the
misses.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pallas_planted import (_col, _dotted, array_use, parsed, python_files,  # noqa: E402
                            read_source)

CONSTRUCTORS = ("new_ref", "array_ref", "mutable_array", "empty_ref")
EXPECTED = {"read": "REF007", "return": "REF001", "twice": "REF002", "init": "REF028",
            "rebind": "REF019", "wrong_ref": "REF029", "discard": "REF023"}
_METADATA = ("shape", "dtype", "ndim", "size")


@dataclass
class Plant:
    kind: str
    path: str
    line: int
    source: str
    snippet: str


def _created_refs(func) -> set:
    """Names the function binds once, to a ref constructor's result (its own scope only)."""
    counts: dict = {}
    made = set()
    for node in _own_nodes(func):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call):
            name = _dotted(node.value.func) or ""
            if name.rsplit(".", 1)[-1] in CONSTRUCTORS:
                made.add(node.targets[0].id)
    return {n for n in made if counts.get(n) == 1}


def _own_nodes(scope, defs: bool = False):
    """The statements of ``scope``'s body and the nodes below them, not descending into a
    function, lambda or class nested below a statement (a def that is itself a statement of
    the body is walked); with ``defs``, those nested functions are yielded too."""
    todo = list(scope.body)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                      ast.ClassDef)):
                todo.append(child)
            elif defs and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child


def _jitted(tree) -> dict:
    """id() of each function compiled with jit -> its scope's defs: decorated (``@jax.jit``,
    ``@partial(jax.jit, ...)``), or given by name to ``jax.jit`` in the scope defining it."""
    out = {}
    scopes = [tree] + [n for n in ast.walk(tree)
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    for scope in scopes:
        own = list(_own_nodes(scope, defs=scope is tree))
        defs = {n.name: n for n in own if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for d in defs.values():
            for dec in d.decorator_list:
                if _is_jit(dec) or isinstance(dec, ast.Call) and (
                        _is_jit(dec.func) or dec.args and _is_jit(dec.args[0])):
                    out[id(d)] = defs
        for n in own:
            if isinstance(n, ast.Call) and _is_jit(n.func) and n.args and \
                    isinstance(n.args[0], ast.Name) and n.args[0].id in defs:
                out[id(defs[n.args[0].id])] = defs
    return out


def _calls_jitted(name: str, caller, module_defs: dict, jitted: dict) -> bool:
    """Whether ``name`` called in ``caller`` is a jitted function defined in ``caller`` or at
    module level (the nearest definition decides)."""
    own = {n.name: n for n in _own_nodes(caller)
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    d = own.get(name) or module_defs.get(name)
    return d is not None and id(d) in jitted


def _is_jit(node) -> bool:
    name = _dotted(node)
    return name is not None and name.rsplit(".", 1)[-1] == "jit"


def _is_read(node, refs: set) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
        isinstance(node.value, ast.Name) and node.value.id in refs


def _span(source, offsets, lines, node) -> tuple:
    start = offsets[node.lineno - 1] + _col(lines, node.lineno, node.col_offset)
    end = offsets[node.end_lineno - 1] + _col(lines, node.end_lineno, node.end_col_offset)
    return start, end


def find_plants(path: str, source: str) -> list:
    got = parsed(source)
    if got is None:
        return []
    tree, modules, parents, lines, offsets = got
    jitted = _jitted(tree)
    module_defs = {n.name: n for n in tree.body
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    plants = []

    def plant(kind, node, new_text):
        start, end = _span(source, offsets, lines, node)
        plants.append(Plant(kind, path, node.lineno, source[:start] + new_text + source[end:],
                            source[start:end]))

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _rebinding_update(node):
            plant("discard", node, source[offsets[node.value.lineno - 1] + _col(
                lines, node.value.lineno, node.value.col_offset):_span(
                source, offsets, lines, node.value)[1]])
    kernels = _plain_kernels(tree)
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for init in _init_plants(func, source, offsets, lines):
            plants.append(Plant("init", path, *init))
        if id(func) in kernels:
            for kind, store, name, new_text in _store_plants(func):
                plant(kind, store, new_text)
        refs = _created_refs(func)
        if not refs:
            continue
        for node in _own_nodes(func):
            if _is_read(node, refs) and array_use(node, parents, modules):
                plant("read", node, node.value.id)
            elif isinstance(node, ast.Return) and id(func) in jitted and node.value is not None:
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for v in values:
                    if _is_read(v, refs) and isinstance(v.slice, ast.Constant) and \
                            v.slice.value is Ellipsis:
                        plant("return", v, v.value.id)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    _calls_jitted(node.func.id, func, module_defs, jitted):
                names = [a for a in node.args if isinstance(a, ast.Name) and a.id in refs]
                if len(names) >= 2 and names[0].id != names[1].id:
                    plant("twice", names[1], names[0].id)
    return plants


def _rebinding_update(node) -> bool:
    """``x = x.at[i].set(v)`` (one name target, the update's receiver, on one line)."""
    from reflint.api import AT_UPDATE_METHODS

    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name) or \
            node.lineno != node.end_lineno:
        return False
    v = node.value
    if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and
            v.func.attr in AT_UPDATE_METHODS):
        return False
    at = v.func.value
    return isinstance(at, ast.Subscript) and isinstance(at.value, ast.Attribute) and \
        at.value.attr == "at" and isinstance(at.value.value, ast.Name) and \
        at.value.value.id == node.targets[0].id


def _plain_kernels(tree) -> set:
    """id() of each function given by name (or as ``partial(name, **config)``) as the first
    argument of every ``pallas_call`` launching it in its scope, when no launch has scratch
    buffers, a grid spec or aliases: every parameter is an input or an output, the outputs
    last."""
    scopes = [tree] + [n for n in ast.walk(tree)
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    good, bad = {}, set()
    for scope in scopes:
        own = list(_own_nodes(scope, defs=True))
        defs = {n.name: n for n in own if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if scope is not tree:
            defs.update({n.name: n for n in scope.body
                         if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))})
        for n in own:
            if not (isinstance(n, ast.Call) and
                    (_dotted(n.func) or "").rsplit(".", 1)[-1] == "pallas_call" and n.args):
                continue
            first = n.args[0]
            if isinstance(first, ast.Call) and \
                    (_dotted(first.func) or "").rsplit(".", 1)[-1] == "partial" and \
                    len(first.args) == 1:
                first = first.args[0]
            if not isinstance(first, ast.Name) or first.id not in defs:
                continue
            d = defs[first.id]
            kws = {k.arg for k in n.keywords}
            if kws & {"scratch_shapes", "grid_spec", "input_output_aliases", None} or \
                    "out_shape" not in kws:
                bad.add(id(d))
            else:
                good[id(d)] = d
    return {k for k in good if k not in bad}


def _store_plants(func) -> list:
    """(kind, store target, name, new text) for the ``rebind`` and ``wrong_ref`` kinds."""
    a = func.args
    if a.vararg or a.kwarg or a.defaults or a.posonlyargs:
        return []
    params = [p.arg for p in a.args]
    stores: dict = {}
    other: dict = {}
    meta = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and node.attr in _METADATA:
            meta.add(id(node.value))
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            name = _subscript_target(node.targets[0])
            if name in params:
                stores.setdefault(name, []).append(node.targets[0])
    targets = {id(t.value) for ts in stores.values() for t in ts}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and node.id in params and id(node) not in targets and \
                id(node) not in meta:
            other.setdefault(node.id, []).append(node)
        elif isinstance(node, ast.arg) and node.arg in params and node not in a.args:
            other.setdefault(node.arg, []).append(node)  # shadowed in a nested function
    out = []
    for name, ts in stores.items():
        if len(ts) != 1 or name in other:
            continue
        t = ts[0]
        if isinstance(t.slice, ast.Constant) and t.slice.value is Ellipsis:
            out.append(("rebind", t, name, name))
    if len(stores) == 1 and len(params) >= 2:
        (name, ts), = stores.items()
        if name == params[-1] and len(ts) == 1 and name not in other and \
                params[0] not in stores:
            out.append(("wrong_ref", ts[0].value, name, params[0]))
    return out


def _subscript_target(node):
    """The name of ``NAME[...] = v`` / ``NAME[i] += v``'s target, else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id
    return None


def _is_when(d) -> bool:
    return isinstance(d, ast.Call) and (_dotted(d.func) or "").rsplit(".", 1)[-1] == "when"


def _init_plants(func, source, offsets, lines) -> list:
    """(line, source, snippet) for each initialisation to drop (the ``init`` kind)."""
    params = {p.arg for p in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    accumulated = {}  # name -> line of its first `name[...] op= v`
    writes: dict = {}  # name -> [the assignment nodes writing it]
    for node in ast.walk(func):
        if isinstance(node, ast.AugAssign):
            name = _subscript_target(node.target)
            if name in params:
                accumulated.setdefault(name, node.lineno)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                name = _subscript_target(t)
                if name in params and _reads_contents(node.value, name):
                    accumulated.setdefault(name, node.lineno)
                elif name in params:
                    writes.setdefault(name, []).append(node)
    out = []
    for inner in func.body:
        if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                not any(_is_when(d) for d in inner.decorator_list):
            continue
        body = [st for st in inner.body if not (isinstance(st, ast.Expr) and
                                                isinstance(st.value, ast.Constant))]
        names = [_subscript_target(st.targets[0]) if isinstance(st, ast.Assign) and
                 len(st.targets) == 1 else None for st in body]
        if not body or None in names:
            continue
        for name, st in zip(names, body):
            if name not in accumulated or len(writes.get(name, ())) != 1:
                continue
            start, end = _span(source, offsets, lines, st)
            # Its lines kept (blank), so that the accumulation keeps its line number.
            new = source[:start] + "pass" + "\n" * source.count("\n", start, end) + \
                source[end:]
            out.append((accumulated[name], new, source[start:end]))
    return out


def _reads_contents(value, name: str) -> bool:
    """``value`` reads an item of ``name`` for its contents: not for its shape or dtype
    (``jnp.zeros_like(r[...])``, ``r[...].shape``), and not through a selection that may
    leave it out (``jnp.where``, ``lax.select``, ``a if c else b``)."""
    from reflint.api import SELECTING_WORDS

    metadata = set()
    for node in ast.walk(value):
        if isinstance(node, ast.IfExp) or isinstance(node, ast.Call) and \
                (_dotted(node.func) or "").rpartition(".")[2] in SELECTING_WORDS:
            metadata.update(id(n) for n in ast.walk(node))  # may be selected away
        if isinstance(node, ast.Attribute) and node.attr in _METADATA:
            metadata.add(id(node.value))
        if isinstance(node, ast.Call) and node.args and \
                (_dotted(node.func) or "").endswith("_like"):
            metadata.add(id(node.args[0]))
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and
               n.value.id == name and id(n) not in metadata for n in ast.walk(value))


def measure(files) -> dict:
    """kind -> (found, plants, misses)."""
    from reflint.engine import lint_source
    from reflint.settings import Settings

    out = {k: [0, 0, []] for k in EXPECTED}
    for p in files:
        for plant in find_plants(p, read_source(p)):
            code = EXPECTED[plant.kind]
            settings = Settings(select=frozenset({code}))
            diags = lint_source(plant.source, plant.path, settings, lazy_fixes=True).diagnostics
            row = out[plant.kind]
            row[1] += 1
            if any(d.code == code and d.line == plant.line for d in diags):
                row[0] += 1
            else:
                row[2].append(plant)
    return out


def main(argv) -> int:
    files = python_files(argv)
    got = measure(files)
    for kind, (found, n, misses) in got.items():
        for m in misses:
            print(f"MISS {kind} {m.path}:{m.line}: {m.snippet}")
    for kind, (found, n, misses) in got.items():
        pct = 100.0 * found / n if n else 100.0
        print(f"{kind} ({EXPECTED[kind]}): {found} of {n} planted bugs reported ({pct:.1f} %)")
    print(f"in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main(sys.argv[1:]))
