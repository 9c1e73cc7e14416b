"""Syntax helpers over libcst nodes: walking, positions, names, constants."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from ..values import (
    DictVal,
    RefVal,
    SeqVal,
    Value,
)
from .facts import (
    Param,
)

_FIELDS: dict = {}


_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def walk_nodes(roots, into=None):
    """Every node of the trees ``roots``, depth first in field order (fast field reads, see
    child_nodes); the children of a node for which ``into(node)`` is false are not visited."""
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        yield node
        if into is None or into(node):
            stack.extend(reversed(child_nodes(node)))


def _in_own_scope(node) -> bool:
    """Whether a walk of a scope's statements goes into ``node``: not into nested functions,
    classes or lambdas."""
    return type(node) not in _SCOPES


def _target_names(t):
    """The names an assignment target binds (``a``, ``a, (b, *c)``)."""
    if isinstance(t, cst.Name):
        yield t.value
    elif isinstance(t, (cst.Tuple, cst.List)):
        for e in t.elements:
            yield from _target_names(e.value)
    elif isinstance(t, cst.StarredElement):
        yield from _target_names(t.value)


def child_nodes(node) -> list:
    """The child nodes of ``node`` but its layout (libcst's ``children`` without whitespace,
    comments, parentheses, brackets and punctuation: ``LAYOUT``), in field order rather than
    source order. ``children`` runs libcst's visitor machinery for every call; reading the
    dataclass fields is about ten times faster, and the layout fields (about two thirds of a
    node's fields) are never read, which matters on a whole-module walk."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = _FIELDS[type(node)] = tuple(
            f for f in node._node_fields if not _is_layout_field(f))
    out = []
    is_node = _IS_NODE
    for name in fields:
        value = getattr(node, name)
        t = type(value)
        flag = is_node.get(t)
        if flag is None:
            flag = is_node[t] = _is_syntax_node(value)
        if flag:
            out.append(value)
        elif t is list or t is tuple:
            for v in value:
                flag = is_node.get(type(v))
                if flag is None:
                    flag = is_node[type(v)] = _is_syntax_node(v)
                if flag:
                    out.append(v)
    return out


# The fields through which a node holds statements, suites or clauses (``body``, ``orelse``,
# ``handlers``, ``finalbody``, ``cases``): small_statements reads no other, per node type in
# field order (tests/test_syntax_index.py compares it with a walk of every child).
_STATEMENT_FIELD_NAMES = frozenset({"body", "orelse", "handlers", "finalbody", "cases"})
_STATEMENT_FIELDS: dict = {}

# The nodes that hold statements (below a module): statements and their suites and clauses.
_STATEMENT_HOLDERS = (cst.BaseSuite, cst.BaseCompoundStatement, cst.SimpleStatementLine,
                      cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
                      cst.MatchCase)


def small_statements(module):
    """Every small statement (``Expr``, ``Assign``, ``Return`` ...) of ``module``, as
    ``(statement, scope, blocks)``: the nearest enclosing function or class definition (None
    at module level) and the compound statements between it and the statement, outermost
    first. Walks statements only, never into expressions (which hold none): a tenth of a
    whole-module walk."""
    holders = _STATEMENT_HOLDERS
    small, compound = cst.BaseSmallStatement, cst.BaseCompoundStatement
    table = _STATEMENT_FIELDS
    stack = [(module, None, ())]
    pop, push = stack.pop, stack.append
    while stack:  # depth first, in field order (as SyntaxIndex.nodes)
        node, scope, blocks = pop()
        if isinstance(node, small):
            yield node, scope, blocks
            continue
        t = type(node)
        if t is cst.FunctionDef or t is cst.ClassDef:
            scope, blocks = node, ()
        elif isinstance(node, compound):
            blocks = blocks + (node,)
        fields = table.get(t)
        if fields is None:
            fields = table[t] = tuple(f for f in node._node_fields if f in _STATEMENT_FIELD_NAMES)
        children = []
        for name in fields:  # the fields that hold statements only: no expression is read
            value = getattr(node, name)
            if type(value) is list or type(value) is tuple:
                children.extend(value)
            elif value is not None:
                children.append(value)
        for child in reversed(children):
            if isinstance(child, holders) or isinstance(child, small):
                push((child, scope, blocks))


