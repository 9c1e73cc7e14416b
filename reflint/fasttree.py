"""reflint's syntax tree (``reflint.nodes``) built from the stdlib ``ast``: the analysis' input.

libcst's parser costs about 55 µs a line here; CPython's about 5, and the pre-filter's second
stage (``reflint.gate``) has already run it. Building reflint's nodes from that ``ast`` tree
costs a few µs a line, and the nodes are plain classes (``reflint.nodes``, named and shaped as
libcst's), so a checked file never imports libcst: its findings, positions and messages come
from this tree and the ``ast`` positions (``AstPositions``). libcst parses a file only when a
fix's edits are wanted (they keep its parentheses, comments and whitespace), when a position
asked for is not exact here, and for syntax only libcst accepts (``engine.lint_source``); its
tree is converted to the same classes (``reflint.cstbridge``).

The tree has the node types, fields and nesting that ``libcst.parse_module`` gives for the same
source, with no whitespace, comments or parentheses (layout fields keep their class defaults;
the analysis does not read them). ``tests/test_fasttree.py`` checks it against libcst's tree,
layout aside, on every fixture and example, on generated programs, and on real code; and that
the findings are the same with and without it. Inside f-strings the text parts and the
spelling of constants are approximate (Python 3.11's ``ast`` does not keep them); the
expressions are the same. Anything this module does not build raises ``Unsupported``, and the
file is parsed by libcst instead.
"""
from __future__ import annotations

import ast
import bisect
import itertools
import re
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from . import nodes as cst

__all__ = ["Unsupported", "convert"]


class Unsupported(Exception):
    """The source holds something this module does not build: use libcst's parser."""


_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE_ENDS = re.compile(r"(\r\n|\r|\n)")  # split, keeping the line ends
# One string literal (prefix, quotes, body); ``fullmatch`` fails on implicit concatenation.
_ONE_STRING = re.compile(
    r'[A-Za-z]*(?:"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\[\s\S]|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\[\s\S])*"'
    r"|'(?:[^'\\\n]|\\[\s\S])*')"
)
_GAP = re.compile(r"(?:\s|\\\n|\\\r\n|\\\r|#[^\r\n]*)*")

# ast operator -> the name of libcst's node for it
_BINARY = {
    ast.Add: "Add", ast.Sub: "Subtract", ast.Mult: "Multiply", ast.Div: "Divide",
    ast.FloorDiv: "FloorDivide", ast.Mod: "Modulo", ast.Pow: "Power",
    ast.LShift: "LeftShift", ast.RShift: "RightShift", ast.BitOr: "BitOr",
    ast.BitAnd: "BitAnd", ast.BitXor: "BitXor", ast.MatMult: "MatrixMultiply",
}
_AUGMENTED = {
    ast.Add: "AddAssign", ast.Sub: "SubtractAssign", ast.Mult: "MultiplyAssign",
    ast.Div: "DivideAssign", ast.FloorDiv: "FloorDivideAssign", ast.Mod: "ModuloAssign",
    ast.Pow: "PowerAssign", ast.LShift: "LeftShiftAssign",
    ast.RShift: "RightShiftAssign", ast.BitOr: "BitOrAssign", ast.BitAnd: "BitAndAssign",
    ast.BitXor: "BitXorAssign", ast.MatMult: "MatrixMultiplyAssign",
}
_UNARY = {ast.UAdd: "Plus", ast.USub: "Minus", ast.Invert: "BitInvert", ast.Not: "Not"}
_COMPARE = {
    ast.Eq: "Equal", ast.NotEq: "NotEqual", ast.Lt: "LessThan",
    ast.LtE: "LessThanEqual", ast.Gt: "GreaterThan", ast.GtE: "GreaterThanEqual",
    ast.Is: "Is", ast.IsNot: "IsNot", ast.In: "In", ast.NotIn: "NotIn",
}
_CONVERSION = {-1: None, 115: "s", 114: "r", 97: "a"}


# ``N.Call(func=..., args=...)``: reflint's nodes (reflint.nodes) hold only the fields given;
# the others, layout mostly, are class defaults.
N = cst


def convert(source: str, tree: Optional[ast.Module] = None,
            record: Optional[dict] = None) -> cst.Module:
    """libcst's tree for ``source`` (whitespace aside), built from ``tree`` (``ast.parse`` of
    ``source``, parsed here if not given). Raises ``Unsupported`` (or the parser's error).

    With ``record``, also fills it in: ``"depth"``, the deepest expression nesting (libcst's
    parser takes time quadratic in it on left-recursive chains such as ``x + x + ...``), and
    ``"positions"``, an ``AstPositions`` giving the source position of the built expressions
    and statements (for diagnostics when libcst's own parse is not used)."""
    if tree is None:
        tree = ast.parse(source)
    builder = _Builder(source, True)
    try:
        module = builder.module(tree)
    except RecursionError as e:
        raise Unsupported("nesting too deep") from e
    finally:
        builder.done()
    positions = AstPositions(builder)
    module._ast_positions = positions  # the nodes' text (``nodes.Module.code_for_node``)
    if record is not None:
        record["depth"] = builder.max_depth
        record["positions"] = positions
    return module


