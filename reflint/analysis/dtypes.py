"""A small dtype/shape domain (``DtypesMixin``): what an expression's dtype is, when it is sure.

Asked by rules, on demand (nothing is computed for a file no rule asks about), from the
values the evaluator recorded (``value_of``: an ``ArrayVal`` names the expression that made
the Array; a ``RefVal`` its creation call) and the registry's tables (``api.DTYPE_KINDS``,
``api.ARRAY_CONSTRUCTOR_DTYPES``, ``api.ARRAY_FUNCTION_DTYPES``, ``api.ARRAY_METHOD_DTYPES``):

- Python literals are *weak*: ``1`` is a weak int32, ``1.5`` a weak float32, ``True`` a bool.
- ``jnp`` constructors give the default float (``jnp.zeros(3)``) or their ``dtype=``;
  ``jnp.arange`` of ints an int32; ``jnp.array(0)`` the data's; ``*_like`` the argument's.
- ``x.astype(t)`` gives ``t``; ``jax.ShapeDtypeStruct(shape, t)`` describes ``t``.
- Arithmetic promotes as JAX does (``jax.numpy.promote_types``, with weak types): a weak
  scalar takes the other operand's dtype when its kind is not higher (``bf16 + 1.0`` is
  bfloat16), ints and floats give the float, ``/`` gives a float, comparisons a bool.
- A ref's dtype is its initial value's (never weak: a write must match it exactly, measured
  on JAX 0.10.2 and 0.12.0.1), or the ``ShapeDtypeStruct`` given to ``jax.empty_ref``.

64-bit types: a file that mentions ``x64`` (``jax_enable_x64``) may run with them on, where
the defaults differ: every dtype there is unknown, unless the caller asks for ``kinds_only``
(it will compare only bool / integer / float / complex, which 64-bit types do not change:
``jax.new_ref(0)`` is an integer ref, ``x * 2.0`` a float, with them on or off).
Everything else not listed is unknown (None), and rules stay silent on it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from .._record import record
from ..values import QN, ArrayVal, RefVal
from .syntax import _bound_names

_MAX_DEPTH = 24
_RANDOM = frozenset({"normal", "uniform", "truncated_normal", "randint", "bernoulli"})


@record(frozen=True)
class AVal:
    """An abstract array value: ``dtype`` (a name of ``api.DTYPE_KINDS``), whether it is
    weakly typed (a Python scalar, or computed from weak ones only), and its ``shape`` (a
    tuple of ints, None when unknown)."""

    dtype: str
    weak: bool = False
    shape: Optional[tuple] = None

    @property
    def kind(self) -> int:
        return api.DTYPE_KINDS[self.dtype][0]

    def describe(self) -> str:
        if self.dtype == FLOATING:
            return "a floating-point value"
        return f"weakly typed {self.dtype} (a Python scalar)" if self.weak else self.dtype

    def differs(self, ref_dtype: str) -> bool:
        """Writing this value into a ref of ``ref_dtype`` is surely a dtype mismatch."""
        if self.dtype == FLOATING:
            return _lattice_kind(ref_dtype) <= 1
        return self.dtype != ref_dtype


FLOATING = "floating"


def canonical_dtype(name: str) -> Optional[str]:
    """A dtype name as JAX stores it with 64-bit types off (``float64`` -> ``float32``)."""
    name = api.DTYPE_ALIASES.get(name, name)
    if name not in api.DTYPE_KINDS:
        return None
    return {"int64": "int32", "uint64": "uint32", "float64": "float32",
            "complex128": "complex64"}.get(name, name)


def _kind(dtype: str) -> int:
    return api.DTYPE_KINDS[dtype][0]


def _bits(dtype: str) -> int:
    return api.DTYPE_KINDS[dtype][1]


def _lattice_kind(dtype: str) -> int:
    """0 bool, 1 integer (signed or not), 2 float, 3 complex."""
    return (0, 1, 1, 2, 3)[_kind(dtype)]


_DEFAULT = {1: api.DEFAULT_INT, 2: api.DEFAULT_FLOAT, 3: api.DEFAULT_COMPLEX}


def promote(a: Optional[AVal], b: Optional[AVal]) -> Optional[AVal]:
    """The dtype of ``a op b`` for arithmetic ``op`` (JAX's type promotion, 64-bit types
    off), or None when either is unknown or the case is not one reflint is sure of."""
    if a is None or b is None:
        return None
    shape = broadcast(a.shape, b.shape)
    if FLOATING in (a.dtype, b.dtype):
        other = b if a.dtype == FLOATING else a
        return AVal(FLOATING, False, shape) if _lattice_kind(other.dtype) <= 2 and \
            (other.dtype == FLOATING or _lattice_kind(other.dtype) <= 1 or other.weak) \
            else None
    if a.dtype == b.dtype:
        return AVal(a.dtype, a.weak and b.weak, shape)
    ka, kb = _lattice_kind(a.dtype), _lattice_kind(b.dtype)
    if ka == 0 and not b.weak or kb == 0 and not a.weak:
        return AVal(b.dtype if ka == 0 else a.dtype, False, shape)
    if a.weak and b.weak:
        hi = a if ka >= kb else b
        return AVal(hi.dtype, True, shape)
    if a.weak or b.weak:
        weak, strong = (a, b) if a.weak else (b, a)
        kw, ks = _lattice_kind(weak.dtype), _lattice_kind(strong.dtype)
        if kw <= ks:
            return AVal(strong.dtype, False, shape)
        if ks == 0:
            return AVal(weak.dtype, True, shape)
        return AVal(_DEFAULT[kw], True, shape)
    # Both strongly typed, different dtypes.
    if ka != kb:
        hi = a if ka > kb else b
        lo = b if hi is a else a
        if ka == 3 or kb == 3:  # complex: wide enough for the float?
            if _lattice_kind(lo.dtype) == 2 and _bits(lo.dtype) > _bits(hi.dtype) // 2:
                return None
        return AVal(hi.dtype, False, shape)
    if ka == 2:  # floats
        if {a.dtype, b.dtype} == {"bfloat16", "float16"}:
            return AVal("float32", False, shape)
        return AVal(a.dtype if _bits(a.dtype) > _bits(b.dtype) else b.dtype, False, shape)
    if ka == 1 and _kind(a.dtype) == _kind(b.dtype):  # both signed or both unsigned
        return AVal(a.dtype if _bits(a.dtype) > _bits(b.dtype) else b.dtype, False, shape)
    return None  # signed with unsigned, complex widths: not needed, not guessed


def broadcast(a: Optional[tuple], b: Optional[tuple]) -> Optional[tuple]:
    if a is None or b is None:
        return None
    out = []
    for x, y in zip(reversed(a), reversed(b)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    longer = a if len(a) > len(b) else b
    out.extend(reversed(longer[:len(longer) - min(len(a), len(b))]))
    return tuple(reversed(out))


def _inexact(v: Optional[AVal], unknown_is_float: bool = False) -> Optional[AVal]:
    """The result of a function that gives floats (``mean``, ``sin``, true division): for an
    unknown argument, some float (when ``unknown_is_float``: never a complex input here)."""
    if v is None:
        return AVal(FLOATING, False, None) if unknown_is_float else None
    if _lattice_kind(v.dtype) >= 2:
        return v
    return AVal(api.DEFAULT_FLOAT, v.weak, v.shape)


def kind_of(dtype: str) -> int:
    """0 bool, 1 integer (signed or not), 2 float, 3 complex (``FLOATING``: 2)."""
    return 2 if dtype == FLOATING else _lattice_kind(dtype)


class DtypesMixin:

    # -- public queries ----------------------------------------------------------------------

    @property
    def x64_possible(self) -> bool:
        """The file mentions ``x64``: it may run with 64-bit types on (other default widths)."""
        got = self.__dict__.get("_x64_possible")
        if got is None:  # asked for every write: one scan of the text, not one per write
            got = self.__dict__["_x64_possible"] = "x64" in self.source
        return got

    def aval_of(self, expr, kinds_only: bool = False, scope=None) -> Optional[AVal]:
        """The dtype (and shape, when known) of the Array ``expr`` evaluates to, or None.
        With ``kinds_only`` the answer is given in a file that may enable 64-bit types too:
        the caller uses only its kind (``kind_of``), the same with them on or off. With
        ``scope`` (the function ``expr`` is in), a parameter of it that its body never
        rebinds is known from the arguments every call of it passes, when they agree
        (``jax.vmap(f)(ref, jnp.ones(3))``: f's ``x`` is float32; its shape is not kept)."""
        if self.x64_possible and not kinds_only:
            return None
        got = self._aval(expr, 0)
        if got is None and scope is not None and isinstance(expr, cst.Name):
            got = self.cached(("param aval", id(scope.node), expr.value),
                              lambda: self._param_aval(scope, expr.value))
        return got

    def _param_aval(self, info, pname: str) -> Optional[AVal]:
        """The dtype of parameter ``pname`` of ``info``: every call's argument's, if they
        are all known and the same, and the body never rebinds the name."""
        if info.is_module or info.is_lambda or not isinstance(info.node, cst.FunctionDef) or \
                id(info) in self._pallas_kernels:
            return None
        if not any(p.name == pname and p.kind in ("pos", "posonly", "kwonly")
                   for p in info.params):
            return None
        body = info.node.body
        if not isinstance(body, cst.IndentedBlock) or pname in _bound_names(body.body):
            return None
        found = []
        for call in self.traced_calls:
            if info in call.targets:
                found.append(call.bindings.get(id(info), {}).get(pname))
        for call in self.plain_calls:
            if call.callee is info:
                found.append(call.bindings.get(pname))
        if not found or len(found) < len(info.callers):
            return None
        avs = set()
        for b in found:
            if b is None or b.expr is None or isinstance(b.value, RefVal):
                return None
            a = self._aval(b.expr, 0)
            if a is None:
                return None
            avs.add(AVal(a.dtype, a.weak, None))
        return avs.pop() if len(avs) == 1 else None

    def ref_aval(self, ref: RefVal, kinds_only: bool = False) -> Optional[AVal]:
        """The dtype (and shape) of ``ref``'s elements, when its creation says it
        (``kinds_only``: as for ``aval_of``)."""
        if self.x64_possible and not kinds_only:
            return None
        return self._known_ref_aval(ref)

    def _known_ref_aval(self, ref: RefVal) -> Optional[AVal]:
        if ref is None or ref.tree or ref.view:
            return None
        return self.cached(("ref aval", ref.key, id(ref.node)), lambda: self._ref_aval(ref, 0))

    def dtype_spelled(self, expr) -> Optional[str]:
        """The dtype an expression names: ``jnp.float32``, ``np.int8``, ``"bfloat16"``,
        ``float``, ``x.dtype`` of a known Array (not in a file that may enable 64-bit types)."""
        return self._dtype_spelled(expr, gated=True)

    def _dtype_spelled(self, expr, gated: bool = False) -> Optional[str]:
        """The dtype an expression names: ``jnp.float32``, ``np.int8``, ``"bfloat16"``,
        ``float``, ``x.dtype`` of a known Array."""
        if expr is None:
            return None
        if isinstance(expr, cst.SimpleString):
            try:
                text = expr.evaluated_value
            except Exception:
                return None
            return canonical_dtype(text) if isinstance(text, str) else None
        if isinstance(expr, cst.Attribute) and expr.attr.value == "dtype":
            inner = self._aval(expr.value, 0) if not (gated and self.x64_possible) else None
            if inner is not None:
                return inner.dtype
            ref = self.ref_of(expr.value)
            inner = self._known_ref_aval(ref) if ref is not None and \
                not (gated and self.x64_possible) else None
            return inner.dtype if inner is not None else None
        v = self.value_of(expr)
        if not isinstance(v, QN):
            if isinstance(expr, cst.Name) and expr.value in ("float", "int", "bool", "complex"):
                v = self._lookup_static(expr, self.module_info)
            if not isinstance(v, QN):
                return None
        qn = v.qualname
        mod, _, last = qn.rpartition(".")
        if mod == "builtins":
            return canonical_dtype(last) if last in ("float", "int", "bool", "complex") else None
        if mod in ("jax.numpy", "numpy", "jnp", "ml_dtypes", "jax.dtypes") or \
                mod.startswith("jax._src.numpy"):
            return canonical_dtype(last)
        return None

    # -- the domain --------------------------------------------------------------------------

    def _aval(self, expr, depth: int) -> Optional[AVal]:
        if expr is None or depth > _MAX_DEPTH:
            return None
        t = type(expr)
        if t is cst.Integer:
            return AVal(api.DEFAULT_INT, True, ())
        if t is cst.Float:
            return AVal(api.DEFAULT_FLOAT, True, ())
        if t is cst.Imaginary:
            return AVal(api.DEFAULT_COMPLEX, True, ())
        if t is cst.Name:
            if expr.value in ("True", "False"):
                return AVal("bool", False, ())
            return self._aval_of_value(expr, depth)
        if t is cst.UnaryOperation:
            if isinstance(expr.operator, cst.Not):
                return None
            inner = self._aval(expr.expression, depth + 1)
            if isinstance(expr.operator, cst.BitInvert) and inner is not None and \
                    _lattice_kind(inner.dtype) >= 2:
                return None
            return inner
        if t is cst.BinaryOperation:
            left = self._aval(expr.left, depth + 1)
            right = self._aval(expr.right, depth + 1)
            op = type(expr.operator)
            if (left is None) != (right is None) and op in (
                    cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power):
                # A number combined with a Python float (`x * 3.`), or divided: some float
                # (or complex) whatever the other operand is.
                known = left if right is None else right
                if known.dtype == api.DEFAULT_FLOAT and known.weak or \
                        op is cst.Divide and _lattice_kind(known.dtype) <= 2:
                    return AVal(FLOATING, False, None)
                return None
            if op is cst.Divide:
                return _inexact(promote(left, right))
            if op in (cst.LeftShift, cst.RightShift, cst.BitAnd, cst.BitOr, cst.BitXor):
                return None
            if left is not None and left.dtype == "bool" and right is not None and \
                    right.dtype == "bool" and op in (cst.Add, cst.Multiply):
                return AVal("bool", left.weak and right.weak, broadcast(left.shape, right.shape))
            if op is cst.MatrixMultiply:
                v = promote(left, right)
                return AVal(v.dtype, v.weak, None) if v is not None else None
            return promote(left, right)
        if t is cst.Comparison:
            if all(isinstance(c.operator, (cst.LessThan, cst.GreaterThan, cst.LessThanEqual,
                                           cst.GreaterThanEqual, cst.Equal, cst.NotEqual))
                   for c in expr.comparisons) and len(expr.comparisons) == 1:
                left = self._aval(expr.left, depth + 1)
                right = self._aval(expr.comparisons[0].comparator, depth + 1)
                if left is not None and right is not None and not (left.weak and right.weak):
                    return AVal("bool", False, broadcast(left.shape, right.shape))
            return None
        if t is cst.Subscript:
            return self._aval_subscript(expr, depth)
        if t is cst.Call:
            return self._aval_call(expr, depth)
        if t is cst.IfExp:
            a = self._aval(expr.body, depth + 1)
            b = self._aval(expr.orelse, depth + 1)
            return a if a == b else None
        return None

    def _aval_of_value(self, expr, depth: int) -> Optional[AVal]:
        v = self.value_of(expr)
        if not isinstance(v, ArrayVal) or v.node is None or v.node is expr:
            return None
        first = self._aval(v.node, depth + 1) if not isinstance(v.node, cst.Param) else None
        if first is None:
            return None
        for other in v.also:
            if other is None or isinstance(other, cst.Param):
                return None
            if self._aval(other, depth + 1) != first:
                return None
        return first

    def _aval_subscript(self, expr, depth: int) -> Optional[AVal]:
        base = self.value_of(expr.value)
        if isinstance(base, RefVal):
            ref = self._known_ref_aval(base)
            if ref is None:
                return None
            whole = len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) and \
                isinstance(expr.slice[0].slice.value, cst.Ellipsis)
            return AVal(ref.dtype, False, ref.shape if whole else None)
        if isinstance(base, ArrayVal) or isinstance(expr.value, (cst.Name, cst.Call)):
            inner = self._aval(expr.value, depth + 1)
            if inner is not None:
                return AVal(inner.dtype, inner.weak, None)
        return None

    def _aval_call(self, call: cst.Call, depth: int) -> Optional[AVal]:
        func = call.func
        fv = self.value_of(func)
        if isinstance(fv, QN):
            return self._aval_api(call, fv.qualname, depth)
        if isinstance(func, cst.Attribute):
            meth = func.attr.value
            receiver = func.value
            # `x.at[i].set(v)`: x's dtype.
            if meth in api.AT_UPDATE_METHODS and isinstance(receiver, cst.Subscript) and \
                    isinstance(receiver.value, cst.Attribute) and \
                    receiver.value.attr.value == "at":
                inner = self._aval(receiver.value.value, depth + 1)
                return inner if inner is not None and not inner.weak else None
            how = api.ARRAY_METHOD_DTYPES.get(meth)
            if how is None and meth not in ("sum", "prod"):
                return None
            if how == "astype":
                dt = self._dtype_spelled(_arg(call, 0, "dtype"))
                if dt is None:
                    return None
                inner = self._aval(receiver, depth + 1)
                return AVal(dt, False, inner.shape if inner is not None else None)
            if not isinstance(self.value_of(receiver), ArrayVal):
                return None
            inner = self._aval(receiver, depth + 1)
            return _by_class(how or "sum", inner, None)
        return None

    def _aval_api(self, call: cst.Call, qn: str, depth: int) -> Optional[AVal]:
        canon = api.canonical(qn)
        if canon == api.REF_GET or canon == api.FREEZE:
            ref = self.ref_of(_arg(call, 0, "ref")) if _arg(call, 0, "ref") is not None \
                else None
            known = self._known_ref_aval(ref) if ref is not None else None
            return AVal(known.dtype, False) if known is not None else None
        mod, _, last = qn.rpartition(".")
        if mod == "builtins":
            return None
        if not (mod in ("jax.numpy", "numpy", "jax.random", "jax.nn", "jax.lax") or
                mod.startswith(("jax.numpy.", "jax._src.numpy", "jax.scipy"))):
            return None
        dt = canonical_dtype(last)
        if dt is not None and mod in ("jax.numpy", "numpy"):
            # `jnp.float32(1.5)`, `np.int8(x)`: a scalar of that dtype.
            return AVal(dt, False, ())
        spec = api.ARRAY_CONSTRUCTOR_DTYPES.get(last)
        if spec is not None and (mod == "jax.random") == (last in _RANDOM):
            return self._aval_constructor(call, last, spec, mod, depth)
        how = api.ARRAY_FUNCTION_DTYPES.get(last)
        if how is None and last in ("sum", "prod"):
            how = "sum"
        if how is None:
            return None
        first = self._aval(_arg(call, 0, "x"), depth + 1)
        if how == "promote":
            second = self._aval(_arg(call, 1, "y"), depth + 1)
            v = promote(first, second)
            return AVal(v.dtype, v.weak, None) if v is not None else None
        return _by_class(how, first, None)

    def _aval_constructor(self, call, last: str, spec, mod: str, depth: int) -> Optional[AVal]:
        how, dtype_pos = spec
        dt_expr = _arg(call, dtype_pos, "dtype") if dtype_pos is not None else \
            _arg(call, None, "dtype")
        shape = None
        if last in ("zeros", "ones", "empty") or (last == "full"):
            shape = _shape(_arg(call, 0, "shape"))
        elif last in ("normal", "uniform"):
            shape = _shape(_arg(call, 1, "shape"))
        if dt_expr is not None:
            dt = self._dtype_spelled(dt_expr)
            return AVal(dt, False, shape) if dt is not None else None
        if how == "float":
            return AVal(api.DEFAULT_FLOAT, False, shape)
        if how == "int":
            return AVal(api.DEFAULT_INT, False, shape)
        if how == "bool":
            return AVal("bool", False, None)
        if how == "like":
            inner = self._aval(_arg(call, 0, "a"), depth + 1)
            if inner is None:
                return None
            return AVal(inner.dtype, False, inner.shape)
        if how == "fill":
            inner = self._aval(_arg(call, 1, "fill_value"), depth + 1)
            return AVal(inner.dtype, False, shape) if inner is not None else None
        if how == "data":
            data = _arg(call, 0, "object")
            if isinstance(data, (cst.List, cst.Tuple)):
                avs = [self._aval(e.value, depth + 1) for e in data.elements
                       if not isinstance(e, cst.StarredElement)]
                if not avs or len(avs) != len(data.elements) or None in avs:
                    return None
                v = avs[0]
                for other in avs[1:]:
                    v = promote(v, other)
                    if v is None:
                        return None
                return AVal(v.dtype, False, (len(avs),) if v.shape == () else None)
            inner = self._aval(data, depth + 1)
            return AVal(inner.dtype, False, inner.shape) if inner is not None else None
        if how == "arange":
            bounds = [_arg(call, i, k) for i, k in ((0, "start"), (1, "stop"), (2, "step"))]
            bounds = [b for b in bounds if b is not None]
            avs = [self._aval(b, depth + 1) for b in bounds]
            if not avs or None in avs:
                return None
            if all(_lattice_kind(v.dtype) <= 1 for v in avs):
                n = _int_value(bounds[0]) if len(bounds) == 1 else None
                return AVal(api.DEFAULT_INT, False, (n,) if n is not None else None)
            if all(_lattice_kind(v.dtype) <= 2 for v in avs):
                return AVal(api.DEFAULT_FLOAT, False, None)
        return None

    def _ref_aval(self, ref: RefVal, depth: int) -> Optional[AVal]:
        if depth > 4:
            return None
        if ref.origin == "created" and isinstance(ref.node, cst.Call):
            c = self._creation_of(ref.node)
            if c is None:
                return None
            if c.api_name == api.NEW_REF:
                if any(a.keyword is not None and a.keyword.value == "dtype"
                       for a in ref.node.args):
                    return None
                v = self._aval(c.init_expr, 0)
                return AVal(v.dtype, False, v.shape) if v is not None else None
            if c.api_name == api.EMPTY_REF:
                return self._struct_aval(_arg(ref.node, 0, "aval"))
            return None
        if ref.origin == "merged":
            # One of several refs (a name bound to different refs on different paths, or in
            # different notebook cells): known when every one of them has the same.
            keys, stack = [], [ref.key]
            while stack and len(keys) <= 16:
                k = stack.pop()
                if isinstance(k, tuple) and k and k[0] == "merged":
                    stack.extend(k[1:])
                elif isinstance(k, tuple) and len(k) == 2 and k[0] == "new":
                    keys.append(k[1])
                else:
                    return None
            if not keys or stack:
                return None
            avs = set()
            for node_id in keys:
                c = self._creation_by_id(node_id)
                if c is None:
                    return None
                avs.add(self._ref_aval(c.ref, depth + 1))
            return avs.pop() if len(avs) == 1 else None
        if ref.origin == "param" and ref.scope is not None and isinstance(ref.key, tuple) and \
                len(ref.key) >= 3 and ref.key[0] == "param" and \
                (len(ref.key) == 3 or not ref.key[3]):
            # A parameter: the refs every call of its function passes there, when they agree.
            info = ref.scope
            pname = ref.key[2]
            found = []
            for call in self.traced_calls:
                if info in call.targets:
                    b = call.bindings.get(id(info), {}).get(pname)
                    found.append(b.value if b is not None else None)
            for call in self.plain_calls:
                if call.callee is info:
                    b = call.bindings.get(pname)
                    found.append(b.value if b is not None else None)
            if not found or len(found) < len(info.callers):
                return None
            avs = set()
            for v in found:
                if not isinstance(v, RefVal) or v.key == ref.key:
                    return None
                a = self._ref_aval(v, depth + 1)
                if a is None:
                    return None
                avs.add(a)
            return avs.pop() if len(avs) == 1 else None
        return None

    def _creation_by_id(self, node_id: int):
        """The creation fact of the constructor call ``id(node) == node_id`` (an index of
        ``self.creations``, rebuilt when facts were added: one per file, not a scan of every
        creation per question)."""
        index = self.__dict__.get("_creation_index")
        if index is None or index[0] != len(self.creations):
            index = self.__dict__["_creation_index"] = (
                len(self.creations), {id(c.node): c for c in reversed(self.creations)})
        return index[1].get(node_id)

    def _creation_of(self, node):
        c = self._creation_by_id(id(node))
        return c if c is not None and c.node is node else None

    def _struct_aval(self, expr) -> Optional[AVal]:
        """``jax.ShapeDtypeStruct(shape, dtype)``: what it describes."""
        if not isinstance(expr, cst.Call):
            return None
        fv = self.value_of(expr.func)
        if not isinstance(fv, QN) or fv.qualname.rpartition(".")[2] != "ShapeDtypeStruct":
            return None
        dt = self._dtype_spelled(_arg(expr, 1, "dtype"))
        if dt is None:
            return None
        return AVal(dt, False, _shape(_arg(expr, 0, "shape")))


