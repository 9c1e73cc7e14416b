"""Module summaries: what other modules of a project need to know about one module.

Extracted from the stdlib ``ast`` (one parse and one walk, no evaluation), as plain picklable
data keyed by qualified names, so the summary phase of ``reflint check`` is cheap, runs in the
worker pool and can be cached or sharded. ``reflint.project`` joins the summaries of a tree,
resolves imports and names between them and solves wrappers to a fixpoint; the analysis of one
module (``reflint.analysis``) reads the result through a ``ProjectView``.

A summary holds:

- ``aliases``: the module-level imports (local name -> absolute qualified name; relative imports
  resolved against the module's own name), which also are its re-exports;
- ``functions``: its top-level functions, with their parameters and the JAX transforms their
  decorators apply (``@jax.jit``, ``@functools.partial(jax.jit, static_argnums=...)``);
- ``forwards``: top-level functions that hand one of their parameters to a Pallas entry point or
  a JAX transform (``def buffered_pallas_call(kernel, ...): return pl.pallas_call(kernel, ...)``,
  also through ``functools.partial(kernel, ...)``), or to another function that may do so
  (solved by the project: a wrapper of a wrapper);
- ``uses``: the functions of other modules (imported names) it gives to a Pallas entry point, a
  transform or a function that may be a wrapper (``pl.pallas_call(kernels.scale, ...)``);
- ``classes``: its top-level classes and the qualified names of their bases (``class_bases``),
  so the project knows which classes of other modules are Flax NNX Modules or Variables
  (``class Block(layers.Base)`` where ``Base(nnx.Module)`` is in ``layers.py``).

Everything the extraction cannot resolve is left out: a name it does not know is never a fact.
"""

from __future__ import annotations

import ast
import os
import re

from . import api
from ._lazy import lazy_re
from ._record import field, record
from .astwalk import children as _children
from .astwalk import select as _select
from .astwalk import walk as _walk

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional


# In a launch's keywords bound by functools.partial: `partial(kernel, **config)` binds
# keywords no summary can name (not an identifier: no parameter is called so).
MAPPING_KEYWORDS = "**"


@record(frozen=True)
class FunctionSummary:
    """A top-level function of a module as other modules see it."""

    name: str
    line: int
    params: tuple  # ((name, kind), ...): kind "pos", "posonly", "vararg", "kwonly", "kwarg"
    transforms: tuple = ()  # ((api name, static), ...): the decorators' transforms, innermost first
    defaults: tuple = ()  # the parameters with a default value


@record(frozen=True)
class Target:
    """Where a function argument goes: a registry API (``api``, with the Callee's position)
    or a call of a project function not yet known to be a wrapper (``call``: its qualified
    name, the argument's position or keyword)."""

    kind: str  # "api" or "call"
    name: str  # the API's canonical name, or the called function's qualified name
    pos: Optional[int] = None
    kw: Optional[str] = None
    text: str = ""  # how the call spells it (`pl.pallas_call`), for messages


@record(frozen=True)
class Forward:
    """A parameter of a top-level function handed to ``target``."""

    function: str
    param: str
    index: Optional[int]  # the parameter's position (None: keyword-only)
    target: Target
    line: int
    bound: int = 0  # positional arguments bound by functools.partial on the way
    bound_kws: tuple = ()


@record(frozen=True)
class Use:
    """A function of another module (``qualname``, as imported) handed to ``target``."""

    qualname: str
    target: Target
    line: int
    bound: int = 0
    bound_kws: tuple = ()


@record
class ModuleSummary:
    """What other modules may need of one module (reflint.project reads it)."""

    module: str  # dotted name ("" when unknown)
    path: str
    is_package: bool = False
    aliases: dict = field(default_factory=dict)  # local name -> qualified name
    functions: dict = field(default_factory=dict)  # name -> FunctionSummary
    forwards: list = field(default_factory=list)
    uses: list = field(default_factory=list)
    # This module's own functions it launches directly (``Use``s of a Pallas entry point):
    # not launches for the project (the module's analysis sees them), only where a kernel's
    # ref parameters start for the refs it hands to other modules (``param_args``).
    local_uses: list = field(default_factory=list)
    complete: bool = True  # False: only the imports were read (a file without API words)
    library: bool = False  # a module of the environment, read for its wrappers (not checked)
    # Functions of other modules called with a function argument (may be wrappers: the
    # project reads an installed library's module for them).
    calls: set = field(default_factory=set)
    # Top-level classes: name -> (qualified name of each base, None where it is not known);
    # a name defined twice maps to None (``class_bases``).
    classes: dict = field(default_factory=dict)
    # Values (``_values``): what a function does to the refs it is given and what it returns,
    # and the module's own refs.
    ref_globals: dict = field(default_factory=dict)  # name -> line of `name = jax.new_ref(...)`
    ref_factories: dict = field(default_factory=dict)  # function name -> line of its return
    # function name -> ((param, index, kind, line), ...): kind a RefAccess kind ("setitem",
    # "augitem", "set", "swap", "addupdate"). (A freeze is not followed: the single-file
    # analysis does not end a ref its helper freezes either.)
    param_effects: dict = field(default_factory=dict)
    # function name -> ((module-level ref name, kind, line), ...): its writes of the module's
    # own refs (``ref_globals``), which a call from another module makes there.
    global_effects: dict = field(default_factory=dict)
    # Refs given to another module's functions (``_ref_args``): ((qualified name of the
    # called function as this module's imports name it, position or None, keyword or None,
    # line, the argument's name, how the call spells the function), ...): a module-level ref of this module, or a local of a
    # top-level function bound only by ``name = <constructor>(...)``.
    ref_args: tuple = ()
    # Parameters a top-level function hands on (``_param_args``): ((function, parameter,
    # qualified name of the called function (this module's too), position or None, keyword
    # or None, line, how the call spells the function), ...): a plain parameter the function
    # never binds again, passed to a function of the project. Read with the kernels and the
    # ``ref_args``: a kernel's ref parameters, and refs given to a function, reach the
    # functions it calls (``Project._solve_ref_args``).
    param_args: tuple = ()


def module_name(path: str) -> tuple:
    """(root, dotted module name) of the file ``path``, as type checkers find it: walk up
    while the folder holds an ``__init__.py``; the folder above the top package is the root
    (a ``src/`` layout's ``src``)."""
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    stem = base[:-3] if base.endswith(".py") else base
    parts = [] if stem == "__init__" else [stem]
    while os.path.exists(os.path.join(folder, "__init__.py")):
        folder, pkg = os.path.split(folder)
        parts.insert(0, pkg)
        if not pkg:
            break
    return folder, ".".join(parts)