class AstPositions:
    """``PositionProvider``-like ranges for the nodes of a tree built here, from the ``ast``
    positions of the nodes they were built from (0-based columns in characters, computed for
    the nodes asked about only), and their source text (``text``).

    The ranges are libcst's: a node's own parentheses are outside its range (``ast`` puts a
    parenthesized tuple's, and a generator expression's, inside), and so is the whitespace
    next to them. Nodes built without an ``ast`` node of their own, and the expressions
    inside f-strings (whose ``ast`` positions Python 3.11 does not give reliably), have none:
    ``get`` is None for them, and a caller that needs exact positions uses libcst's parse."""

    def __init__(self, builder: "_Builder", exact: bool = False):
        self._origin = builder.origin
        # exact: None for the nodes inside f-strings (else their approximate ast positions).
        self._inexact = builder.inner if exact else ()
        self._builder = builder
        self._source = builder.source
        self._starts: Optional[list] = None  # offset of each line's first character
        self._stmt_lines: Optional[list] = None

    def exact(self) -> "AstPositions":
        """The same positions, None where they are approximate (inside f-strings)."""
        return AstPositions(self._builder, exact=True)

    def _offset(self, line: int, col: int) -> int:
        """The offset in the source of the ``ast`` position (``col`` in UTF-8 bytes)."""
        starts = self._starts
        if starts is None:
            starts = self._starts = self._builder.line_starts()
        return starts[line - 1] + self._builder._col(line, col)

    def _line_col(self, offset: int):
        starts = self._starts
        if starts is None:
            starts = self._starts = self._builder.line_starts()
        i = bisect.bisect_right(starts, offset) - 1
        return cst.CodePosition(i + 1, offset - starts[i])

    def span(self, node):
        """(start, end) offsets of ``node``'s range in the source, or None."""
        n = self._origin.get(id(node))
        if n is None or id(node) in self._inexact:
            return None
        if type(n) is _Placed:
            return self._placed(n)
        return self._expr_span(n)

    def _expr_span(self, n):
        start = self._offset(n.lineno, n.col_offset)
        end = self._offset(n.end_lineno, n.end_col_offset)
        t = type(n)
        if t is ast.GeneratorExp or t is ast.Tuple and self._source.startswith("(", start) and \
                (not n.elts or self._builder._parenthesized(n, n.elts[0])):
            # ``ast`` includes the parentheses (a generator's may be a call's): libcst not.
            src = self._source
            start = _skip_forward(src, start + 1)
            end = max(start, _skip_backward(src, end - 1))
        return start, end

    def _placed(self, p: "_Placed"):
        n = p.node
        src = self._source
        if p.kind == "arg":  # libcst: a positional argument with its value's parentheses
            return self._widen(*self._expr_span(n))
        if p.kind == "attr":  # `x.attr`: the name ends the attribute
            end = self._offset(n.end_lineno, n.end_col_offset)
            return end - len(p.text), end
        start = self._offset(n.lineno, n.col_offset)
        if p.kind == "param":  # libcst: the star and the name (not annotation, default)
            end = start + len(n.arg)
            if p.text:
                start = _skip_backward(src, start) - len(p.text)
            return start, end
        # "def": the name after `def` / `class` (the node starts there, or at `async`)
        m = _DEF_NAME.compile(p.text).search(src, start)
        return (m.start(1), m.end(1)) if m else None

    def get(self, node):
        s = self.span(node)
        if s is None:
            return None
        return cst.CodeRange(self._line_col(s[0]), self._line_col(s[1]))

    def text(self, node) -> Optional[str]:
        """The source text of ``node`` with its own parentheses (what libcst's
        ``code_for_node`` gives on its own tree, stripped), or None if it has no range."""
        s = self.span(node)
        if s is None:
            return None
        start, end = self._widen(*s)
        text = self._source[start:end]
        if "\n" in text or "\r" in text:
            return self._dedented(text, start)
        return text

    def _dedented(self, text: str, start: int) -> Optional[str]:
        """A node's text over several lines as libcst's ``code_for_node`` writes it: without
        the indentation of the block of its statement where a line starts with it. None when
        that is not known (the statement, or a string over several lines)."""
        pos = self._line_col(start)
        stmts = self._builder.stmts
        if stmts is None:
            return None
        if self._stmt_lines is None:
            self._stmt_lines = [min([s.lineno] + [d.lineno for d in
                                                   getattr(s, "decorator_list", ())])
                                for s in stmts]
        k = bisect.bisect_right(self._stmt_lines, pos.line) - 1
        if k < 0:
            indent = ""
        else:
            stmt = stmts[k]
            if stmt.end_lineno < pos.line:
                return None  # not inside that statement (an `except` clause's ...)
            first = self._builder.lines[self._stmt_lines[k] - 1]
            indent = first[:len(first) - len(first.lstrip(" \t"))]
        if not indent:
            return text
        if '"""' in text or "'''" in text:
            return None
        lines = _LINE_ENDS.split(text)
        for i in range(2, len(lines), 2):
            if lines[i].startswith(indent):
                lines[i] = lines[i][len(indent):]
        return "".join(lines)

    def _widen(self, start: int, end: int):
        """``start``, ``end`` widened over the parentheses that are the node's own."""
        src = self._source
        while True:  # widen over a pair of parentheses that are the node's own
            i = _skip_backward(src, start)
            if i == 0 or src[i - 1] != "(" or _is_call_paren(src, i - 1):
                break
            j = _skip_forward(src, end)
            if j >= len(src) or src[j] != ")":
                break
            start, end = i - 1, j + 1
        return start, end