class SyntaxIndex:
    """One walk of a module, for the queries that would each walk it: ``parent(node)`` and
    the nodes of a type in source-walk order (``of_type``; depth first, field order)."""

    __slots__ = ("parents", "nodes", "_by_type")

    def __init__(self, module) -> None:
        parents: dict = {}
        by_type: dict = {}
        nodes: list = []
        stack = [module]
        pop, push = stack.pop, stack.extend
        while stack:
            node = pop()
            nodes.append(node)
            kids = child_nodes(node)
            if kids:
                for child in kids:
                    parents[id(child)] = node
                push(reversed(kids))
            t = type(node)
            got = by_type.get(t)
            if got is None:
                by_type[t] = [node]
            else:
                got.append(node)
        self.parents = parents  # id(node) -> parent node
        self.nodes = nodes  # every node, in walk order
        self._by_type = by_type

    def parent(self, node):
        return self.parents.get(id(node))

    def of_type(self, *types) -> list:
        """The nodes of ``types`` (exact types), in walk order."""
        if len(types) == 1:
            return self._by_type.get(types[0], [])
        if sum(len(self._by_type.get(t, ())) for t in types) == 0:
            return []
        types = frozenset(types)
        return [n for n in self.nodes if type(n) in types]

    def enclosing(self, node, types):
        """The nearest proper ancestor of ``node`` whose type is in ``types`` (or None)."""
        parents = self.parents
        n = parents.get(id(node))
        while n is not None and type(n) not in types:
            n = parents.get(id(n))
        return n


# Layout: the nodes libcst keeps for round-tripping the source and no analysis reads.
LAYOUT = (cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace,
          cst.EmptyLine, cst.Newline, cst.Comment, cst.LeftParen, cst.RightParen, cst.Comma,
          cst.Colon, cst.AssignEqual, cst.Semicolon, cst.LeftSquareBracket,
          cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Dot)
_LAYOUT_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "colon", "first_colon", "second_colon", "dot",
    "equal", "lbrace", "rbrace", "lbracket", "rbracket", "header", "footer", "newline",
    "leading_lines", "lines_after_decorators", "empty_lines", "first_line", "last_line",
    "leading_whitespace", "trailing_whitespace", "comment", "trailing_comma", "relative"})


def is_whitespace(value, name: str = "SimpleWhitespace") -> bool:
    """Whether ``value`` is the whitespace node ``name``: in a tree converted from libcst's
    (``reflint.cstbridge``, the one fixes read) whitespace and comments are libcst's own
    objects; in the fast tree there are none."""
    return type(value).__name__ == name


def _is_layout_field(name: str) -> bool:
    """A field that only ever holds layout nodes (or none): never read by child_nodes."""
    return name in _LAYOUT_FIELDS or name.startswith("whitespace")


def _is_syntax_node(value) -> bool:
    return isinstance(value, cst.CSTNode) and not isinstance(value, LAYOUT)


# type -> whether it is a libcst node: ``isinstance(x, cst.CSTNode)`` goes through ABCMeta's
# __instancecheck__ (CSTNode is an ABC), several times slower than a dict lookup.
_IS_NODE: dict = {list: False, tuple: False, str: False, type(None): False}


def _positions_of(module: cst.Module):
    """The positions of every node of a tree libcst parsed (``reflint.cstbridge.to_nodes``),
    computed at once: ``get(node)`` gives its CodeRange; on a tree built from the stdlib
    ``ast``, the positions from there (``fasttree.AstPositions``)."""
    if module._cst is None:
        if module._ast_positions is not None:
            return module._ast_positions
        raise ValueError("a tree with no positions")
    from ..cstbridge import positions_of

    return positions_of(module)


def slice_exprs(node: cst.Subscript):
    """The expressions inside a subscript's index (``i``, ``a:b:c``, ``i, j``)."""
    for el in node.slice:
        s = el.slice
        if isinstance(s, cst.Index):
            yield s.value
        else:
            for part in (s.lower, s.upper, s.step):
                if part is not None:
                    yield part


def _body(block) -> list:
    return list(block.body) if hasattr(block, "body") else []


def _params_of(params: cst.Parameters) -> list:
    out = []
    for p in params.posonly_params:
        out.append(Param(p.name.value, p, "posonly"))
    for p in params.params:
        out.append(Param(p.name.value, p, "pos"))
    if isinstance(params.star_arg, cst.Param):
        out.append(Param(params.star_arg.name.value, params.star_arg, "vararg"))
    for p in params.kwonly_params:
        out.append(Param(p.name.value, p, "kwonly"))
    if params.star_kwarg is not None:
        out.append(Param(params.star_kwarg.name.value, params.star_kwarg, "kwarg"))
    return out