# The words a file must spell to give a function to a Pallas entry point: only such files
# (and those spelling a project wrapper's name) are parsed whole; the others get their imports
# and top-level function headers read (``_headers``).
def has_api_words(source: str) -> bool:
    """The module spells a Pallas entry point: one of its names as a whole word, or
    ``kernel`` as an attribute (``pl.kernel``) or on an import line (``kernel`` is also a
    common word). Substring searches: the same question as a regex of the words between word
    boundaries, which cannot skip ahead on a literal, took four times longer
    (tests/test_text_scans.py compares the two)."""
    word = api.whole_words
    for w in _literal_words():
        if w == "kernel":
            if _kernel_word(source):
                return True
        elif next(word(source, w), None) is not None:
            return True
    return False


_IMPORT_HEAD = lazy_re(r"(?:from|import)\b")


def _kernel_word(source: str) -> bool:
    """``source`` spells ``.kernel`` or, on a line starting with ``from``/``import``,
    ``kernel``, as a whole word."""
    find = source.find
    i = find("kernel")
    while i >= 0:
        if not api.word_char(source[i + 6:i + 7]):
            before = source[i - 1] if i else ""
            if before == ".":
                return True
            if not api.word_char(before) and \
                    _IMPORT_HEAD.match(source, source.rfind("\n", 0, i) + 1) is not None:
                return True
        i = find("kernel", i + 1)
    return False


_WORDS: Optional[tuple] = None


def _literal_words() -> tuple:
    global _WORDS
    if _WORDS is None:
        _WORDS = tuple(api.spelled_names(api.family(api.Family.KERNEL)))
    return _WORDS


_OPEN = str.maketrans("", "", "([{")
_CLOSE = str.maketrans("", "", ")]}")


_CLASS = lazy_re(r"\s*class\s+(\w+)")


def _reduced(source: str, relevant=None) -> Optional[str]:
    """The module cut down to what a summary reads, on the same lines: its top-level
    statements in full but for functions and classes, whose bodies are cut (a function keeps
    its decorators and header, a body ``pass``; a class becomes ``Name = None``), unless
    ``relevant(text)`` says the statement may launch or forward a function. Parsed in a
    fraction of the whole file's time. None when the lines cannot be cut (a bracket in a
    string, a string at column 0 ...): the caller parses the whole file then."""
    plan = _cut_plan(source, relevant)
    return _cut_text(plan) if plan is not None else None


def _cut_plan(source: str, relevant=None) -> Optional[tuple]:
    """(the source's lines, what ``_reduced`` makes of each top-level statement) or None
    (see ``_reduced``): for each top-level statement (its first and last lines, 0-based,
    decorators included), ("keep", first, last), ("class", first, last, line, name)
    (``name = None`` on that line) or ("def", first, last, the header's last line, the
    ``pass`` line or None for a body on the header's lines)."""
    lines = source.splitlines()
    n = len(lines)
    chunks = []  # (first line, last line) of each top-level statement, decorators included
    decorating = False  # the last chunk is decorators only, so far
    i = 0
    while i < n:
        line = lines[i]
        if line[:1] in ("", " ", "\t", "#"):
            i += 1
            continue
        if line[:1] in (")", "]", "}"):
            return None
        depth = 0
        j = i
        while True:
            text = lines[j].split("#", 1)[0] if "#" in lines[j] else lines[j]
            depth += len(text) - len(text.translate(_OPEN))
            depth -= len(text) - len(text.translate(_CLOSE))
            nxt = j + 1
            if depth < 0:
                return None
            if depth == 0 and not text.rstrip().endswith("\\"):
                # The statement goes on while the next lines are indented (a block).
                while nxt < n and lines[nxt][:1] in ("", " ", "\t", "#", ")", "]", "}"):
                    if lines[nxt][:1] in (")", "]", "}"):
                        return None
                    nxt += 1
                break
            if nxt >= n:
                return None
            j = nxt
        if decorating:
            chunks[-1] = (chunks[-1][0], nxt - 1)  # decorators and what they decorate
        else:
            chunks.append((i, nxt - 1))
        decorating = line.startswith("@")
        i = nxt
    steps = []
    for a, b in chunks:
        body = lines[a:b + 1]
        k = 0
        while k < len(body) and body[k].startswith("@"):
            k += 1
        head = body[k] if k < len(body) else ""
        is_def = head.startswith(("def ", "async def "))
        is_class = head.startswith("class ") or (k < len(body) and _CLASS.match(head))
        if not (is_def or is_class) or (relevant is not None and relevant("\n".join(body))):
            steps.append(("keep", a, b))
            continue
        if is_class:
            m = _CLASS.match(head)
            if m is None:
                return None
            steps.append(("class", a, b, a + k, m.group(1)))
            continue
        # The header: from `def` to the line ending in ':' at bracket depth 0.
        depth = 0
        h = k
        while h < len(body):
            text = body[h].split("#", 1)[0] if "#" in body[h] else body[h]
            depth += len(text) - len(text.translate(_OPEN))
            depth -= len(text) - len(text.translate(_CLOSE))
            if depth == 0:
                break
            h += 1
        last = body[h].split("#", 1)[0].rstrip()
        if last.endswith(":"):
            if a + h + 1 > b:
                return None
            steps.append(("def", a, b, a + h, a + h + 1))
        else:
            steps.append(("def", a, b, a + h, None))
    return lines, steps


def _cut_text(plan: tuple) -> str:
    lines, steps = plan
    out = [""] * len(lines)
    for step in steps:
        if step[0] == "keep":
            out[step[1]:step[2] + 1] = lines[step[1]:step[2] + 1]
        elif step[0] == "class":
            out[step[3]] = f"{step[4]} = None"
        else:
            _, a, _, h, pass_line = step
            out[a:h + 1] = lines[a:h + 1]
            if pass_line is not None:
                out[pass_line] = "    pass"
    return "\n".join(out) + "\n"