class _Placed:
    """A built node placed by another ``ast`` node: the name of an attribute (``"attr"``)
    or a definition (``"def"``), a parameter (``"param"``: ``text`` is its star)."""

    __slots__ = ("kind", "node", "text")

    def __init__(self, kind: str, node, text: str):
        self.kind = kind
        self.node = node
        self.text = text


class _DefName:
    def __init__(self):
        self._cache: dict = {}

    def compile(self, name: str):
        rx = self._cache.get(name)
        if rx is None:
            rx = self._cache[name] = re.compile(r"\b(?:def|class)\s+(" + re.escape(name) +
                                                r")\b")
        return rx


_DEF_NAME = _DefName()
_SPACE = " \t\f\r\n\\"
# Keywords after which ``(`` opens a parenthesized expression, not a call's arguments.
_NOT_CALLERS = frozenset((
    "and", "or", "not", "in", "is", "if", "elif", "else", "while", "for", "return", "yield",
    "await", "assert", "del", "with", "from", "import", "raise", "except", "lambda", "as",
    "async", "global", "nonlocal", "pass", "break", "continue", "class", "def", "try",
    "finally"))


def _skip_forward(src: str, i: int) -> int:
    """The offset of the first character at or after ``i`` that is not whitespace, a line
    continuation or a comment."""
    n = len(src)
    while i < n:
        ch = src[i]
        if ch in _SPACE:
            i += 1
        elif ch == "#":
            m = _NEWLINE.search(src, i)
            i = m.start() if m else n
        else:
            break
    return i


def _skip_backward(src: str, i: int) -> int:
    """The offset just after the last character before ``i`` that is not whitespace, a line
    continuation or a comment (comments are recognized on the lines before ``i``'s)."""
    while i > 0:
        ch = src[i - 1]
        if ch in _SPACE:
            crossed = ch in "\r\n"
            i -= 1
            if crossed:
                # The end of an earlier line: it may end with a comment.
                while i > 0 and src[i - 1] in "\r\n":
                    i -= 1
                line_start = max(src.rfind("\n", 0, i), src.rfind("\r", 0, i)) + 1
                c = _comment_start(src, line_start, i)
                if c is not None:
                    i = c
        else:
            break
    return i


