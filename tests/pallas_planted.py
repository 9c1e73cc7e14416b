"""Planted-bug measure for Pallas kernels (issue 14): drop one ``[...]`` read at a time.

For every read ``x_ref[...]`` of a kernel ref used as an Array in real Pallas code (an operand
of an arithmetic, comparison or unary operator, an argument of a ``jax.numpy`` / ``jax.lax`` /
``jax.nn`` / ``numpy`` / ``math`` function, the receiver of an Array-only method), the read is
removed (``jnp.sin(x_ref[...])`` -> ``jnp.sin(x_ref)``, ``x_ref[...] + 1`` -> ``x_ref + 1``) and
reflint is asked whether it reports REF007 on that line. Uses that only look at the shape or
dtype (``jnp.zeros_like(x_ref[...])``) are not bugs once the read is gone and are not planted.

What is a read of a kernel ref (decided on the syntax, without reflint): ``NAME[...]`` (an
Ellipsis index), or ``NAME[index]`` with a name ending in ``_ref`` (``x_ref[i, :]``), in a
function, where ``NAME`` holds an argument of that function or an enclosing one (a parameter,
or a name unpacked from one: see ``_param_names``); ``mask[...]`` of a computed ``mask`` is not.
The sources are read where they are installed (or given on the command line); nothing of them
is copied into this repository.

Usage: ``python tests/pallas_planted.py [--project] DIR_OR_FILE...`` prints the figure and
the misses. Each planted module is checked alone, or with ``--project`` in the project of every
module under the arguments (what ``reflint check DIR`` sees: kernels launched from another
module, BlockSpec subclasses of another module).
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass

_ARRAY_MODULE_PREFIXES = ("jax.numpy", "jax.lax", "jax.nn", "jax.scipy", "numpy", "math",
                          "jax.random")


@dataclass
class Plant:
    path: str
    line: int  # the line of the dropped read (1-based)
    source: str  # the module with the read dropped
    snippet: str  # the expression before the change


def _array_modules(tree: ast.Module) -> dict:
    """name -> module for the imports of array modules (``jnp`` -> ``jax.numpy``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                full = a.name
                if a.asname:
                    out[a.asname] = full
                else:
                    out[full.split(".")[0]] = full.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


# Functions whose argument is not used as an Array value (shape/dtype only, or taking refs).
_METADATA_ONLY = {"zeros_like", "ones_like", "full_like", "empty_like", "shape", "ndim",
                  "size", "result_type", "dtype", "isscalar", "iterable", "issubdtype",
                  "broadcast_shapes", "can_cast", "promote_types", "finfo", "iinfo"}
# Methods of Arrays that do not exist on refs (a call on an unread ref is the bug).
_ARRAY_METHODS = {"sum", "mean", "max", "min", "prod", "std", "var", "astype", "squeeze",
                  "ravel", "flatten", "dot", "argmax", "argmin", "argsort", "sort", "cumsum",
                  "clip", "round", "conj", "any", "all", "repeat", "take", "swapaxes", "real",
                  "imag", "mT"}


def _is_ref_read(node) -> bool:
    """``NAME[...]``, or ``NAME[index]`` where NAME says it is a ref (``x_ref``, ``refs``)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and
            isinstance(node.value, ast.Name)):
        return False
    if isinstance(node.slice, ast.Constant) and node.slice.value is Ellipsis:
        return True
    return node.value.id.endswith("_ref")


# lax control flow: its operands may be refs (JAX passes refs into cond branches and loop
# bodies), so a dropped read there is not necessarily a bug; its predicate, index and loop
# bounds must be Arrays (measured on 0.10.2: "Attempting to pass a Ref ... to a primitive ...
# did you forget to unpack ([...]) the ref?"). Positional argument numbers.
_CONTROL_FLOW_ARRAY_ARGS = {"cond": {0}, "switch": {0}, "fori_loop": {0, 1}, "while_loop": set(),
                            "scan": set(), "map": set(), "associative_scan": set()}


def _array_call(call: ast.Call, modules: dict, arg=None) -> bool:
    name = _dotted(call.func)
    if name is None:
        return False
    head, _, rest = name.partition(".")
    full = modules.get(head)
    if full is None:
        return False
    qual = f"{full}.{rest}" if rest else full
    last = qual.rsplit(".", 1)[-1]
    if last in _METADATA_ONLY or last.startswith("_"):
        return False
    if qual.startswith("jax.lax.") and last in _CONTROL_FLOW_ARRAY_ARGS:
        return arg is not None and arg in call.args and \
            call.args.index(arg) in _CONTROL_FLOW_ARRAY_ARGS[last]
    return qual.startswith(_ARRAY_MODULE_PREFIXES) and qual not in _ARRAY_MODULE_PREFIXES


def _param_names(func) -> set:
    """The names that hold a function's arguments: its parameters, and the names bound by
    unpacking or indexing one (``x_ref, o_ref = refs``, ``x_ref = refs[0]``, ``*ins, o = refs``)
    or by looping over one. A name bound to a computed value (``mask = f(...)``) is not one."""
    out = set()
    a = func.args
    for p in a.posonlyargs + a.args + a.kwonlyargs:
        out.add(p.arg)
    for p in (a.vararg, a.kwarg):
        if p is not None:
            out.add(p.arg)

    def from_param(v) -> bool:
        while isinstance(v, (ast.Subscript, ast.Starred)):
            v = v.value
        return isinstance(v, ast.Name) and v.id in out

    def names(t):
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from names(e)
        elif isinstance(t, ast.Starred):
            yield from names(t.value)

    for _ in range(2):
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and from_param(node.value):
                for t in node.targets:
                    out.update(names(t))
            elif isinstance(node, ast.For) and from_param(node.iter):
                out.update(names(node.target))
    return out


def array_use(node, parents: dict, modules: dict) -> bool:
    """Whether the read ``node`` is used as an Array value: an operand of an arithmetic,
    comparison or unary operator, an argument of an array module's function, the receiver of
    an Array-only method."""
    parent = parents.get(node)
    if isinstance(parent, (ast.BinOp, ast.Compare)):
        return True
    if isinstance(parent, ast.UnaryOp):
        return not isinstance(parent.op, ast.Not)
    if isinstance(parent, ast.Call) and node in parent.args:
        return _array_call(parent, modules, node)
    if isinstance(parent, ast.Attribute) and parent.value is node:
        grand = parents.get(parent)
        return parent.attr in _ARRAY_METHODS and (
            parent.attr in ("real", "imag", "mT") or
            (isinstance(grand, ast.Call) and grand.func is parent))
    return False


def parsed(source: str):
    """(tree, array modules, node -> parent, lines, line offsets) of ``source``; None when it
    does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return (tree, _array_modules(tree), *parents_and_lines(tree, source))


def parents_and_lines(tree, source: str) -> tuple:
    """(node -> its parent, the source's lines, each line's offset in the source)."""
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    return parents, lines, offsets


def find_plants(path: str, source: str) -> list:
    """Every planted bug of one module (an empty list when it does not parse)."""
    got = parsed(source)
    if got is None:
        return []
    tree, modules, parents, lines, offsets = got
    plants = []
    for node in ast.walk(tree):
        if not _is_ref_read(node):
            continue
        parent = parents.get(node)
        if not array_use(node, parents, modules):
            continue
        # The name must be a local of an enclosing function (a kernel's ref, not a global).
        f = parent
        bound = False
        while f is not None:
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and \
                    not isinstance(f, ast.Lambda) and node.value.id in _param_names(f):
                bound = True
                break
            f = parents.get(f)
        if not bound:
            continue
        # Drop the `[...]`: keep the name's text, remove from its end to the subscript's end.
        name_end = offsets[node.value.end_lineno - 1] + _col(lines, node.value.end_lineno,
                                                             node.value.end_col_offset)
        sub_end = offsets[node.end_lineno - 1] + _col(lines, node.end_lineno, node.end_col_offset)
        new = source[:name_end] + source[sub_end:]
        plants.append(Plant(path, node.lineno, new,
                            source[offsets[node.lineno - 1] + _col(lines, node.lineno,
                                                                   node.col_offset):sub_end]))
    return plants


def _col(lines, lineno: int, byte_col: int) -> int:
    """ast's UTF-8 byte column -> str index on that line."""
    return len(lines[lineno - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))


_FENCE_OPEN = ("```python", "```{code-cell}", "```py", "```ipython")


def markdown_to_python(text: str) -> str:
    """The Python code cells of a Markdown / MyST notebook as one module (a notebook's cells
    run in one namespace), every other line blank so that line numbers stay those of the
    Markdown file. Cell options (``:tags:``, a ``---`` YAML header), IPython magics and doctest
    output are blank; doctest prompts are removed; a cell that does not parse alone (pseudo
    code) is left out."""
    lines = text.splitlines()
    out = [""] * len(lines)
    i = 0
    while i < len(lines):
        if not lines[i].strip().startswith(_FENCE_OPEN):
            i += 1
            continue
        j = i + 1
        cell = []  # (line index, code)
        while j < len(lines) and not lines[j].strip().startswith("```"):
            cell.append((j, lines[j]))
            j += 1
        cell = _cell_code(cell)
        code = "\n".join(c for _, c in cell)
        try:
            ast.parse(code)
        except (SyntaxError, ValueError):
            cell = []
        for k, c in cell:
            out[k] = c
        i = j + 1
    return "\n".join(out) + "\n"


def _cell_code(cell: list) -> list:
    """The Python lines of one code cell: options and YAML header dropped, doctest prompts
    removed (and its output lines dropped), magics dropped."""
    k = 0
    while k < len(cell) and cell[k][1].strip().startswith(":"):
        k += 1
    if k < len(cell) and cell[k][1].strip() == "---":
        k += 1
        while k < len(cell) and cell[k][1].strip() != "---":
            k += 1
        k += 1
    cell = cell[k:]
    doctest = any(c.lstrip().startswith(">>>") for _, c in cell)
    out = []
    for idx, c in cell:
        if doctest:
            st = c.lstrip()
            if st.startswith(">>> ") or st == ">>>":
                c = st[4:]
            elif st.startswith("... ") or st == "...":
                c = st[4:]
            else:
                continue
        if c.lstrip().startswith(("%", "!")):
            continue
        out.append((idx, c))
    return out


def read_source(path: str) -> str:
    """A file's Python source (Markdown: its code cells, see markdown_to_python)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    return markdown_to_python(text) if path.endswith(".md") else text


def python_files(targets) -> list:
    """The ``.py`` files (and ``.md`` files with Python code cells) under ``targets``."""
    out = []
    for t in targets:
        if os.path.isdir(t):
            for root, dirs, files in os.walk(t):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith(".md.py") and f[:-3] in files:
                        continue  # a conversion of the Markdown file next to it
                    if f.endswith((".py", ".md")):
                        out.append(os.path.join(root, f))
        elif t.endswith((".py", ".md")):
            out.append(t)
    return out


def measure(files, settings=None):
    """(found, plants, misses): plants reported with REF007 on their line."""
    from reflint.engine import lint_source
    from reflint.settings import Settings

    settings = settings or Settings(select=frozenset({"REF007"}))
    plants = []
    for p in files:
        plants.extend(find_plants(p, read_source(p)))
    found, misses = 0, []
    for plant in plants:
        # Only codes and lines are read: a fix's edits are not built (lazy_fixes).
        diags = lint_source(plant.source, plant.path, settings, lazy_fixes=True).diagnostics
        if any(d.code == "REF007" and d.line == plant.line for d in diags):
            found += 1
        else:
            misses.append(plant)
    return found, plants, misses


def installed_kernel_files() -> list:
    """The installed jax package's files with Pallas kernels: jax/experimental/pallas/ops and
    the Pallas back-compat test data (jax/_src/internal_test_util/.../pallas)."""
    import jax

    root = os.path.dirname(jax.__file__)
    return python_files([
        os.path.join(root, "experimental", "pallas", "ops"),
        os.path.join(root, "_src", "internal_test_util", "export_back_compat_test_data",
                     "pallas"),
    ])


def project_of(roots: list) -> None:
    """Activate the project of every Python file under ``roots`` (reflint.project), as
    ``reflint check ROOT...`` does: a kernel launched from another module is known there."""
    from reflint import project

    files = [f for f in python_files(roots) if f.endswith(".py")]
    project.activate(project.Project.build(files))


def main(argv) -> int:
    whole = "--project" in argv
    argv = [a for a in argv if a != "--project"]
    files = python_files(argv) if argv else installed_kernel_files()
    if whole:
        project_of(argv or files)
    found, plants, misses = measure(files)
    for m in misses:
        print(f"MISS {m.path}:{m.line}: {m.snippet}")
    pct = 100.0 * found / len(plants) if plants else 100.0
    print(f"{found} of {len(plants)} planted bugs reported ({pct:.1f} %) in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main(sys.argv[1:]))