def _cut_tree(plan: tuple, whole: ast.Module) -> Optional[ast.Module]:
    """``ast.parse(_cut_text(plan))`` made from ``whole`` (the whole module's tree) without
    parsing again; None unless the plan's statements are the tree's top-level statements,
    one for one (a line at column 0 inside a string, say, makes the plan cut a statement
    apart): the caller parses the cut text then. tests/test_summary_tree.py compares the
    two trees."""
    lines, steps = plan
    merged = []  # a run of kept statements is kept text: one step (a docstring's lines at
    for step in steps:  # column 0 make several)
        if step[0] == "keep" and merged and merged[-1][0] == "keep" and \
                merged[-1][2] + 1 == step[1]:
            merged[-1] = ("keep", merged[-1][1], step[2])
        else:
            merged.append(step)
    body = whole.body
    out = []
    i = 0
    for step in merged:
        kind, first, last = step[0], step[1], step[2]
        group = []
        while i < len(body):
            st = body[i]
            decorators = getattr(st, "decorator_list", None)
            start = (decorators[0].lineno if decorators else st.lineno) - 1
            if start > last:
                break
            if start < first or (not group and start != first) or st.end_lineno - 1 > last:
                return None
            group.append(st)
            i += 1
        if not group:
            return None
        if kind == "keep":
            out.extend(group)
            continue
        if len(group) != 1:
            return None
        st = group[0]
        if kind == "class":
            line, name = step[3] + 1, step[4]
            if type(st) is not ast.ClassDef or st.name != name:
                return None
            n = len(name)
            out.append(ast.Assign(
                targets=[ast.Name(id=name, ctx=ast.Store(), lineno=line, col_offset=0,
                                  end_lineno=line, end_col_offset=n)],
                value=ast.Constant(value=None, lineno=line, col_offset=n + 3,
                                   end_lineno=line, end_col_offset=n + 7),
                type_comment=None, lineno=line, col_offset=0, end_lineno=line,
                end_col_offset=n + 7))
            continue
        if type(st) not in (ast.FunctionDef, ast.AsyncFunctionDef):
            return None
        header, pass_line = step[3], step[4]
        if pass_line is None:  # a body on the header's lines: the def as it is
            if st.end_lineno - 1 > header:
                return None
            out.append(st)
            continue
        if st.body[0].lineno - 1 <= header:
            return None
        cut = _shallow_copy(st)
        line = pass_line + 1
        cut.body = [ast.Pass(lineno=line, col_offset=4, end_lineno=line, end_col_offset=8)]
        cut.end_lineno, cut.end_col_offset = line, 8
        out.append(cut)
    if i != len(body):
        return None
    return ast.Module(body=out, type_ignores=[])


_REBINDS = lazy_re(r"(?:([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::[^=]*)?=(?!=)"
                   r"|del\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*$"
                   r"|class\s+([A-Za-z_]\w*))")


_COLUMN0 = lazy_re(r"(?:import |from |def |async def |@|[A-Za-z_])[^\n]*")
# The same after a newline: a pattern starting with a literal is searched for that literal
# first, where one anchored at every line's start (``^`` with ``re.M``) tries each position.
_COLUMN0_NL = lazy_re(r"\n(?:import |from |def |async def |@|[A-Za-z_])[^\n]*")


def _shallow_copy(node: ast.AST) -> ast.AST:
    """``copy.copy(node)`` (without importing ``copy``: a check reads no other copy)."""
    out = type(node).__new__(type(node))
    out.__dict__.update(node.__dict__)
    return out


def _column0_lines(source: str):
    """(offset, text) of each line starting with an import, a def, a decorator or a name."""
    m = _COLUMN0.match(source)
    if m is not None:
        yield 0, m.group()
    for m in _COLUMN0_NL.finditer(source):
        yield m.start() + 1, m.group()[1:]


def _headers(source: str) -> Optional[str]:
    """The module's top-level imports and function headers (decorators included, bodies
    replaced by ``pass``), on the same lines: cheaper than ``_reduced`` (which keeps every
    other statement), for a module without a Pallas name. Only lines at column 0 are read.
    None when the lines cannot be cut: the caller parses the whole file then."""
    lines = None
    out: dict = {}  # line index -> text
    pending: list = []  # decorators, until the statement they decorate
    line_no = 0
    pos = 0
    skip_to = -1
    for start, line in _column0_lines(source):
        line_no += source.count("\n", pos, start)
        pos = start
        if line_no <= skip_to:
            continue
        if not line.startswith(("import ", "from ", "def ", "async def ", "@")):
            pending = []  # a class (or anything else) the decorators belong to
            r = _REBINDS.match(line)
            if r is not None:  # `name = ...`, `del name`, `class Name`: no import now
                out[line_no] = f"del {r.group(1) or r.group(2) or r.group(3)}"
            continue
        text = line.split("#", 1)[0] if "#" in line else line
        depth = len(text) - len(text.translate(_OPEN)) - (len(text) - len(text.translate(_CLOSE)))
        j = line_no
        if depth > 0 or text.rstrip().endswith("\\"):
            if lines is None:
                lines = source.splitlines()
            while depth > 0 or text.rstrip().endswith("\\"):
                j += 1
                if j >= len(lines):
                    return None
                text = lines[j].split("#", 1)[0] if "#" in lines[j] else lines[j]
                depth += len(text) - len(text.translate(_OPEN))
                depth -= len(text) - len(text.translate(_CLOSE))
            if depth != 0:
                return None
        if depth < 0:
            return None
        block = [line] if j == line_no else lines[line_no:j + 1]
        if line.startswith("@"):
            pending.extend(zip(range(line_no, j + 1), block))
        else:
            if line.startswith(("def ", "async def ")):
                for k, t in pending:
                    out[k] = t
                if text.rstrip().endswith(":"):
                    out[j + 1] = "    pass"  # else a one-line body (`def f(): return x`)
            for k, t in zip(range(line_no, j + 1), block):
                out[k] = t
            pending = []
        skip_to = j
    if not out:
        return "\n"
    n = max(out) + 1
    return "\n".join(out.get(k, "") for k in range(n)) + "\n"


def _resolve_relative(module: str, is_package: bool, level: int, name: Optional[str]):
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (level - 1)]
    if name:
        base = base + name.split(".")
    return ".".join(base) if base else None


def _dotted(node) -> Optional[list]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _bound_names(fn) -> set:
    """Every name a function binds anywhere in its body (nested scopes included), besides its
    own parameters: a name it binds is not the module's."""
    out: set = set()
    for n in _walk(fn):
        if n is fn:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out


def _defaults(fn) -> tuple:
    a = fn.args
    positional = a.posonlyargs + a.args
    out = [p.arg for p in positional[len(positional) - len(a.defaults):]] if a.defaults else []
    out += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return tuple(out)


def _params(fn) -> tuple:
    a = fn.args
    out = [(p.arg, "posonly") for p in a.posonlyargs] + [(p.arg, "pos") for p in a.args]
    if a.vararg:
        out.append((a.vararg.arg, "vararg"))
    out += [(p.arg, "kwonly") for p in a.kwonlyargs]
    if a.kwarg:
        out.append((a.kwarg.arg, "kwarg"))
    return tuple(out)


# The nodes ``_Extractor.walk_calls`` reads (any other is only walked through).
_CALL_WALK_TYPES = frozenset({
    ast.Call, ast.Name, ast.Assign, ast.If, ast.arg, ast.FunctionDef, ast.AsyncFunctionDef,
    ast.ClassDef, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ExceptHandler})
_CALLS = frozenset({ast.Call})


