"""Split a single-file fixture into a two-module project at a cut point.

The movable top-level functions before the cut (those whose free names are all imports or
builtins, decorators included) move to ``defs.py`` together with a copy of the file's imports;
the rest stays in ``main.py``, which imports them with ``from defs import ...``. Each line keeps
its ``# expect:`` comment, so the expectations move with the code.
"""

from __future__ import annotations

import ast
import builtins
import random

BUILTINS = set(dir(builtins))


def _free_names(node) -> set:
    bound = set()
    loads = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                bound.add((a.asname or a.name).split(".")[0])
    return loads - bound


_REF_CTORS = ("new_ref", "empty_ref", "array_ref", "mutable_array")


def _ref_global(st, imports: dict, names_bound: dict):
    """The name of ``name = jax.new_ref(...)`` at module level (bound once, its free names
    imports or builtins), else None."""
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call)):
        return None
    func = st.value.func
    last = func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None
    name = st.targets[0].id
    if last not in _REF_CTORS or names_bound.get(name, 0) != 1 or name.startswith("_"):
        return None
    if not all(n in imports or n in BUILTINS for n in _free_names(st.value)):
        return None
    return name


def split(source: str, seed=None, move_refs: bool = False):
    """(defs.py text, main.py text, moved names), or None when nothing can move. With
    ``move_refs``, module-level refs (``name = jax.new_ref(...)``) move too, and so do the
    functions using them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines(keepends=True)
    imports = {}
    import_stmts = []
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            import_stmts.append(st)
            for a in st.names:
                imports[(a.asname or a.name).split(".")[0]] = st
    top_defs = [st for st in tree.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not top_defs:
        return None
    names_bound = {}
    for st in tree.body:
        for n in ast.walk(st) if not isinstance(st, (ast.FunctionDef, ast.ClassDef)) else [st]:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names_bound[n.id] = names_bound.get(n.id, 0) + 1
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                names_bound[n.name] = names_bound.get(n.name, 0) + 1
    cut = len(tree.body)
    if seed is not None:
        cut = random.Random(seed).randint(1, len(tree.body))
    movable = []
    refs = set()
    for st in tree.body[:cut]:
        if move_refs:
            ref = _ref_global(st, imports, names_bound)
            if ref is not None:
                refs.add(ref)
                movable.append(st)
                continue
        if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if names_bound.get(st.name, 0) != 1 or st.name.startswith("_"):
            continue
        free = _free_names(st)
        if all(n in imports or n in BUILTINS or n in refs for n in free) and \
                not any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(st)):
            movable.append(st)
    if not movable:
        return None
    moved_lines = set()
    for st in movable:
        start = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())])
        moved_lines.update(range(start, st.end_lineno + 1))
    import_lines = set()
    for st in import_stmts:
        import_lines.update(range(st.lineno, st.end_lineno + 1))
    defs = "".join(lines[i - 1] for i in sorted(import_lines) if i - 1 < len(lines))
    defs += "\n\n" + "\n\n".join("".join(lines[i - 1] for i in range(
        min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())]),
        st.end_lineno + 1)) for st in movable)
    names = [st.targets[0].id if isinstance(st, ast.Assign) else st.name for st in movable]
    # The import goes after the last top-level import (or the module docstring).
    anchor = max(import_lines) if import_lines else 0
    out = []
    for i, line in enumerate(lines, start=1):
        if i in moved_lines:
            out.append("\n")  # keep the line numbers of what stays
            continue
        out.append(line)
        if i == anchor:
            out.append(f"from defs import {', '.join(names)}\n")
    if anchor == 0:
        out.insert(0, f"from defs import {', '.join(names)}\n")
    return defs, "".join(out), names