def last_name(expr) -> str:
    """The last name of a Name/Attribute (``jnp.where`` -> ``where``), else ""."""
    if type(expr) is cst.Name:
        return expr.value
    return expr.attr.value if type(expr) is cst.Attribute else ""


def dotted_name(node) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _as_name(asname: cst.AsName) -> Optional[str]:
    return asname.name.value if isinstance(asname.name, cst.Name) else None


_COMPREHENSION_KINDS = {cst.ListComp: "list", cst.SetComp: "set", cst.GeneratorExp: "generator",
                        cst.DictComp: "dict"}


def _first_positional(args) -> Optional[Value]:
    for a, v in args:
        if not a.keyword and not a.star:
            return v
    return None


def _first_positional_arg(args):
    for a, v in args:
        if not a.keyword and not a.star:
            return a, v
    return None


_METHOD_KINDS = frozenset({"classmethod", "staticmethod"})


_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
             cst.UnaryOperation)


def _binds_name(stmt, name: str) -> bool:
    """``stmt`` (or a statement nested in it, not in a nested scope) binds ``name``."""
    return name in _bound_names([stmt])


def _bound_names(stmts) -> set:
    """Every name bound in one of ``stmts`` (or a statement nested in them, not in a nested
    scope), in one walk."""
    out: set = set()
    for n in walk_nodes(list(stmts), into=_in_own_scope):
        t = type(n)
        if t is cst.AssignTarget:
            target = n.target
        elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
            target = n.target
        elif t is cst.AsName:
            target = n.name
        else:
            continue
        out.update(_target_names(target))
    return out


def _is_docstring(stmt) -> bool:
    return type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and \
        type(stmt.body[0]) is cst.Expr and \
        isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _is_pallas_param(ref: RefVal) -> bool:
    """A parameter of a Pallas kernel itself (not an element of one), also handed on to a
    helper: a Ref or a pytree of refs, the analysis cannot tell."""
    return ref.maybe_tree or (ref.origin == "pallas" and len(ref.key) == 3 and
                              ref.key[0] == "param")


def _slice_of(value: Optional[Value]) -> Optional[Value]:
    """What a scan/map body receives for ``xs``: slices of refs are refs (views)."""
    if isinstance(value, RefVal):
        return RefVal(key=("slice", value.key), origin="slice", node=value.node,
                      scope=value.scope, name=value.name, unique=False, tree=value.tree,
                      cls=value.cls)
    if isinstance(value, SeqVal):
        return SeqVal(tuple(_slice_of(v) for v in value.items), value.kind)
    if isinstance(value, DictVal):
        return DictVal({k: _slice_of(v) for k, v in value.items.items()})
    return None


def _bool_constant(expr) -> Optional[bool]:
    """True / False for the literal ``True`` / ``False``, else None."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _const_index(node: cst.Subscript):
    if len(node.slice) != 1:
        return None
    s = node.slice[0].slice
    if not isinstance(s, cst.Index):
        return None
    return _const_key(s.value)


def _const_key(expr):
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value, 0)
        except ValueError:
            return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and \
            isinstance(expr.expression, cst.Integer):
        k = _const_key(expr.expression)
        return -k if k is not None else None
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:
            return None
    return None


_OP_TEXT = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
    cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@", cst.LeftShift: "<<",
    cst.RightShift: ">>", cst.BitAnd: "&", cst.BitOr: "|", cst.BitXor: "^",
    cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=",
    cst.DivideAssign: "/=", cst.FloorDivideAssign: "//=", cst.ModuloAssign: "%=",
    cst.PowerAssign: "**=", cst.MatrixMultiplyAssign: "@=", cst.LeftShiftAssign: "<<=",
    cst.RightShiftAssign: ">>=", cst.BitAndAssign: "&=", cst.BitOrAssign: "|=",
    cst.BitXorAssign: "^=", cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~",
    cst.Equal: "==", cst.NotEqual: "!=", cst.LessThan: "<", cst.LessThanEqual: "<=",
    cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
}


def op_text(op) -> str:
    return _OP_TEXT.get(type(op), type(op).__name__)