def _comment_start(src: str, start: int, end: int) -> Optional[int]:
    """The offset of the comment on the line ``src[start:end]`` (None if it has none)."""
    j = src.find("#", start, end)
    if j < 0:
        return None
    quote = None
    i = start
    while i < end:
        ch = src[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if src.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif ch in "\"'":
            quote = src[i:i + 3] if src[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            continue
        elif ch == "#":
            return i
        i += 1
    return None


def _is_call_paren(src: str, p: int) -> bool:
    """Whether the ``(`` at ``p`` opens a call's arguments (or a class's bases): what comes
    before it ends an expression."""
    i = _skip_backward(src, p)
    if i == 0:
        return False
    gap = src[i:p]
    if ("\n" in gap or "\r" in gap) and "\\" not in gap:
        return False  # the line before ended a statement (or a bracket's item)
    ch = src[i - 1]
    if ch in ")]}\"'":
        return True
    if ch.isalnum() or ch == "_" or not ch.isascii():
        j = i - 1
        while j > 0 and (src[j - 1].isalnum() or src[j - 1] == "_" or not src[j - 1].isascii()):
            j -= 1
        return src[j:i] not in _NOT_CALLERS
    return False


class _Builder:
    _starts: Optional[list] = None

    def line_starts(self) -> list:
        """The offset of each line's first character (computed once for every AstPositions of
        the tree): from the lines' lengths when every line ends in ``\\n``."""
        starts = self._starts
        if starts is None:
            if "\r" in self.source:
                starts = [0] + [m.end() for m in _NEWLINE.finditer(self.source)]
            else:
                starts = list(itertools.accumulate([len(x) + 1 for x in self.lines[:-1]],
                                                   initial=0))
            self._starts = starts
        return starts

    def __init__(self, source: str, record: bool = False):
        self.source = source
        # id(built node) -> the ast node it was built from (with ``record``); the built nodes
        # stay alive with the tree, so their ids stay unique.
        self.origin: Optional[dict] = {} if record else None
        self.depth = self.max_depth = 0
        self.lines = _NEWLINE.split(source)
        self._ascii = source.isascii()
        self._inner_builder: Optional[_InnerBuilder] = None
        self.inner: set = set()  # ids of the nodes built inside f-strings (no exact position)
        # The statements of indented blocks, in source order (with ``record``): the
        # indentation libcst leaves out of a node's code.
        self.stmts: Optional[list] = [] if record else None
        self._stmt = {
            ast.FunctionDef: self.s_function, ast.AsyncFunctionDef: self.s_function,
            ast.ClassDef: self.s_class, ast.If: self.s_if, ast.For: self.s_for,
            ast.AsyncFor: self.s_for, ast.While: self.s_while, ast.With: self.s_with,
            ast.AsyncWith: self.s_with, ast.Try: self.s_try,
        }
        if hasattr(ast, "TryStar"):
            self._stmt[ast.TryStar] = self.s_try
        if hasattr(ast, "Match"):
            self._stmt[ast.Match] = self.s_match
        self._small = {
            ast.Expr: lambda n: N.Expr(value=self.expr(n.value)),
            ast.Assign: self.s_assign, ast.AugAssign: self.s_augassign,
            ast.AnnAssign: self.s_annassign, ast.Return: self.s_return,
            ast.Pass: lambda n: N.Pass(), ast.Break: lambda n: N.Break(),
            ast.Continue: lambda n: N.Continue(), ast.Raise: self.s_raise,
            ast.Assert: self.s_assert, ast.Delete: self.s_delete,
            ast.Global: lambda n: N.Global(names=[N.NameItem(name=N.Name(value=x))
                                                   for x in n.names]),
            ast.Nonlocal: lambda n: N.Nonlocal(names=[N.NameItem(name=N.Name(value=x))
                                                       for x in n.names]),
            ast.Import: self.s_import, ast.ImportFrom: self.s_importfrom,
        }
        if hasattr(ast, "TypeAlias"):  # `type X[T] = ...` (Python >= 3.12)
            self._small[ast.TypeAlias] = lambda n: N.TypeAlias(
                name=N.Name(value=n.name.id), value=self.expr(n.value),
                type_parameters=self.type_parameters(n))
        e = self.expr
        self._expr = {
            ast.Name: lambda n: N.Name(value=n.id),
            ast.Attribute: lambda n: N.Attribute(value=e(n.value), attr=self._named(n.attr, "attr", n)),
            ast.Call: self.e_call, ast.Constant: self.e_constant,
            ast.Subscript: self.e_subscript,
            ast.BinOp: lambda n: N.BinaryOperation(
                left=e(n.left), operator=getattr(N, _BINARY[type(n.op)])(), right=e(n.right)),
            ast.UnaryOp: lambda n: N.UnaryOperation(
                operator=getattr(N, _UNARY[type(n.op)])(), expression=e(n.operand)),
            ast.BoolOp: self.e_boolop, ast.Compare: self.e_compare,
            ast.IfExp: lambda n: N.IfExp(test=e(n.test), body=e(n.body), orelse=e(n.orelse)),
            ast.Lambda: lambda n: N.Lambda(params=self.params(n.args), body=e(n.body)),
            ast.NamedExpr: lambda n: N.NamedExpr(target=e(n.target), value=e(n.value)),
            ast.Await: lambda n: N.Await(expression=e(n.value)),
            ast.Yield: lambda n: N.Yield(value=None if n.value is None else e(n.value)),
            ast.YieldFrom: lambda n: N.Yield(value=N.From(item=e(n.value))),
            ast.List: lambda n: N.List(elements=self.elements(n.elts)),
            ast.Tuple: lambda n: N.Tuple(elements=self.elements(n.elts)),
            ast.Set: lambda n: N.Set(elements=self.elements(n.elts)),
            ast.Dict: self.e_dict,
            ast.ListComp: lambda n: N.ListComp(elt=e(n.elt), for_in=self.comp(n.generators)),
            ast.SetComp: lambda n: N.SetComp(elt=e(n.elt), for_in=self.comp(n.generators)),
            ast.GeneratorExp: lambda n: N.GeneratorExp(elt=e(n.elt),
                                                         for_in=self.comp(n.generators)),
            ast.DictComp: lambda n: N.DictComp(key=e(n.key), value=e(n.value),
                                                 for_in=self.comp(n.generators)),
            ast.JoinedStr: self.e_string,
            ast.Starred: lambda n: N.StarredElement(value=e(n.value)),
        }

    # -- source text ---------------------------------------------------------------------

    def _col(self, line: int, col: int) -> int:
        """The character offset of the UTF-8 byte offset ``col`` on 1-based ``line``."""
        if self._ascii:
            return col
        text = self.lines[line - 1]
        if text.isascii():
            return col
        return len(text.encode("utf-8")[:col].decode("utf-8", "replace"))

    def text(self, node) -> str:
        """The source text of ``node`` (ast positions)."""
        return self._span(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)

    def _before(self, node) -> str:
        """The text of ``node``'s first line before it."""
        return self.lines[node.lineno - 1][:self._col(node.lineno, node.col_offset)]

    # -- statements ----------------------------------------------------------------------

    def done(self) -> None:
        """Drop the dispatch tables (bound methods and lambdas of this builder: a cycle), so
        that the ``ast`` tree and the positions it holds are freed by reference counting when
        the last position is read, not by the cyclic collector (~24k objects and ~10 ms a
        keystroke on a 2,000-line file)."""
        self._stmt = self._small = self._expr = None
        if self._inner_builder is not None:
            self._inner_builder.done()

    def module(self, tree: ast.Module) -> cst.Module:
        return N.Module(body=self.block(tree.body))

    def block(self, stmts) -> list:
        """A module's or an indented block's statements: compound statements, and lines of
        small statements (``a = 1; b = 2`` is one SimpleStatementLine)."""
        out = []
        line: list = []
        line_end = -1
        for s in stmts:
            if self.stmts is not None:
                self.stmts.append(s)
            build = self._small.get(type(s))
            if build is None:
                if line:
                    out.append(N.SimpleStatementLine(body=line))
                    line = []
                out.append(self.stmt(s))
                continue
            node = build(s)
            if self.origin is not None:
                self.origin[id(node)] = s
            if line and s.lineno == line_end:
                line.append(node)
            else:
                if line:
                    out.append(N.SimpleStatementLine(body=line))
                line = [node]
            line_end = s.end_lineno
        if line:
            out.append(N.SimpleStatementLine(body=line))
        return out

    def suite(self, stmts):
        """A compound statement's body: an IndentedBlock, or a SimpleStatementSuite when the
        body follows the colon on the same line (``if x: return``)."""
        first = stmts[0]
        if first.col_offset and self._before(first).strip():
            return N.SimpleStatementSuite(body=[self.small(s) for s in stmts])
        return N.IndentedBlock(body=self.block(stmts))

    def small(self, s):
        build = self._small.get(type(s))
        if build is None:
            raise Unsupported(type(s).__name__)
        node = build(s)
        if self.origin is not None:
            self.origin[id(node)] = s
        return node

    def stmt(self, s):
        build = self._stmt.get(type(s))
        if build is None:
            raise Unsupported(type(s).__name__)  # syntax newer than this module
        node = build(s)
        if self.origin is not None:
            self.origin[id(node)] = s
        return node

    def type_parameters(self, n):
        """``def f[T: int, *Ts, **P]`` (Python >= 3.12, e.g. in JAX 0.12's own sources)."""
        params = getattr(n, "type_params", None)
        if not params:
            return None
        out = []
        for t in params:
            if getattr(t, "default_value", None) is not None:  # PEP 696 (3.13)
                raise Unsupported("type parameter default")
            if isinstance(t, ast.TypeVar):
                p = N.TypeVar(name=N.Name(value=t.name),
                              bound=None if t.bound is None else self.expr(t.bound))
            elif isinstance(t, ast.TypeVarTuple):
                p = N.TypeVarTuple(name=N.Name(value=t.name))
            elif isinstance(t, ast.ParamSpec):
                p = N.ParamSpec(name=N.Name(value=t.name))
            else:
                raise Unsupported(type(t).__name__)
            out.append(N.TypeParam(param=p))
        return N.TypeParameters(params=out)

    def s_function(self, n):
        return N.FunctionDef(
            name=self._named(n.name, "def", n), params=self.params(n.args),
            body=self.suite(n.body),
            decorators=[N.Decorator(decorator=self.expr(d)) for d in n.decorator_list],
            returns=None if n.returns is None else N.Annotation(annotation=self.expr(n.returns)),
            asynchronous=N.Asynchronous() if isinstance(n, ast.AsyncFunctionDef) else None,
            type_parameters=self.type_parameters(n))

    def s_class(self, n):
        bases = [self.arg(b) for b in n.bases]
        keywords = [self.keyword(k) for k in n.keywords]
        return N.ClassDef(
            name=self._named(n.name, "def", n), body=self.suite(n.body), bases=bases,
            keywords=keywords,
            decorators=[N.Decorator(decorator=self.expr(d)) for d in n.decorator_list],
            type_parameters=self.type_parameters(n))

    def s_if(self, n):
        orelse = None
        if n.orelse:
            first = n.orelse[0]
            if len(n.orelse) == 1 and isinstance(first, ast.If) and \
                    self.lines[first.lineno - 1].startswith(
                        "elif", self._col(first.lineno, first.col_offset)):
                orelse = self.s_if(first)
            else:
                orelse = N.Else(body=self.suite(n.orelse))
        return N.If(test=self.expr(n.test), body=self.suite(n.body), orelse=orelse)

    def _else(self, stmts):
        return N.Else(body=self.suite(stmts)) if stmts else None

    def s_for(self, n):
        return N.For(target=self.expr(n.target), iter=self.expr(n.iter),
                       body=self.suite(n.body), orelse=self._else(n.orelse),
                       asynchronous=N.Asynchronous() if isinstance(n, ast.AsyncFor) else None)

    def s_while(self, n):
        return N.While(test=self.expr(n.test), body=self.suite(n.body),
                         orelse=self._else(n.orelse))

    def s_with(self, n):
        items = [N.WithItem(item=self.expr(i.context_expr),
                              asname=None if i.optional_vars is None else
                              N.AsName(name=self.expr(i.optional_vars)))
                 for i in n.items]
        return N.With(items=items, body=self.suite(n.body),
                        asynchronous=N.Asynchronous() if isinstance(n, ast.AsyncWith)
                        else None)

    def s_try(self, n):
        star = type(n).__name__ == "TryStar"
        handler = cst.ExceptStarHandler if star else cst.ExceptHandler
        handlers = [handler(body=self.suite(h.body),
                            type=None if h.type is None else self.expr(h.type),
                            name=None if h.name is None else N.AsName(name=N.Name(value=h.name)))
                    for h in n.handlers]
        return (cst.TryStar if star else cst.Try)(
            body=self.suite(n.body), handlers=handlers, orelse=self._else(n.orelse),
            finalbody=N.Finally(body=self.suite(n.finalbody)) if n.finalbody else None)

    def s_match(self, n):
        return N.Match(subject=self.expr(n.subject), cases=[
            N.MatchCase(pattern=self.pattern(c.pattern), body=self.suite(c.body),
                          guard=None if c.guard is None else self.expr(c.guard))
            for c in n.cases])

    def pattern(self, p):
        t = type(p).__name__
        if t == "MatchAs":
            return N.MatchAs(pattern=None if p.pattern is None else self.pattern(p.pattern),
                               name=None if p.name is None else N.Name(value=p.name))
        if t == "MatchValue":
            return N.MatchValue(value=self.expr(p.value))
        if t == "MatchSingleton":
            return N.MatchSingleton(value=N.Name(value=repr(p.value)))
        if t == "MatchSequence":
            items = [self.pattern(q) if type(q).__name__ == "MatchStar"
                     else N.MatchSequenceElement(value=self.pattern(q)) for q in p.patterns]
            # `(a, b)` is a MatchTuple; `[a, b]` and the open `a, b` are MatchLists.
            if self.lines[p.lineno - 1].startswith("(", self._col(p.lineno, p.col_offset)) \
                    and (not p.patterns or self._parenthesized(p, p.patterns[0])):
                return N.MatchTuple(patterns=items)
            return N.MatchList(patterns=items)
        if t == "MatchStar":
            return N.MatchStar(name=None if p.name is None else N.Name(value=p.name))
        if t == "MatchMapping":
            return N.MatchMapping(
                elements=[N.MatchMappingElement(key=self.expr(k), pattern=self.pattern(v))
                          for k, v in zip(p.keys, p.patterns)],
                rest=None if p.rest is None else N.Name(value=p.rest))
        if t == "MatchClass":
            return N.MatchClass(
                cls=self.expr(p.cls),
                patterns=[N.MatchSequenceElement(value=self.pattern(q)) for q in p.patterns],
                kwds=[N.MatchKeywordElement(key=N.Name(value=k), pattern=self.pattern(q))
                      for k, q in zip(p.kwd_attrs, p.kwd_patterns)])
        if t == "MatchOr":
            last = len(p.patterns) - 1
            return N.MatchOr(patterns=[
                N.MatchOrElement(pattern=self.pattern(q),
                                   separator=cst.MaybeSentinel.DEFAULT if i == last
                                   else N.BitOr())
                for i, q in enumerate(p.patterns)])
        raise Unsupported(t)

    def s_assign(self, n):
        return N.Assign(targets=[N.AssignTarget(target=self.expr(t)) for t in n.targets],
                          value=self.expr(n.value))

    def s_augassign(self, n):
        return N.AugAssign(target=self.expr(n.target), operator=getattr(N, _AUGMENTED[type(n.op)])(),
                             value=self.expr(n.value))

    def s_annassign(self, n):
        return N.AnnAssign(target=self.expr(n.target),
                             annotation=N.Annotation(annotation=self.expr(n.annotation)),
                             value=None if n.value is None else self.expr(n.value))

    def s_return(self, n):
        return N.Return(value=None if n.value is None else self.expr(n.value))

    def s_raise(self, n):
        return N.Raise(exc=None if n.exc is None else self.expr(n.exc),
                         cause=None if n.cause is None else N.From(item=self.expr(n.cause)))

    def s_assert(self, n):
        return N.Assert(test=self.expr(n.test),
                          msg=None if n.msg is None else self.expr(n.msg))

    def s_delete(self, n):
        if len(n.targets) == 1:
            return N.Del(target=self.expr(n.targets[0]))
        return N.Del(target=N.Tuple(elements=self.elements(n.targets)))

    def _dotted(self, name: str):
        parts = name.split(".")
        node = N.Name(value=parts[0])
        for p in parts[1:]:
            node = N.Attribute(value=node, attr=N.Name(value=p))
        return node

    def _alias(self, a):
        node = N.ImportAlias(name=self._dotted(a.name),
                             asname=None if a.asname is None else
                             N.AsName(name=N.Name(value=a.asname)))
        if self.origin is not None and hasattr(a, "end_col_offset"):  # Python >= 3.10
            self.origin[id(node)] = a
        return node

    def _named(self, name: str, kind: str, n):
        """The Name of an attribute or a definition, placed by its ``ast`` node ``n``."""
        node = N.Name(value=name)
        if self.origin is not None:
            self.origin[id(node)] = _Placed(kind, n, name)
        return node

    def s_import(self, n):
        return N.Import(names=[self._alias(a) for a in n.names])

    def s_importfrom(self, n):
        if len(n.names) == 1 and n.names[0].name == "*":
            names = N.ImportStar()
        else:
            names = [self._alias(a) for a in n.names]
        return N.ImportFrom(module=None if n.module is None else self._dotted(n.module),
                              names=names, relative=[N.Dot() for _ in range(n.level or 0)])

    # -- parameters and arguments --------------------------------------------------------

    def _param(self, a, default=None, star=""):
        node = N.Param(name=N.Name(value=a.arg),
                         annotation=None if a.annotation is None else
                         N.Annotation(annotation=self.expr(a.annotation)),
                         default=None if default is None else self.expr(default), star=star)
        if self.origin is not None:
            self.origin[id(node)] = _Placed("param", a, star)
        return node

    def params(self, args: ast.arguments) -> cst.Parameters:
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        built = [self._param(a, d) for a, d in zip(positional, defaults)]
        posonly = built[:len(args.posonlyargs)]
        if args.vararg is not None:
            star_arg = self._param(args.vararg, star="*")
        elif args.kwonlyargs:
            star_arg = N.ParamStar()
        else:
            star_arg = cst.MaybeSentinel.DEFAULT
        return N.Parameters(
            params=built[len(args.posonlyargs):], star_arg=star_arg,
            kwonly_params=[self._param(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)],
            star_kwarg=None if args.kwarg is None else self._param(args.kwarg, star="**"),
            posonly_params=posonly,
            posonly_ind=N.ParamSlash() if posonly else cst.MaybeSentinel.DEFAULT)

    def arg(self, a):
        if isinstance(a, ast.Starred):
            node = N.Arg(value=self.expr(a.value), star="*")
            if self.origin is not None:
                self.origin[id(node)] = a
        else:
            node = N.Arg(value=self.expr(a))
            if self.origin is not None:
                self.origin[id(node)] = _Placed("arg", a, "")
        return node

    def keyword(self, k):
        if k.arg is None:
            node = N.Arg(value=self.expr(k.value), star="**")
        else:
            node = N.Arg(value=self.expr(k.value), keyword=N.Name(value=k.arg))
        if self.origin is not None:
            self.origin[id(node)] = k
        return node

    # -- expressions ---------------------------------------------------------------------

    def expr(self, n):
        depth = self.depth = self.depth + 1
        if depth > self.max_depth:
            self.max_depth = depth
        node = self._expr[type(n)](n)
        self.depth = depth - 1
        if self.origin is not None:
            self.origin[id(node)] = n
        return node

    def e_call(self, n):
        args = [self.arg(a) for a in n.args]
        if n.keywords:
            kws = [self.keyword(k) for k in n.keywords]
            if args and any(_pos(k) < _pos(n.args[-1]) for k in n.keywords):
                # `f(x=1, *rest)`: arguments in source order.
                pairs = sorted(zip([_pos(a) for a in n.args] + [_pos(k) for k in n.keywords],
                                   range(len(args) + len(kws)), args + kws))
                args = [p[2] for p in pairs]
            else:
                args += kws
        return N.Call(func=self.expr(n.func), args=args)

    def e_constant(self, n):
        v = n.value
        if isinstance(v, (str, bytes)):
            return self.e_string(n)
        if v is Ellipsis:
            return N.Ellipsis()
        if v is None or v is True or v is False:
            return N.Name(value=repr(v))
        text = self.text(n)
        if isinstance(v, complex):
            return N.Imaginary(value=text)
        if isinstance(v, float):
            return N.Float(value=text)
        if isinstance(v, int):
            return N.Integer(value=text)
        raise Unsupported(type(v).__name__)

    def e_string(self, n):
        """A string: SimpleString, FormattedString, or ConcatenatedString for implicit
        concatenation (nested to the right, as libcst does)."""
        text = self.text(n)
        if _ONE_STRING.fullmatch(text):
            return self._one_string(text, n)
        parts = []
        i = 0
        while i < len(text):
            m = _ONE_STRING.match(text, i)
            if m is None:
                raise Unsupported("string")
            parts.append(self._one_string(m.group(0), None))
            i = _GAP.match(text, m.end()).end()
        out = parts[-1]
        for left in reversed(parts[:-1]):
            out = N.ConcatenatedString(left=left, right=out)
        return out

    def _one_string(self, text: str, node):
        prefix = text[:len(text) - len(text.lstrip("rRbBuUfF"))]
        if "f" not in prefix.lower():
            return N.SimpleString(value=text)
        if node is None or not isinstance(node, ast.JoinedStr):
            try:
                node = ast.parse(text, mode="eval").body
            except SyntaxError as e:  # pragma: no cover - the file parsed
                raise Unsupported("f-string") from e
        quote = text[len(prefix):len(prefix) + 3]
        if quote not in ('"""', "'''"):
            quote = quote[0]
        return N.FormattedString(parts=self._fparts(node.values),
                                   start=prefix + quote, end=quote)

    def _fparts(self, values) -> list:
        out = []
        for v in values:
            if isinstance(v, ast.Constant):
                out.append(N.FormattedStringText(
                    value=str(v.value).replace("{", "{{").replace("}", "}}")))
            else:
                spec = None if v.format_spec is None else self._fparts(v.format_spec.values)
                out.append(N.FormattedStringExpression(
                    expression=self._inner(v.value), conversion=_CONVERSION.get(v.conversion),
                    format_spec=spec))
        return out

    def _inner(self, n):
        """An expression inside an f-string: Python 3.11 does not give reliable positions
        there, so it is built by a builder that does not read the source."""
        if self._inner_builder is None:
            self._inner_builder = _InnerBuilder(self.source)
            self._inner_builder.lines = self.lines
            self._inner_builder.origin = self.origin
            self._inner_builder.inner = self.inner
        return self._inner_builder.expr(n)

    def e_subscript(self, n):
        s = n.slice
        if isinstance(s, ast.Tuple) and s.elts and (
                isinstance(s.elts[0], ast.Slice) or not self._parenthesized(s, s.elts[0])):
            # `x[i, j]`: one element per item; `x[(i, j)]`: one element, a tuple.
            elements = [N.SubscriptElement(slice=self.index(e)) for e in s.elts]
        else:
            elements = [N.SubscriptElement(slice=self.index(s))]
        return N.Subscript(value=self.expr(n.value), slice=elements)

    def index(self, s):
        if isinstance(s, ast.Slice):
            return N.Slice(lower=None if s.lower is None else self.expr(s.lower),
                             upper=None if s.upper is None else self.expr(s.upper),
                             step=None if s.step is None else self.expr(s.step))
        if isinstance(s, ast.Starred):
            return N.Index(value=self.expr(s.value), star="*")
        return N.Index(value=self.expr(s))

    def _parenthesized(self, t, first) -> bool:
        """Whether the tuple (or sequence pattern) ``t`` has parentheses of its own: more ``(``
        between its start and its ``first`` element than ``)`` after that element's end (the
        element's own)."""
        before = self._span(t.lineno, t.col_offset, first.lineno, first.col_offset)
        opened = before.count("(")
        if not opened:
            return False
        after_first = self._from(first.end_lineno, first.end_col_offset)
        closed = 0
        for ch in after_first:
            if ch == ")":
                closed += 1
            elif not ch.isspace() and ch != "\\":
                break
        return opened > closed

    def _span(self, l0, c0, l1, c1) -> str:
        c0, c1 = self._col(l0, c0), self._col(l1, c1)
        if l0 == l1:
            return self.lines[l0 - 1][c0:c1]
        return "\n".join([self.lines[l0 - 1][c0:], *self.lines[l0:l1 - 1],
                          self.lines[l1 - 1][:c1]])

    def _from(self, line, col):
        """The text from a position on, a few lines at most (what follows an element)."""
        c = self._col(line, col)
        return "\n".join([self.lines[line - 1][c:], *self.lines[line:line + 3]])

    def elements(self, elts) -> list:
        return [N.StarredElement(value=self.expr(e.value)) if isinstance(e, ast.Starred)
                else N.Element(value=self.expr(e)) for e in elts]

    def e_dict(self, n):
        return N.Dict(elements=[
            N.StarredDictElement(value=self.expr(v)) if k is None
            else N.DictElement(key=self.expr(k), value=self.expr(v))
            for k, v in zip(n.keys, n.values)])

    def e_boolop(self, n):
        op = cst.And if isinstance(n.op, ast.And) else cst.Or
        out = self.expr(n.values[0])
        for v in n.values[1:]:
            out = N.BooleanOperation(left=out, operator=op(), right=self.expr(v))
        return out

    def e_compare(self, n):
        return N.Comparison(left=self.expr(n.left), comparisons=[
            N.ComparisonTarget(operator=getattr(N, _COMPARE[type(op)])(), comparator=self.expr(c))
            for op, c in zip(n.ops, n.comparators)])

    def comp(self, generators):
        out = None
        for g in reversed(generators):
            out = N.CompFor(target=self.expr(g.target), iter=self.expr(g.iter),
                              ifs=[N.CompIf(test=self.expr(t)) for t in g.ifs],
                              inner_for_in=out,
                              asynchronous=N.Asynchronous() if g.is_async else None)
        return out


class _InnerBuilder(_Builder):
    """Builds the expressions inside an f-string from the ``ast`` alone: constants are spelled
    from their values, ``d[a, b]`` has one subscript element per tuple item."""

    def e_constant(self, n):
        v = n.value
        if v is Ellipsis:
            return N.Ellipsis()
        if v is None or v is True or v is False:
            return N.Name(value=repr(v))
        if isinstance(v, (str, bytes)):
            return N.SimpleString(value=repr(v))
        if isinstance(v, complex):
            return N.Imaginary(value=repr(v))
        if isinstance(v, float):
            return N.Float(value=repr(v))
        return N.Integer(value=repr(v))

    def e_string(self, n):
        if isinstance(n, ast.JoinedStr):
            return N.FormattedString(parts=self._fparts(n.values), start='f"', end='"')
        return self.e_constant(n)

    def _inner(self, n):
        return self.expr(n)

    def expr(self, n):
        node = super().expr(n)
        if self.origin is not None:
            self.inner.add(id(node))
        return node

    def e_subscript(self, n):
        s = n.slice
        items = s.elts if isinstance(s, ast.Tuple) and s.elts else [s]
        return N.Subscript(value=self.expr(n.value),
                             slice=[N.SubscriptElement(slice=self.index(e)) for e in items])


def _pos(n) -> tuple:
    return (n.lineno, n.col_offset)