def _by_class(how: str, inner: Optional[AVal], shape) -> Optional[AVal]:
    if inner is None and how == "inexact":
        return AVal(FLOATING, False, shape)
    if inner is None:
        return None
    if how == "same":
        return AVal(inner.dtype, inner.weak, shape)
    if how == "inexact":
        v = _inexact(inner, True)
        return AVal(v.dtype, v.weak, shape) if v is not None else None
    if how == "bool":
        return AVal("bool", False, shape)
    if how == "index":
        return AVal(api.DEFAULT_INT, False, shape)
    if how == "sum":
        if _lattice_kind(inner.dtype) <= 1 and _bits(inner.dtype) < 32:
            return AVal(api.DEFAULT_INT if _kind(inner.dtype) != 2 else "uint32", False, shape)
        return AVal(inner.dtype, inner.weak, shape)
    return None


def _arg(call: cst.Call, pos: Optional[int], kw: str):
    """The expression given as argument ``pos`` (positional) or keyword ``kw``; None if
    absent or when a starred argument makes positions unknown."""
    i = 0
    for a in call.args:
        if a.star:
            return None
        if a.keyword is not None:
            if a.keyword.value == kw:
                return a.value
            continue
        if pos is not None and i == pos:
            return a.value
        i += 1
    return None


def _int_value(expr) -> Optional[int]:
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value.replace("_", ""), 0)
        except ValueError:
            return None
    return None


def _shape(expr) -> Optional[tuple]:
    """A literal shape: ``3``, ``(3, 4)``, ``()``."""
    n = _int_value(expr)
    if n is not None:
        return (n,)
    if isinstance(expr, (cst.Tuple, cst.List)):
        out = []
        for e in expr.elements:
            n = _int_value(e.value) if not isinstance(e, cst.StarredElement) else None
            if n is None:
                return None
            out.append(n)
        return tuple(out)
    return None