class _Extractor:
    def __init__(self, summary: ModuleSummary, defined: set):
        self.s = summary
        self.defined = defined  # top-level function names

    # -- names -------------------------------------------------------------------------------

    def qualname(self, node, shadowed: set) -> Optional[str]:
        parts = _dotted(node)
        if not parts or parts[0] in shadowed:
            return None
        head = parts[0]
        if head in self.s.aliases:
            return ".".join([self.s.aliases[head]] + parts[1:])
        if head in self.defined and len(parts) == 1 and self.s.module:
            return f"{self.s.module}.{head}"
        return None

    # -- calls -------------------------------------------------------------------------------

    def targets(self, call: ast.Call, shadowed: set) -> list:
        """(Target, argument node) for each argument of ``call`` that may be a function the
        call traces or launches."""
        qn = self.qualname(call.func, shadowed)
        if qn is None:
            return []
        text = ".".join(_dotted(call.func) or ())
        a = api.lookup(qn)
        if a is not None:
            out = []
            if a.family is api.Family.TRANSFORM and a.role is not None and call.args and \
                    not isinstance(call.args[0], ast.Starred):
                out.append((Target("api", a.name, 0, None, text), call.args[0]))
            elif a.family is api.Family.KERNEL and a.callees and a.callees[0].refs:
                c = a.callees[0]
                arg = None
                if c.pos is not None and len(call.args) > c.pos and \
                        not any(isinstance(x, ast.Starred) for x in call.args[:c.pos + 1]):
                    arg = call.args[c.pos]
                for k in call.keywords:
                    if c.kw is not None and k.arg == c.kw:
                        arg = k.value
                if arg is not None:
                    out.append((Target("api", a.name, c.pos, c.kw, text), arg))
            return out
        if qn.startswith(("jax.", "flax.", "optax.", "numpy.", "functools.", "builtins.")):
            return []
        out = []
        for i, x in enumerate(call.args):
            if isinstance(x, ast.Starred):
                break
            out.append((Target("call", qn, i, None, text), x))
        for k in call.keywords:
            if k.arg is not None:
                out.append((Target("call", qn, None, k.arg, text), k.value))
        return out

    def function_arg(self, node, shadowed: set):
        """(the argument's name node, positional arguments bound, keywords bound) for a plain
        name or attribute, or a ``functools.partial`` of one (``**config`` among its
        keywords: ``MAPPING_KEYWORDS``, which the analysis reads as ``_mapping_binds`` does)."""
        if isinstance(node, ast.Call):
            qn = self.qualname(node.func, shadowed)
            if qn is None or api.lookup(qn) is None or \
                    api.lookup(qn).family is not api.Family.PARTIAL or not node.args or \
                    any(isinstance(x, ast.Starred) for x in node.args):
                return None
            kws = tuple(k.arg for k in node.keywords if k.arg is not None)
            if len(kws) < len(node.keywords):
                kws += (MAPPING_KEYWORDS,)
            return node.args[0], len(node.args) - 1, kws
        if isinstance(node, (ast.Name, ast.Attribute)):
            return node, 0, ()
        return None

    # -- the module --------------------------------------------------------------------------

    def run(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(stmt)
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    stmt.name in self.defined:
                self.decorators_of(stmt)
                self.walk_calls(stmt.body, stmt)
            else:
                self.walk_calls([stmt], None)

    def function(self, fn) -> None:
        transforms = []
        for d in reversed(fn.decorator_list):
            t = self.decorator(d)
            if t is None:
                transforms = None
                break
            if t:
                transforms.append(t)
        if transforms is None:  # a decorator the summary cannot see through
            return
        self.s.functions[fn.name] = FunctionSummary(fn.name, fn.lineno, _params(fn),
                                                    tuple(transforms), _defaults(fn))

    def decorator(self, d):
        """(api name, static) for a transform decorator, () for one that leaves the function
        as it is (staticmethod ...), None for anything else."""
        static = False
        node = d
        if isinstance(d, ast.Call):
            qn = self.qualname(d.func, set())
            a = api.lookup(qn)
            if a is not None and a.family is api.Family.PARTIAL and d.args:
                static = any((k.arg or "").startswith("static") for k in d.keywords)
                node = d.args[0]
            else:
                return None
        qn = self.qualname(node, set())
        a = api.lookup(qn)
        if a is not None and a.family is api.Family.TRANSFORM and a.role is not None:
            return (a.name, static)
        return None

    def walk_calls(self, body: list, fn) -> None:
        """Record what each call gives to a transform, a Pallas entry point or another
        function: a parameter of the enclosing top-level function ``fn`` (a forward) or an
        imported function (a use). Only calls of an imported or module-level name are read."""
        params: dict = {}
        if fn is not None:
            params = {n: (i if k in ("pos", "posonly") else None)
                      for i, (n, k) in enumerate(_params(fn)) if k not in ("vararg", "kwarg")}
        # One walk: the calls, and every name bound anywhere below (a name bound in the
        # function or a nested scope is not the module's, wherever it is used: conservative).
        calls = []
        bound: set = set()
        rebound: set = set()  # a parameter assigned, or bound again by a nested scope
        stores: dict = {}  # name -> how many times a plain name binding stores it
        assigned: dict = {}  # name -> the values of its `name = <value>` assignments
        others: set = set()  # names bound otherwise: parameters, defs, imports, globals
        branched: set = set()  # id() of the assignments directly in an `if`'s branches
        for n in _select(body, _CALL_WALK_TYPES):  # the nodes read below, in the walk's order
            t = type(n)
            if t is ast.Call:
                calls.append(n)
            elif t is ast.Name:
                if type(n.ctx) is not ast.Load:
                    bound.add(n.id)
                    rebound.add(n.id)
                    stores[n.id] = stores.get(n.id, 0) + 1
            elif t is ast.Assign:
                if len(n.targets) == 1 and type(n.targets[0]) is ast.Name:
                    assigned.setdefault(n.targets[0].id, []).append(
                        (n.value, id(n) in branched))
            elif t is ast.If:  # (walked before its statements)
                branched.update(id(st) for st in n.body + n.orelse if type(st) is ast.Assign)
            elif t is ast.arg:
                bound.add(n.arg)
                rebound.add(n.arg)
                others.add(n.arg)
            elif t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
                bound.add(n.name)
                others.add(n.name)
            elif t is ast.Import or t is ast.ImportFrom:
                names = [(a.asname or a.name).split(".")[0] for a in n.names]
                bound.update(names)
                others.update(names)
            elif t is ast.Global or t is ast.Nonlocal:
                bound.update(n.names)
                others.update(n.names)
            elif t is ast.ExceptHandler and n.name:
                bound.add(n.name)
                others.add(n.name)
        if not calls:
            return
        known = self.s.aliases.keys() | self.defined
        sh = bound | set(params)
        if fn is not None:
            sh |= {n for n, _ in _params(fn)}
        # A local bound once by `kernel = functools.partial(body, ...)` (or `kernel = body`),
        # or by such assignments in the branches of `if` statements (`kernel = a` / `else:
        # kernel = b`: each may run), and then launched: `pl.pallas_call(kernel, ...)` launches
        # `body`. Any other binding of the name (a parameter, a loop, `with ... as`, a nested
        # scope's, a second assignment in sequence) leaves it unknown.
        single = {n: [v for v, _ in vs] for n, vs in assigned.items()
                  if stores.get(n) == len(vs) and (len(vs) == 1 or all(b for _, b in vs)) and
                  n not in others and n not in params and
                  (fn is None or n not in {p for p, _ in _params(fn)}) and
                  all(type(v) in (ast.Call, ast.Name, ast.Attribute) for v, _ in vs)}
        for call in calls:
            head = call.func
            while type(head) is ast.Attribute:
                head = head.value
            if type(head) is ast.Name and head.id in known:
                self.call(call, sh, fn, params, rebound, single)

    def call(self, node: ast.Call, sh: set, fn, params: dict, rebound: set,
             single: Optional[dict] = None) -> None:
        for target, arg in self.targets(node, sh):
            got = self.function_arg(arg, sh)
            if got is None:
                continue
            name_node, bound, kws = got
            if single and type(name_node) is ast.Name and name_node.id in single:
                # `kernel = lib.body` (or a partial of it), then `pallas_call(kernel)` or
                # `pallas_call(partial(kernel, n=2))`: each function the name may hold.
                for value in single[name_node.id]:
                    inner = self.function_arg(value, sh)
                    if inner is not None:
                        self._call_target(node, target, inner[0], inner[1] + bound,
                                          inner[2] + kws, sh, fn, params, rebound)
            else:
                self._call_target(node, target, name_node, bound, kws, sh, fn, params,
                                  rebound)

    def _call_target(self, node: ast.Call, target: Target, name_node, bound: int,
                     kws: tuple, sh: set, fn, params: dict, rebound: set) -> None:
        """What the function ``name_node`` (``bound`` positional arguments and keywords
        ``kws`` bound by partial), given to ``node`` as its argument ``target``, records."""
        if fn is not None and isinstance(name_node, ast.Name) and \
                name_node.id in params and name_node.id not in rebound:
            if target.kind == "call":
                self.s.calls.add(target.name)
            self.s.forwards.append(Forward(fn.name, name_node.id, params[name_node.id],
                                           target, node.lineno, bound, kws))
            return
        if isinstance(name_node, ast.Name) and name_node.id in self.defined and \
                name_node.id not in self.s.aliases:
            if target.kind == "call" and name_node.id not in sh:
                self.s.calls.add(target.name)  # may be a wrapper: its own analysis asks
            elif target.kind == "api" and name_node.id not in sh and self.s.module:
                self.s.local_uses.append(Use(f"{self.s.module}.{name_node.id}", target,
                                             node.lineno, bound, kws))
            return  # a function of this module: its own analysis sees the call
        qn = self.qualname(name_node, sh)
        if qn is not None:
            if target.kind == "call":
                self.s.calls.add(target.name)
            self.s.uses.append(Use(qn, target, node.lineno, bound, kws))

    def decorators_of(self, fn) -> None:
        for d in fn.decorator_list:
            for node in _walk(d):
                if isinstance(node, ast.Call):
                    for target, arg in self.targets(node, set()):
                        got = self.function_arg(arg, set())
                        if got is not None:
                            qn = self.qualname(got[0], set())
                            if qn is not None:
                                self.s.uses.append(Use(qn, target, node.lineno, got[1],
                                                       got[2]))

    @staticmethod
    def rebound_params(fn) -> set:
        out = set()
        for n in _walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
        return out


def _imports(tree: ast.Module, s: ModuleSummary) -> None:
    """The module-level imports (also those under ``if``/``try`` at module level)."""
    stack = list(tree.body)
    while stack:
        st = stack.pop(0)
        if isinstance(st, (ast.If, ast.Try)):
            stack[:0] = list(st.body) + [x for h in getattr(st, "handlers", ()) for x in h.body]\
                + list(st.orelse) + list(getattr(st, "finalbody", ()))
            continue
        if isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    s.aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    s.aliases[top] = top
        elif isinstance(st, ast.ImportFrom):
            if st.level:
                base = _resolve_relative(s.module, s.is_package, st.level, st.module)
            else:
                base = st.module
            if base is None:
                continue
            for a in st.names:
                if a.name == "*":
                    continue
                s.aliases[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            s.aliases.pop(st.name, None)
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)):
            targets = st.targets if isinstance(st, (ast.Assign, ast.Delete)) else [st.target]
            for t in targets:
                for name in _target_names(t):
                    s.aliases.pop(name, None)


def _target_names(t) -> list:
    """The names an assignment (or ``del``) target binds: ``core.x[i] = v`` binds none
    (``core`` stays the imported module), ``a, *b = v`` binds ``a`` and ``b``."""
    if type(t) is ast.Name:
        return [t.id]
    if type(t) in (ast.Tuple, ast.List):
        return [n for e in t.elts for n in _target_names(e)]
    if type(t) is ast.Starred:
        return _target_names(t.value)
    return []


def summarize(source: str, path: str, module: Optional[str] = None,
              tree: Optional[ast.Module] = None, whole=None,
              parsed: bool = False) -> Optional[ModuleSummary]:
    """The summary of one module (None when it does not parse).

    ``whole``: a function giving ``ast.parse(source)`` (None if that fails), for a caller
    that parses the whole module anyway (the check that follows): a module spelling an
    entry point or a ref is then cut from that tree (``_cut_tree``), not parsed again.
    ``parsed``: ``whole`` has its tree already; any other module is read from it too (its
    top-level imports, also those under ``if``/``try``, and function headers), not from its
    cut headers (``_headers``)."""
    if module is None:
        module = module_name(path)[1]
    s = ModuleSummary(module, path, is_package=os.path.basename(path) == "__init__.py")
    full = has_api_words(source)
    refs = has_ref_words(source)
    reduced = False
    whole_tree = tree  # the whole module's tree, when there is one (class_bases reads it)
    if whole is not None:
        whole = _once(whole)
    if tree is None:
        plan = cut = None
        if full or refs:
            plan = _cut_plan(source, _relevant_or_refs if refs else _relevant)
            if plan is not None and whole is not None:
                got = whole_tree = whole()
                tree = _cut_tree(plan, got) if got is not None else None
                reduced = tree is not None
            if tree is None and plan is not None:
                cut = _cut_text(plan)
        elif parsed:
            tree = whole_tree = whole()
            reduced = True
        else:
            cut = _headers(source)
        if cut is not None:
            try:
                tree = ast.parse(cut, path)
                reduced = True
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
    if tree is None and whole is not None:
        tree = whole_tree = whole()
    if tree is None:
        try:
            tree = whole_tree = ast.parse(source, path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    _imports(tree, s)
    class_bases(source, s, whole_tree)
    defined = {st.name for st in tree.body
               if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    ex = _Extractor(s, defined)
    if not full:
        # Without a transform's or an entry point's name, the module can only define,
        # re-export and call functions (a wrapper of a wrapper: ``summarize_calls`` reads
        # its calls later).
        s.complete = False
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ex.function(st)
        if refs:
            _values(tree, s, source)
        return s
    # Statements without an API's name were cut: a call of a wrapper there is read when the
    # project knows the wrapper's name (summarize_calls).
    s.complete = not reduced
    try:
        ex.run(tree)
        if refs:
            _values(tree, s, source)
    except RecursionError:
        s.functions.clear()
        s.forwards.clear()
        s.uses.clear()
        _clear_values(s)
    return s


def _once(fn):
    """``fn`` called at most once: its result is kept."""
    box: list = []

    def get():
        if not box:
            box.append(fn())
        return box[0]
    return get


def _relevant(text: str) -> bool:
    """A top-level statement that may launch, trace or forward a function: it spells a
    Pallas entry point, a transform or functools.partial."""
    return any(w in text for w in _statement_words())


_STATEMENT_WORDS: Optional[tuple] = None


def _statement_words() -> tuple:
    global _STATEMENT_WORDS
    if _STATEMENT_WORDS is None:
        names = api.family(api.Family.KERNEL, api.Family.TRANSFORM, api.Family.PARTIAL)
        _STATEMENT_WORDS = tuple(api.spelled_names(names))
    return _STATEMENT_WORDS


def summarize_calls(source: str, s: ModuleSummary) -> ModuleSummary:
    """Complete an imports-only summary (the module spells a wrapper's name)."""
    try:
        tree = ast.parse(source, s.path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return s
    full = ModuleSummary(s.module, s.path, s.is_package)
    _imports(tree, full)
    full.classes = s.classes
    defined = {st.name for st in tree.body
               if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    try:
        _Extractor(full, defined).run(tree)
    except RecursionError:
        return s
    full.ref_globals, full.ref_factories = s.ref_globals, s.ref_factories
    full.param_effects, full.global_effects = s.param_effects, s.global_effects
    full.ref_args = s.ref_args
    full.param_args = s.param_args
    return full


# -- classes: which are Flax NNX Modules or Variables (read by reflint.project) ---------------

_CLASS_HEADER = lazy_re(r"class[ \t]+([A-Za-z_]\w*)[ \t]*[(:[]")


def _class_headers(source: str):
    """The matches of ``_CLASS_HEADER`` at the start of a line (``re.M``'s ``^``: the text's
    start or after ``\\n``), found by substring search: a regex anchored at every line's
    start cannot skip ahead, five times slower."""
    match = _CLASS_HEADER.match
    if source.startswith("class"):
        m = match(source, 0)
        if m is not None:
            yield m
    find = source.find
    i = find("\nclass")
    while i >= 0:
        m = match(source, i + 1)
        if m is not None:
            yield m
        i = find("\nclass", i + 1)


def class_bases(source: str, s: ModuleSummary, tree: Optional[ast.Module] = None) -> None:
    """Fill ``s.classes`` from the module's top-level ``class`` statements (column 0): each
    base as a qualified name through the module's imports (``nnx.Module`` ->
    ``flax.nnx.Module``, ``Base`` of this module -> ``pkg.mod.Base``, a generic
    ``Base[T]`` -> its ``Base``), None for one it cannot name. Only the headers are parsed
    (the bodies are not read); a class whose header does not parse is left out, a name
    defined twice is None (which one a reader gets is not known). ``tree``: the module's
    whole tree, when the caller has it: its class statements, no header parsed."""
    if "class" not in source:
        return
    if tree is not None:
        classes = [st for st in tree.body if type(st) is ast.ClassDef]
        names, twice = set(), set()
        for c in classes:
            (twice if c.name in names else names).add(c.name)
        for c in classes:
            s.classes[c.name] = None if c.name in twice else \
                tuple(_base_name(b, s, names) for b in c.bases)
        return
    lines = None
    headers = []
    for m in _class_headers(source):
        if lines is None:
            lines = source.splitlines()
        first = source.count("\n", 0, m.start())
        text = _class_header(lines, first)
        if text is None:
            continue
        headers.append((m.group(1), text))
    names = [n for n, _ in headers]
    for name, text in headers:
        if names.count(name) > 1:
            s.classes[name] = None
            continue
        node = None
        for cand in (text + "\n    pass\n", text + "\n"):
            try:
                tree = ast.parse(cand)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if tree.body and isinstance(tree.body[0], ast.ClassDef):
                node = tree.body[0]
                break
        if node is None:
            continue
        s.classes[name] = tuple(_base_name(b, s, names) for b in node.bases)


def _class_header(lines: list, first: int) -> Optional[str]:
    """The text of the class header starting on line ``first``: up to the line where the
    brackets close (None past 40 lines, or when they do not)."""
    depth = 0
    for j in range(first, min(first + 40, len(lines))):
        text = lines[j].split("#", 1)[0] if "#" in lines[j] else lines[j]
        depth += len(text) - len(text.translate(_OPEN))
        depth -= len(text) - len(text.translate(_CLOSE))
        if depth < 0:
            return None
        if depth == 0 and not text.rstrip().endswith("\\"):
            return "\n".join(lines[first:j + 1])
    return None


def _base_name(node, s: ModuleSummary, classes) -> Optional[str]:
    if isinstance(node, ast.Subscript):  # `nnx.Variable[A]`, `Generic[T]`
        node = node.value
    parts = _dotted(node)
    if not parts:
        return None
    head = parts[0]
    if head in s.aliases:
        return ".".join([s.aliases[head]] + parts[1:])
    if head in classes and len(parts) == 1 and s.module:
        return f"{s.module}.{head}"
    return None


# -- values: refs returned, written, frozen by a module's functions; its own refs ------------

_REF_WORDS: Optional[tuple] = None


def _ref_words() -> tuple:
    global _REF_WORDS
    if _REF_WORDS is None:
        F = api.Family
        names = api.family(F.REF_CONSTRUCTOR, F.REF_WRITE)
        _REF_WORDS = tuple(w for w in api.spelled_names(names) if w not in ("set", "swap"))
    return _REF_WORDS


def has_ref_words(source: str) -> bool:
    """The module creates or writes a ref (a constructor's name, ``[...]``,
    ``jax.ref.addupdate``): its functions' bodies that do so are read for ``_values``.
    (Whole words: ``mutable_array_p``, a JAX primitive, is not one.)"""
    return "[...]" in source or any(next(api.whole_words(source, w), None) is not None
                                    for w in _ref_words())


def _relevant_or_refs(text: str) -> bool:
    """A statement to keep whole in a module spelling a ref word: it may launch or forward
    a function, or create, write (``[...]``, ``jax.ref.addupdate``) or freeze a ref. (A
    helper writing ``r[i] = v`` without a ref word is not read: keeping every function with
    a subscript write costs a third more parsing on numpy-heavy modules.)"""
    return _relevant(text) or has_ref_words(text)


def _clear_values(s: ModuleSummary) -> None:
    s.ref_globals.clear()
    s.ref_factories.clear()
    s.param_effects.clear()
    s.global_effects.clear()
    s.ref_args = ()
    s.param_args = ()


def _api_of(node, aliases: dict, shadowed: set):
    """The registry entry a call's function names (through the module's imports)."""
    parts = _dotted(node)
    if not parts or parts[0] in shadowed or parts[0] not in aliases:
        return None
    return api.lookup(".".join([aliases[parts[0]]] + parts[1:]))


def _is_ctor(node, aliases: dict, shadowed: set) -> bool:
    if not isinstance(node, ast.Call):
        return False
    a = _api_of(node.func, aliases, shadowed)
    return a is not None and a.family is api.Family.REF_CONSTRUCTOR


_EFFECT_KINDS = {api.REF_SET: "set", api.REF_SWAP: "swap", api.REF_ADDUPDATE: "addupdate"}


def _values(tree: ast.Module, s: ModuleSummary, source: str) -> None:
    """The module's refs (``name = jax.new_ref(...)`` bound once at module level), its
    functions returning a new ref (every ``return`` gives a constructor's result), and what
    its functions do to their parameters (a subscript write, ``jax.ref.addupdate/set/swap``).
    Only undecorated top-level functions; a parameter the function binds
    again gives nothing."""
    aliases = s.aliases
    stores: dict = {}
    ctor_line: dict = {}
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores[st.name] = stores.get(st.name, 0) + 1
            continue
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            for a in st.names:
                n = (a.asname or a.name).split(".")[0]
                stores[n] = stores.get(n, 0) + 1
            continue
        for n in _walk(st):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                stores[n.id] = stores.get(n.id, 0) + 1
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if len(targets) == 1:
                for name, value in _pairs(targets[0], st.value):
                    if _is_ctor(value, aliases, set()):
                        ctor_line[name] = st.lineno
    declared = "global" in source or "nonlocal" in source
    for name, line in ctor_line.items():
        if stores.get(name) == 1 and (not declared or re.search(
                r"\b(?:global|nonlocal)\b[^\n]*\b" + re.escape(name) + r"\b",
                source) is None):
            s.ref_globals[name] = line
    out: list = []
    handed: list = []
    defined = {st.name: stores.get(st.name) for st in tree.body
               if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if s.ref_globals:
        # Module-level code giving the module's refs to another module's functions.
        rebound = {n for n, k in stores.items() if k != 1}
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            calls = _select((st,), _CALLS)
            out.extend(_ref_args(calls, aliases, rebound, set(s.ref_globals)))
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or stores.get(fn.name) != 1:
            continue
        if len(fn.body) == 1 and isinstance(fn.body[0], ast.Pass):
            continue  # a body the reduced parse cut (or an empty function)
        scanned = _scan(fn)  # one walk for the three
        if not fn.decorator_list:
            _function_values(fn, s, aliases, scanned)
        out.extend(_function_ref_args(fn, s, aliases, scanned))
        handed.extend(_param_args(fn, s, aliases, defined, scanned))
    s.ref_args = tuple(sorted(set(out), key=lambda a: (a[3], a[0], str(a[1]), str(a[2]))))
    s.param_args = tuple(sorted(set(handed), key=lambda a: (a[5], a[0], a[1], a[2],
                                                             str(a[3]), str(a[4]))))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _scan(fn) -> tuple:
    """One walk of a function's body: (names it binds anywhere, nested scopes included; its
    own nodes that matter: returns, assignments, calls; whether it is a generator or
    coroutine; every call in it, a nested scope's too)."""
    stored: set = set()
    own: list = []
    calls: list = []
    special = False
    params = _arg_nodes(fn)
    stack = [(c, False) for c in fn.body]
    while stack:
        n, nested = stack.pop()
        t = type(n)
        if t is ast.Name:
            if type(n.ctx) is not ast.Load:
                stored.add(n.id)
            continue
        if t is ast.arg:
            if n not in params:
                stored.add(n.arg)
            continue
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
            stored.add(n.name)
            nested_here = True
        elif t is ast.Lambda:
            nested_here = True
        else:
            nested_here = nested
            if t is ast.Call:
                calls.append(n)
            if t is ast.Import or t is ast.ImportFrom:
                stored.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif t is ast.Global or t is ast.Nonlocal:
                stored.update(n.names)
            elif not nested:
                if t is ast.Return or t is ast.Assign or t is ast.AugAssign or \
                        t is ast.AnnAssign or t is ast.Call:
                    own.append(n)
                elif t is ast.Yield or t is ast.YieldFrom or t is ast.Await:
                    special = True
        stack.extend((c, nested_here) for c in _children(n))
    return stored, own, special, calls


def _function_values(fn, s: ModuleSummary, aliases: dict, scanned: tuple) -> None:
    params = _params(fn)
    names = {n for n, _ in params}
    stored, own, special, _ = scanned
    if special:
        return
    shadowed = names | stored
    _factory(fn, own, stored, s, aliases, shadowed)
    index = {n: (i if k in ("pos", "posonly") else None)
             for i, (n, k) in enumerate(params) if k not in ("vararg", "kwarg")}
    effects = []
    globals_written = []
    for name, kind, line in _writes(own, aliases, shadowed):
        if name in index and name not in stored:
            effects.append((name, index[name], kind, line))
        elif name in s.ref_globals and name not in shadowed:
            globals_written.append((name, kind, line))
    if effects:
        effects.sort(key=lambda e: e[3])
        s.param_effects[fn.name] = tuple(effects)
    if globals_written:
        globals_written.sort(key=lambda e: e[2])
        s.global_effects[fn.name] = tuple(globals_written)


# Never a project's function: the registry describes what matters of them.
_LIBRARIES = ("jax.", "flax.", "optax.", "numpy.", "functools.", "builtins.")


def _ref_args(calls: list, aliases: dict, shadowed: set, refs: set):
    """``ModuleSummary.ref_args`` entries of ``calls``: an argument that is a plain name in
    ``refs`` given to a function named through the module's imports (not ``shadowed``)."""
    for n in calls:
        parts = _dotted(n.func)
        if not parts or parts[0] in shadowed or parts[0] not in aliases:
            continue
        qn = ".".join([aliases[parts[0]]] + parts[1:])
        if api.lookup(qn) is not None or qn.startswith(_LIBRARIES):
            continue  # JAX's, Pallas' or Flax's own: the registry describes it
        for i, a in enumerate(n.args):
            if type(a) is ast.Starred:
                break  # which parameter the later ones reach is not known
            if type(a) is ast.Name and a.id in refs:
                yield qn, i, None, n.lineno, a.id, ".".join(parts)
        for k in n.keywords:
            if k.arg is not None and type(k.value) is ast.Name and k.value.id in refs:
                yield qn, None, k.arg, n.lineno, k.value.id, ".".join(parts)


def _function_ref_args(fn, s: ModuleSummary, aliases: dict, scanned: tuple) -> list:
    """The refs a top-level function gives another module's functions: the module's refs it
    does not shadow, and its locals bound only by ``name = <constructor>(...)``
    (``scanned``: the function's ``_scan``)."""
    stored, own, _, _ = scanned
    calls = [n for n in own if type(n) is ast.Call]
    if not calls:
        return []
    shadowed = {n for n, _ in _params(fn)} | stored
    refs = {g for g in s.ref_globals if g not in shadowed}
    ctor_names = _ctor_names(own, aliases, shadowed)
    refs |= {n for n, ok in ctor_names.items() if ok and not _other_bindings(fn, n)}
    if not refs:
        return []
    return list(_ref_args(calls, aliases, shadowed - refs, refs))


def _param_args(fn, s: ModuleSummary, aliases: dict, defined: dict, scanned: tuple) -> list:
    """``ModuleSummary.param_args`` entries of a top-level function: its calls (a nested
    function's too: a ``pl.when`` body closes over the kernel's refs) of an imported function
    or of a function of this module defined once, with a plain parameter that nothing in it
    binds again (nor a nested scope: conservative) as an argument (``scanned``: the
    function's ``_scan``)."""
    stored, _, _, calls = scanned
    params = {n for n, k in _params(fn) if k not in ("vararg", "kwarg")} - stored
    if not params:
        return []
    shadowed = {n for n, _ in _params(fn)} | stored
    out = []
    for n in calls:
        parts = _dotted(n.func)
        if not parts or parts[0] in shadowed:
            continue
        if parts[0] in aliases:
            qn = ".".join([aliases[parts[0]]] + parts[1:])
            if api.lookup(qn) is not None or qn.startswith(_LIBRARIES):
                continue  # JAX's, Pallas' or Flax's own: the registry describes it
        elif len(parts) == 1 and defined.get(parts[0]) == 1 and s.module:
            qn = f"{s.module}.{parts[0]}"
        else:
            continue
        text = ".".join(parts)
        for i, a in enumerate(n.args):
            if type(a) is ast.Starred:
                break
            if type(a) is ast.Name and a.id in params:
                out.append((fn.name, a.id, qn, i, None, n.lineno, text))
        for k in n.keywords:
            if k.arg is not None and type(k.value) is ast.Name and k.value.id in params:
                out.append((fn.name, k.value.id, qn, None, k.arg, n.lineno, text))
    return out


def _ctor_names(own: list, aliases: dict, shadowed: set) -> dict:
    """name -> whether every plain assignment binding it (among a function's own nodes)
    assigns a constructor's result."""
    ctor_names: dict = {}
    for n in own:
        t = type(n)
        if t is ast.Assign or t is ast.AnnAssign or t is ast.AugAssign:
            targets = n.targets if t is ast.Assign else [n.target]
            ok = set()
            if t is not ast.AugAssign and n.value is not None and len(targets) == 1:
                ok = {name for name, value in _pairs(targets[0], n.value)
                      if _is_ctor(value, aliases, shadowed)}
            for tg in targets:
                for x in _walk(tg):
                    if type(x) is ast.Name:
                        ctor_names[x.id] = ctor_names.get(x.id, True) and x.id in ok
    return ctor_names


def _pairs(target, value) -> list:
    """(name, value) of each plain name an assignment binds to its own expression: ``x = v``,
    and ``x, y = v, w`` element by element (no starred element); none otherwise."""
    if type(target) is ast.Name:
        return [(target.id, value)]
    if type(target) in (ast.Tuple, ast.List) and type(value) in (ast.Tuple, ast.List) and \
            len(target.elts) == len(value.elts) and \
            not any(type(e) is ast.Starred for e in target.elts + value.elts):
        return [(t.id, v) for t, v in zip(target.elts, value.elts) if type(t) is ast.Name]
    return []


def _writes(own: list, aliases: dict, shadowed: set):
    """(name, kind, line) of each write of a plain name's ref among a function's own nodes:
    ``name[...] = v`` (setitem), ``name[i] += v`` (augitem), ``jax.ref.set/swap/addupdate(name,
    ...)``."""
    for n in own:
        t = type(n)
        if t is ast.Assign or t is ast.AugAssign:
            targets = n.targets if t is ast.Assign else [n.target]
            for tg in targets:
                if type(tg) is ast.Subscript and type(tg.value) is ast.Name:
                    kind = "setitem" if t is ast.Assign else "augitem"
                    yield tg.value.id, kind, n.lineno
        elif t is ast.Call and n.args and type(n.args[0]) is ast.Name:
            a = _api_of(n.func, aliases, shadowed)
            if a is not None and a.name in _EFFECT_KINDS:
                yield n.args[0].id, _EFFECT_KINDS[a.name], n.lineno


def _arg_nodes(fn) -> set:
    a = fn.args
    out = set(a.posonlyargs) | set(a.args) | set(a.kwonlyargs)
    if a.vararg:
        out.add(a.vararg)
    if a.kwarg:
        out.add(a.kwarg)
    return out


def _factory(fn, own: list, stored: set, s: ModuleSummary, aliases: dict,
             shadowed: set) -> None:
    """``fn`` returns a new ref on every path (each ``return`` gives a constructor's result,
    or a local name bound only by plain ``name = <constructor>(...)`` assignments)."""
    returns = [n for n in own if type(n) is ast.Return]
    if not returns or not _ends(fn.body):
        return
    ctor_names = _ctor_names(own, aliases, shadowed)
    for r in returns:
        v = r.value
        if v is None:
            return
        if _is_ctor(v, aliases, shadowed):
            continue
        if type(v) is ast.Name and ctor_names.get(v.id):
            # Bound only by constructor assignments (a loop target, `with ... as`, a walrus,
            # an unpacking or a nested scope's binding is not an assignment seen here).
            if _other_bindings(fn, v.id):
                return
            continue
        return
    s.ref_factories[fn.name] = returns[-1].lineno


def _other_bindings(fn, name: str) -> bool:
    """``name`` is bound in ``fn`` other than as the whole target of an assignment."""
    for n in _walk(fn):
        t = type(n)
        if t is ast.For or t is ast.AsyncFor or t is ast.comprehension:
            if any(type(x) is ast.Name and x.id == name for x in _walk(n.target)):
                return True
        elif t is ast.withitem:
            if n.optional_vars is not None and \
                    any(type(x) is ast.Name and x.id == name for x in _walk(n.optional_vars)):
                return True
        elif t is ast.NamedExpr:
            if n.target.id == name:
                return True
        elif t is ast.ExceptHandler:
            if n.name == name:
                return True
        elif t is ast.Delete:
            if any(type(x) is ast.Name and x.id == name for x in _walk(n)):
                return True
        elif t is ast.Global or t is ast.Nonlocal:
            if name in n.names:
                return True
        elif (t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef) and \
                n is not fn and n.name == name:
            return True
        elif t is ast.arg and n.arg == name:
            return True
        elif (t is ast.Import or t is ast.ImportFrom) and \
                any((a.asname or a.name).split(".")[0] == name for a in n.names):
            return True
        elif t is ast.MatchAs or t is ast.MatchStar:
            if n.name == name:
                return True
    return False


def _ends(body: list) -> bool:
    """The block never falls off its end (its last statement returns or raises, or is an
    ``if``/``try`` whose branches all do)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    return False
