"""Calls (``CallsMixin``): JAX APIs, transforms, control flow, Pallas launches, NNX,
partials, local functions and their bindings."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from ..values import (
    QN,
    ArrayVal,
    Choice,
    ClassVal,
    FuncVal,
    InstanceVal,
    NnxVal,
    ObjVal,
    OneOf,
    RefSeqVal,
    RefVal,
    SeqVal,
    SpecialVal,
    Transform,
    TransformVal,
    Value,
    as_view,
    is_interesting,
    join,
)
from .alternatives import (
    _one_of,
    _tag_via,
)
from .constants import (
    MUTATING_METHODS,
)
from .facts import (
    Binding,
    Creation,
    Freeze,
    FunctionInfo,
    KernelLaunch,
    AotCall,
    MutatingCall,
    PlainCall,
    RefAccess,
    RefUse,
    TracedCall,
    TracedConstructor,
    VjpApplication,
    VjpCall,
    WithRefs,
)
from .state import (
    _State,
)
from .syntax import (
    _bool_constant,
    _first_positional,
    _first_positional_arg,
    _slice_of,
    walk_nodes,
)


def _mapping_binds(fv: FuncVal, extra: int, kwargs: dict) -> Optional[tuple]:
    """The parameters of ``fv``'s function that ``functools.partial(fv, ..., **mapping)``
    is taken to bind by its mapping, or None when that is not known: a function with
    positional parameters spelled as refs (``api.REF_PARAM_SUFFIX``, a Pallas kernel's) left
    free gets them positionally, so the mapping binds the other positional-or-keyword
    parameters after the bound ones and the keyword-only ones (positional-only parameters
    cannot be given by keyword)."""
    bound = set(fv.bound_kwargs) | set(kwargs)
    params = fv.info.params
    positional = [p for p in params if p.kind in ("pos", "posonly")]
    free = [p for p in positional[len(fv.bound_args) + extra:] if p.name not in bound]
    if not any(api.spelled_as_ref(p.name) for p in free):
        return None
    return tuple(p.name for p in params
                 if p.name not in bound and (p.kind == "kwonly" or p.kind == "pos" and p in free
                                             and not api.spelled_as_ref(p.name)))


class CallsMixin:

    # -- calls -------------------------------------------------------------------------------

    def _eval_args(self, call: cst.Call, state: _State) -> list:
        out = []
        for a in call.args:
            out.append((a, self._eval(a.value, state)))
        return out

    def _eval_call(self, node: cst.Call, state: _State) -> Optional[Value]:
        fv = self._eval(node.func, state)
        args = self._eval_args(node, state)
        if type(node.func) is cst.Attribute:
            method = node.func.attr.value
            if method in MUTATING_METHODS:
                receiver = self._values.get(id(node.func.value))
                if not isinstance(receiver, (QN, RefVal, FuncVal, ClassVal)):
                    self._sink.add(MutatingCall(node, receiver, method, self._func))
            elif method in api.AOT_METHODS:
                self._sink.add(AotCall(node, node.func.value))
        if fv is None and type(node.func) is cst.Attribute and \
                node.func.attr.value in api.ARRAY_RESULT_METHODS and \
                isinstance(self._values.get(id(node.func.value)), ArrayVal):
            return ArrayVal(node)  # `(x_ref[...] ** 2).mean(axis=1)`: an Array
        if isinstance(fv, FuncVal):
            fv = self._forwarded_api(fv) or fv
        if isinstance(fv, FuncVal) and args and not args[0][0].keyword and \
                not args[0][0].star and self._applies_first(fv):
            # `def call(f, *args): return f(*args)`: `call(g, a, b)` calls `g(a, b)` here.
            fv, args = args[0][1], args[1:]
            if not isinstance(fv, (FuncVal, OneOf, QN)):
                return None
            if isinstance(fv, FuncVal):
                fv = self._forwarded_api(fv) or fv
        if isinstance(fv, QN):
            return self._call_qn(node, fv.qualname, args, state)
        if isinstance(fv, FuncVal):
            return self._call_func(node, fv, args, state)
        if isinstance(fv, Choice):
            # `{"jit": jax.jit, "vmap": jax.vmap}[name](f)`: each may be the one called.
            target = _first_positional(args)
            return _one_of(_tag_via(self._call_alternative(node, v, args, state), target,
                                    node.func, v, self.text_of)
                           for _, v in fv.alts)
        if isinstance(fv, OneOf):
            # `kernel = a if c else b; kernel(...)`, `if jit: f = jax.jit(f)`: each runs.
            return _one_of(self._call_alternative(node, f, args, state) for f in fv.alts)
        if isinstance(fv, TransformVal):
            target = _first_positional(args)
            if isinstance(target, FuncVal):
                return self._apply_api(api.API[fv.kind], target, node, fv.kwargs, fv.args,
                                       state, fv.node)
            a = api.API[fv.kind]
            if isinstance(target, OneOf) and a.family is api.Family.TRANSFORM:
                return _one_of(self._apply_api(a, f, node, fv.kwargs, fv.args, state, fv.node)
                               for f in target.alts)
            if isinstance(target, OneOf) and a.family is api.Family.KERNEL:
                for f in target.alts:
                    self._apply_api(a, f, node, fv.kwargs, fv.args, state, fv.node)
                if a.result is api.Result.LAUNCHER:
                    return SpecialVal("launcher", target, node, a.name, dict(fv.kwargs))
            return None
        if isinstance(fv, ClassVal):
            if fv.cls.block_spec:
                self._block_spec_subclass(node, args)
            if not (fv.cls.nnx and self._refs_mode):
                return self._construct(node, fv.cls, args, state)
            init = fv.cls.methods.get("__init__")
            inst = InstanceVal(fv.cls, node)
            shared: dict = {}
            if init is not None:
                ifv = FuncVal(init.info, init.transforms, (), (), inst)
                if any(a.star for a, _ in args):
                    self._call_func(node, ifv, args, state)
                else:
                    got = self._bind_call(
                        node, ifv, [(a, v, a.value) for a, v in args if not a.keyword],
                        {a.keyword.value: (a, v, a.value) for a, v in args if a.keyword},
                        "traced" if ifv.transforms else "plain")
                    # NNX objects given to `__init__` (a Variable or layer another module
                    # may hold too): the attributes bound to them are those objects.
                    shared = {k: b.value for k, b in got.items() if b.param is not None and
                              isinstance(b.value, RefVal) and b.value.unique and
                              b.value.tree in ("variable", "module")}
            if fv.cls.nnx and self._refs_mode:
                # An NNX Module/Pytree created with refs on: its Variables hold refs.
                return RefVal(key=("new", id(node)), origin="created", node=node,
                              scope=self._func, tree=fv.cls.nnx,
                              cls=fv.cls if fv.cls.nnx == "module" else None,
                              kwargs={"shared": (id(init.info.node), shared)} if shared else {})
            return inst
        if isinstance(fv, SpecialVal):
            return self._call_special(node, fv, args, state)
        if isinstance(fv, ObjVal) or isinstance(fv, RefVal) and fv.tree == "module" and \
                fv.cls is not None:
            return self._call_object(node, fv, args, state)
        if isinstance(fv, RefVal) and fv.tree == "module":
            self._layer_writes(node, fv, "__call__", args)
        if fv is None and type(node.func) is cst.Attribute:
            return self._array_method_result(node)
        return None

    def _array_method_result(self, node: cst.Call) -> Optional[Value]:
        """``x.at[i].set(v)``, ``x.astype(t)``, ``x.sum()`` ... of an Array ``x``: an Array
        (the dtype domain, reflint/analysis/dtypes.py, reads what it is)."""
        func = node.func
        meth = func.attr.value
        receiver = func.value
        if meth in api.AT_UPDATE_METHODS and type(receiver) is cst.Subscript and \
                type(receiver.value) is cst.Attribute and receiver.value.attr.value == "at":
            receiver = receiver.value.value
        elif meth not in api.ARRAY_METHOD_DTYPES:
            return None
        if isinstance(self._values.get(id(receiver)), ArrayVal):
            return ArrayVal(node)
        return None

    def _call_alternative(self, node: cst.Call, fv: Value, args: list, state: _State):
        """One alternative of a OneOf or a Choice called with ``args``."""
        if isinstance(fv, QN):
            return self._call_qn(node, fv.qualname, args, state)
        if isinstance(fv, FuncVal):
            fv = self._forwarded_api(fv) or fv
            if isinstance(fv, QN):
                return self._call_qn(node, fv.qualname, args, state)
            return self._call_func(node, fv, args, state)
        if isinstance(fv, OneOf):
            return _one_of(self._call_alternative(node, f, args, state) for f in fv.alts)
        if isinstance(fv, TransformVal):
            target = _first_positional(args)
            if isinstance(target, FuncVal):
                return self._apply_api(api.API[fv.kind], target, node, fv.kwargs, fv.args,
                                       state, fv.node)
        return None

    def _call_qn(self, node: cst.Call, qn: str, args: list, state: _State) -> Optional[Value]:
        if qn in api.NAMESPACE_CONSTRUCTORS or qn == "builtins.super":  # objects.py
            return self._call_bag_or_super(node, qn, args, state)
        a = api.lookup(qn)
        if a is None:
            return self._call_unregistered(node, qn, args)
        fam = a.family
        F = api.Family
        if fam is F.REF_CONSTRUCTOR:
            init_arg = _first_positional_arg(args)
            init_value = init_arg[1] if init_arg else None
            ref = RefVal(key=("new", id(node)), origin="created", node=node, scope=self._func,
                         kwargs={arg.keyword.value: arg.value for arg, _ in args if arg.keyword})
            self._sink.add(Creation(node, self._func, ref,
                                    init_arg[0].value if init_arg else None,
                                    init_value, a.name))
            return ref
        if fam is F.NNX:
            return self._call_nnx(node, a, args)
        if fam is F.SEQUENCE:
            return self._split_sequence(args)
        if fam is F.BLOCK_SPEC:
            self._block_spec(node, a.callees[0], args)
            return None
        if fam in (F.RECORD, F.TREE):  # objects.py
            return self._call_object_api(node, a, qn, args, state)
        if fam is F.FREEZE:
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                ref = target[1]
                self._sink.add(Freeze(node, self._func, target[0].value, ref))
                state.frozen.setdefault(ref.key, node)  # the first freeze ends the ref
            return ArrayVal(node)
        if fam is F.FREE:  # jax.free_ref(ref) ends the ref, as a freeze does
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                state.frozen.setdefault(target[1].key, node)
            return None
        if fam is F.REF_READ:
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                self._record_access("get", node, target[0].value, target[1], None, state)
            return ArrayVal(node)
        if fam is F.REF_WRITE:
            target = _first_positional_arg(args)
            if target is not None and isinstance(target[1], RefVal):
                pos = [arg for arg, _ in args if not arg.keyword and not arg.star]
                val = pos[2].value if len(pos) > 2 else None
                if val is None:
                    for arg, _ in args:
                        if arg.keyword and arg.keyword.value in ("value", "val", "x"):
                            val = arg.value
                self._record_access(a.name[len("ref_"):], node, target[0].value, target[1],
                                    val, state)
            return ArrayVal(node) if a.result is api.Result.ARRAY else None
        if fam is F.TRANSFORM:
            target = _first_positional(args)
            kwargs = {arg.keyword.value: arg.value for arg, _ in args if arg.keyword}
            rest = tuple(arg.value for arg, _ in args[1:] if not arg.keyword)
            if isinstance(target, FuncVal):
                if a.primals:
                    return self._call_jvp_like(node, a, target, args, state)
                return self._wrap(target, Transform(a.name, node, kwargs, rest), node)
            if isinstance(target, OneOf):  # each of the functions a name may hold
                if a.primals:
                    for f in target.alts:
                        self._call_jvp_like(node, a, f, args, state)
                    return None
                return _one_of(self._wrap(f, Transform(a.name, node, kwargs, rest), node)
                               for f in target.alts)
            if isinstance(target, SpecialVal) and target.kind == "launcher" and not a.primals:
                # `jax.vmap(pl.pallas_call(kernel, ...))(x, y)`: the transformed launcher
                # takes the launcher's operands, one for one; calling it launches the kernel.
                return target
            if target is None and not any(not arg.keyword for arg, _ in args):
                return TransformVal(a.name, node, kwargs)
            if isinstance(target, QN) and a.role is not None:
                ctor = api.lookup(target.qualname)
                if ctor is not None and ctor.family is F.REF_CONSTRUCTOR:
                    # `jax.jit(jax.new_ref)`: the traced function returns the ref it makes.
                    return SpecialVal("traced_constructor", ctor.name, node, a.name)
            return None
        if fam is F.PARTIAL:
            return self._call_partial(node, args)
        if fam is F.CONTROL_FLOW:
            return self._call_control_flow(node, a, args, state)
        if fam in (F.KERNEL, F.INLINE, F.WRAPPER):
            kwargs = {arg.keyword.value: arg.value for arg, _ in args if arg.keyword}
            positional = [(arg, v) for arg, v in args if not arg.keyword and not arg.star]
            # The function given by keyword (`pltpu.emit_pipeline(body=kernel, grid=...)`,
            # `pl.pallas_call(kernel=k, ...)`) is a call, not a factory's configuration.
            by_kw = [v for arg, v in args if a.callees and arg.keyword and
                     arg.keyword.value == a.callees[0].kw] \
                if a.factory != "always" and not positional else []
            if a.factory == "always" or (a.factory and not positional and not by_kw):
                return TransformVal(a.name, node, kwargs,
                                    tuple(arg.value for arg, _ in positional))
            target = positional[0][1] if positional else by_kw[0] if by_kw else None
            if isinstance(target, FuncVal):
                return self._apply_api(a, target, node, kwargs, (), state)
            if isinstance(target, OneOf):  # `kernel = k1 if c else k2`: each may run
                for f in target.alts:
                    self._apply_api(a, f, node, kwargs, (), state)
                if a.result is api.Result.LAUNCHER:
                    return SpecialVal("launcher", target, node, a.name, dict(kwargs))
                return None
            return None
        if fam is F.ARRAY:
            self._array_function_args(node, qn, args)
            first = _first_positional(args)
            if a.result is api.Result.PASS_THROUGH:
                return first
            return ArrayVal(node) if isinstance(first, ArrayVal) else None
        return None

    def _call_unregistered(self, node: cst.Call, qn: str, args: list) -> Optional[Value]:
        """A call of a name the registry has no entry for: a builtin, an array function
        (its arguments checked for refs), a Pallas function returning an Array."""
        if qn.startswith("builtins."):
            return self._call_builtin(node, qn[len("builtins."):], args)
        if api.is_array_function(qn):
            self._array_function_args(node, qn, args)
            if api.returns_jax_array(qn):
                return ArrayVal(node)
        elif api.returns_jax_array(qn) and \
                qn.rsplit(".", 1)[1] in api.ARRAY_LIKE_CONSTRUCTORS:
            # `jnp.zeros_like(x_ref)` takes a ref on purpose, and gives an Array.
            return ArrayVal(node)
        elif qn in api.PALLAS_ARRAY_FUNCTIONS:  # `pltpu.roll(x, 1, 0)`
            return ArrayVal(node)
        return None

    def _call_builtin(self, node: cst.Call, name: str, args: list) -> Optional[Value]:
        """A call of a Python builtin: refs given to one that needs an Array (REF007),
        ``tuple``/``list`` of a tuple, an iterator over a kernel's refs."""
        if name in api.BUILTINS_NEEDING_ARRAY:
            for arg, v in args:
                if isinstance(v, RefVal) and not arg.keyword:
                    self._ref_use("builtin", arg.value, v, node, name)
        elif name == "format" and len(args) == 2 and \
                isinstance(args[0][1], RefVal) and not args[0][1].tree:
            # `format(loss_ref, ".4f")`: a Ref has no format spec (TypeError).
            self._ref_use("format", args[0][0].value, args[0][1], node, " by format()")
        if name in ("tuple", "list") and len(args) == 1:
            v = args[0][1]
            if isinstance(v, SeqVal):
                return SeqVal(v.items, name)
        if name in ("iter", "next") and args and not args[0][0].keyword and \
                not args[0][0].star and isinstance(args[0][1], RefSeqVal):
            # `it = iter(refs); x_ref = next(it)`: an iterator over a kernel's refs
            # gives refs (which one is not counted).
            seq = args[0][1]
            return RefSeqVal(seq.base, seq.offset, False) if name == "iter" else \
                seq.item(None)
        return None

    def _call_nnx(self, node: cst.Call, a: "api.Api", args: list) -> Optional[Value]:
        """Flax NNX: which objects hold refs (docs/flax-nnx.md)."""
        R = api.Result
        kw = {arg.keyword.value: (arg, v) for arg, v in args if arg.keyword}
        pos = [(arg, v) for arg, v in args if not arg.keyword and not arg.star]
        first = pos[0][1] if pos else None

        def tree(kind="state", cls=None, explicit=False) -> RefVal:
            return RefVal(key=("new", id(node)), origin="created", node=node, scope=self._func,
                          tree=kind, cls=cls, kwargs={"ref": True} if explicit else {})

        def converted() -> RefVal:  # a copy of ``first`` whose Variables are refs
            cls = first.cls if isinstance(first, (RefVal, InstanceVal)) else None
            return tree("module" if cls is not None else "state", cls)

        if a.result is R.PASS_THROUGH:  # nnx.data(x)
            return first if len(pos) == 1 and not kw else None
        if a.result is R.REF_SWITCH:
            # use_refs(True) / var_defaults(ref=True) (off unless a literal True); nothing
            # without a ref argument (`var_defaults(hijax=True)`, `var_defaults()`).
            given = kw["ref"][0].value if "ref" in kw else pos[0][0].value if pos and \
                a.name == "use_refs" else None
            if given is None:
                return None
            return SpecialVal("ref_switch", _bool_constant(given))
        if a.result is R.REF_TREE:
            return converted()
        if a.result is R.NNX_WITH_VARS:
            on = _bool_constant(kw["ref"][0].value) if "ref" in kw else None
            return converted() if on else None
        if a.result is R.NNX_SPLIT:
            if not (isinstance(first, RefVal) and first.tree) or \
                    any(arg.star for arg, _ in args):
                return None
            states = tuple(RefVal(key=("split", id(node), i), origin="created", node=node,
                                  scope=self._func, tree="state")
                           for i in range(max(1, len(pos) - 1)))
            return SeqVal((None,) + states)
        if a.result is R.NNX_STATE:
            if not (isinstance(first, RefVal) and first.tree):
                return None
            return tree("state", first.cls if first.tree == "module" else None)
        if a.result is R.NNX_MERGE:
            if any(isinstance(v, RefVal) and v.tree for _, v in pos[1:]):
                return tree("module")
            return None
        if a.result is R.NNX_OBJECT:
            on, explicit = self._refs_mode, False
            for k in a.ref_keywords:
                if k in kw:
                    on = explicit = _bool_constant(kw[k][0].value)
                    if on is None:
                        return None
                    if not on:
                        return NnxVal("variable", node, arrays=True)
            kind = "variable" if a.ref_keywords else "module"
            if not on:
                return NnxVal(kind, node)
            out = tree(kind, explicit=explicit)
            if a.call_writes:
                # A Flax layer that writes its Variables when called (objects.py).
                out.kwargs = {"api": a.name, **{k: kw[k][0].value for k in a.write_unless
                                                 if k in kw}}
            return out
        return None

    def _note_refs_mode(self, info: FunctionInfo, on: bool) -> None:
        """A call of ``info`` made with NNX refs ``on`` (or off)."""
        modes = self._new_refs_mode
        before = modes.get(id(info))
        if id(info) in self._forced_refs_mode:
            now = True
        elif info.roles:
            # A traced function (jax.jit ...) is traced anew by a call with refs on: what that
            # trace does (REF001 ...) fails then, whatever its other calls do.
            now = bool(before) or on
        else:
            now = on and before is not False  # a plain helper: only if every call has refs on
        modes[id(info)] = now
        if now and before is None:
            self._interprocedural = True

    def _array_function_args(self, node: cst.Call, qn: str, args: list) -> None:
        """Refs given to an array function: each is a use as an Array (REF007)."""
        for arg, v in args:
            if isinstance(v, RefVal):
                self._ref_use("call_arg", arg.value, v, node, qn)
            elif isinstance(arg.value, (cst.List, cst.Tuple)):
                # jnp.stack([a_ref, b]): refs listed directly in a sequence argument.
                for el in arg.value.elements:
                    ev = self._values.get(id(el.value))
                    if isinstance(ev, RefVal) and not isinstance(el, cst.StarredElement):
                        self._ref_use("call_arg", el.value, ev, node, qn)

    def _call_partial(self, node: cst.Call, args: list) -> Optional[Value]:
        target = _first_positional(args)
        if isinstance(target, FuncVal):
            target = self._forwarded_api(target) or target
        kwargs = {arg.keyword.value: arg.value for arg, _ in args if arg.keyword}
        extra = tuple(v for arg, v in args[1:] if not arg.keyword and not arg.star)
        if isinstance(target, QN):
            t = api.lookup(target.qualname)
            if t is not None and (t.family is api.Family.TRANSFORM or t.factory or
                                  t.family is api.Family.KERNEL):
                return TransformVal(t.name, node, kwargs,
                                    tuple(arg.value for arg, _ in args[1:] if not arg.keyword))
            return None
        if isinstance(target, TransformVal):
            merged = dict(target.kwargs)
            merged.update(kwargs)
            return TransformVal(target.kind, node, merged, target.args)
        if isinstance(target, FuncVal):
            opened: tuple = ()
            stars = [arg.star for arg, _ in args[1:] if arg.star]
            if stars:
                if "*" in stars:
                    return None  # `partial(f, *xs)`: which parameters get what is unknown
                opened = _mapping_binds(target, len(extra), kwargs)
                if opened is None:
                    return None
            kw_values = tuple((arg.keyword.value, v) for arg, v in args[1:] if arg.keyword)
            return FuncVal(target.info, target.transforms, target.bound_args + extra,
                           target.bound_kwargs + tuple(kwargs) + opened, target.self_value,
                           target.bound_kw_values + kw_values)
        if isinstance(target, OneOf):
            alts = [self._call_partial(node, [(args[0][0], f)] + list(args[1:]))
                    for f in target.alts]
            if all(isinstance(f, FuncVal) for f in alts):
                return OneOf(tuple(alts))
        return None

    def _call_special(self, node, fv: SpecialVal, args, state) -> Optional[Value]:
        if fv.kind == "traced_constructor":
            self._sink.add(TracedConstructor(node, self._func, fv.api_name,
                                             fv.target, fv.node))
            return None
        if fv.kind == "vjp_fn":  # the VJP function applied to cotangents
            self._sink.add(VjpApplication(node, fv.target, self._func))
            return None
        if fv.kind == "vjp_with_refs":  # vjp_fn.with_refs(*entries): a VJP function again
            plain = not any(arg.star or arg.keyword for arg, _ in args)
            self._sink.add(WithRefs(node, fv.target, self._func,
                                    list(args) if plain else None))
            entries = len(args) if plain else None
            return SpecialVal("vjp_bound", (fv.target, node, entries), node, fv.api_name)
        if fv.kind == "vjp_bound":
            vjp, with_refs, entries = fv.target
            self._sink.add(VjpApplication(node, vjp, self._func, with_refs,
                                          entries))
            return None
        if fv.kind == "defvjp":
            primal: FuncVal = fv.target
            fns = [v for a, v in args if not a.keyword][:2]
            for a, v in args:
                if a.keyword and a.keyword.value in ("fwd", "bwd"):
                    fns.append(v)
            names = ("fwd", "bwd")
            rules = {}
            for role_name, v in zip(names, fns):
                if isinstance(v, FuncVal):
                    rules[role_name] = v.info
                    v.info.custom_vjp_primal = primal.info
                    self._add_role(v.info, api.Role(f"custom_vjp_{role_name}"), node)
            primal.info.custom_vjp = rules
            return None
        if fv.kind == "defjvp":
            rule = _first_positional(args)
            if isinstance(rule, FuncVal):
                self._add_role(rule.info, api.Role.CUSTOM_JVP_RULE, node)
            return None
        if fv.kind == "layer_method":  # opt.update(model, grads)
            self._layer_writes(node, fv.target, fv.api_name, args)
            return None
        if fv.kind == "obj_replace":  # nt._replace(mu=x), state.replace(mu=x)
            return self._obj_replace(node, fv.target, args)
        if fv.kind == "dict_view":  # d.values(), d.items()
            return self._call_dict_view(fv)
        if fv.kind == "ref_view":  # x_ref.reshape(...), .bitcast(...), .transpose(...)
            attr = node.func.attr.value if isinstance(node.func, cst.Attribute) else "view"
            return as_view(fv.target, f".{attr}(...)")
        if fv.kind == "launcher":
            # Calling a kernel launcher (pallas_call(k), emit_pipeline(body), pl.kernel(body),
            # run_state(f)) with operands: the kernel runs on refs.
            kernel = fv.target
            kernels = kernel.alts if isinstance(kernel, OneOf) else (kernel,)
            targets = [k.info for k in kernels if isinstance(k, FuncVal)]
            if targets:
                self._sink.add(TracedCall(
                    kind=fv.api_name, node=node, func=self._func, targets=targets,
                    transforms=(), operands=[(v, a.value) for a, v in args], bindings={}))
                n = None if any(a.star for a, _ in args) else \
                    sum(1 for a, _ in args if a.keyword is None)
                self._sink.add(KernelLaunch(targets, fv.api_name, node, n,
                                            fv.kwargs or {}, self._func))
            return None
        return None

    def _call_jvp_like(self, node, a: "api.Api", target: FuncVal, args, state):
        """jvp(f, primals, tangents) / vjp(f, *primals) / linearize(f, *primals): the
        function is traced with the primals now."""
        rest = args[1:]
        wrapped = self._wrap(target, Transform(a.name, node, {}), node)
        if a.primals == "tuple":
            primals = rest[0][1] if rest else None
            values = list(primals.items) if isinstance(primals, SeqVal) else None
            exprs = None
            if values is not None and isinstance(rest[0][0].value, (cst.Tuple, cst.List)):
                exprs = [e.value for e in rest[0][0].value.elements]
            if values is not None:
                self._bind_call(node, wrapped, [(None, v, exprs[i] if exprs else None)
                                                for i, v in enumerate(values)], {}, "traced")
            return None
        positional = [(arg, v, arg.value) for arg, v in rest if not arg.keyword and not arg.star]
        self._bind_call(node, wrapped, positional, {}, "traced")
        if a.result is api.Result.VJP and not any(arg.star for arg, _ in rest):
            vjp = VjpCall(node, self._func, target.info, [(v, e) for _, v, e in positional])
            self._sink.add(vjp)
            fn = SpecialVal("vjp_fn", vjp, node, a.name)
            aux = next((arg.value for arg, _ in rest
                        if arg.keyword is not None and arg.keyword.value == "has_aux"), None)
            if aux is None or (isinstance(aux, cst.Name) and aux.value == "False"):
                return SeqVal((None, fn))
            if isinstance(aux, cst.Name) and aux.value == "True":
                return SeqVal((None, fn, None))  # (outputs, vjp function, aux)
            return None
        return None

    def _call_func(self, node: cst.Call, fv: FuncVal, args: list, state: _State):
        starred = [i for i, (a, _) in enumerate(args) if a.star == "*"]
        positional = [(a, v, a.value) for a, v in args if not a.star and a.keyword is None]
        rest_refs = None  # what a `*args` parameter receives from starred tuples of refs
        if starred:
            last = max((i for i, (a, _) in enumerate(args) if not a.keyword and
                        a.star != "**"), default=-1)
            seq = args[starred[0]][1]
            if len(starred) == 1 and starred[0] == last and isinstance(seq, SeqVal):
                # `f(*args)` with `args` a tuple of known length (`def call(f, *args)`).
                a_star = args[starred[0]][0]
                positional += [(a_star, v, a_star.value) for v in seq.items]
            elif len(starred) == 1 and starred[0] == last and isinstance(seq, RefSeqVal) and \
                    seq.exact:
                # `f(a, *refs)`: the tuple of refs fills the parameters left (Pallas kernels
                # handing their `*refs` to a helper).
                a_star = args[starred[0]][0]
                n = sum(1 for p in fv.info.params if p.kind in ("pos", "posonly"))
                n -= len(positional) + len(fv.bound_args) + (fv.self_value is not None)
                positional += [(a_star, seq.item(i), None) for i in range(max(n, 0))]
                rest_refs = seq.rest(max(n, 0))
            elif len(starred) > 1 and isinstance(seq, RefSeqVal) and \
                    all(i in starred for i in range(starred[0], last + 1)) and \
                    all(isinstance(args[i][1], RefSeqVal) or _all_refs(args[i][1])
                        for i in starred):
                # `fn(*args, *scratch_refs)` (a pipeline body handing its block refs and the
                # kernel's scratch refs to the user's kernel): every parameter left gets a
                # ref, which one is unknown.
                a_star = args[starred[0]][0]
                n = sum(1 for p in fv.info.params if p.kind in ("pos", "posonly"))
                n -= len(positional) + len(fv.bound_args) + (fv.self_value is not None)
                positional += [(a_star, seq.item(None), None) for _ in range(max(n, 0))]
                rest_refs = seq.rest(None)
            else:
                self._record_unbindable(node, fv, args)
                return self._result_of(fv)
        keywords = {a.keyword.value: (a, v, a.value) for a, v in args if a.keyword is not None}
        self._bind_call(node, fv, positional, keywords, "traced" if fv.transforms else "plain")
        vararg = next((p for p in fv.info.params if p.kind == "vararg"), None)
        if rest_refs is not None and vararg is not None:
            # `fn(*refs)` into `def fn(*args)`: its `*args` is a tuple of refs.
            self._seed(fv.info, vararg.name, rest_refs)
        if fv.self_value is not None:
            return self._method_result(fv, self._result_of(fv))
        return self._result_of(fv)

    def _record_unbindable(self, node, fv: FuncVal, args) -> None:
        if not fv.transforms:
            fv.info.callers.append((self._func, node))
            self._sink.add(PlainCall(node, self._func, fv.info, {}))
        else:
            self._sink.add(TracedCall(
                kind=fv.transforms[-1].kind, node=node, func=self._func, targets=[fv.info],
                transforms=fv.transforms, operands=[(v, a.value) for a, v in args],
                bindings={}))

    def _result_of(self, fv: FuncVal) -> Optional[Value]:
        """What calling ``fv`` returns: its function's return value, unless a transform makes
        something else of it (gradients, a batch)."""
        for t in fv.transforms:
            if api.API[t.kind].result is not api.Result.FUNCTION or \
                    t.kind in api.GRAD_TRANSFORMS or t.kind in api.MAP_TRANSFORMS:
                return None
        return fv.info.return_value

    def _bind_call(self, node, fv: FuncVal, positional, keywords, mode: str) -> dict:
        """Bind call arguments to ``fv``'s parameters; seed the parameters that get refs.

        ``mode``: 'traced' records a TracedCall, 'plain' a PlainCall, 'none' nothing."""
        info = fv.info
        params = list(info.params)
        receiver = None
        if fv.self_value is not None and params and params[0].kind in ("pos", "posonly"):
            receiver, params = params[0], params[1:]
        # functools.partial: bound positionals consume the first parameters.
        bound_pos = list(fv.bound_args)
        pos_params = [p for p in params if p.kind in ("pos", "posonly")]
        vararg = next((p for p in params if p.kind == "vararg"), None)
        bindings: dict[str, Binding] = {}
        ordered = [(None, v, None) for v in bound_pos] + list(positional)
        for i, (a, v, e) in enumerate(ordered):
            if i < len(pos_params):
                bindings[pos_params[i].name] = Binding(pos_params[i].name, v, e,
                                                       partial=i < len(bound_pos))
            elif vararg is not None:
                bindings.setdefault(f"*{vararg.name}", Binding(None, None, None))
                bindings[f"*{vararg.name}[{i - len(pos_params)}]"] = Binding(None, v, e)
        for name, v in fv.bound_kw_values:
            if name not in keywords and info.param(name) is not None:
                bindings[name] = Binding(name, v, None, partial=True)
        for name, (a, v, e) in keywords.items():
            if info.param(name) is not None:
                bindings[name] = Binding(name, v, e)
            else:
                bindings[f"**{name}"] = Binding(None, v, e)
        for p in params:
            if p.name not in bindings and p.name in info.defaults and \
                    p.name not in fv.bound_kwargs:
                bindings[p.name] = Binding(p.name, info.defaults[p.name], None)
        if receiver is not None and is_interesting(fv.self_value) and \
                "classmethod" not in info.decorator_kinds:
            # A method called on an object holding refs: `self` is bound to it (objects.py).
            bindings[receiver.name] = Binding(receiver.name, fv.self_value, None)
        # Seeds for the callee: parameters that receive refs.
        for name, b in bindings.items():
            if b.param is not None and is_interesting(b.value):
                self._seed(info, name, b.value)
        if vararg is not None and len(ordered) > len(pos_params):
            # `def call(f, *args)`: the extra positional arguments, a tuple of known length.
            extra = SeqVal(tuple(v for _, v, _ in ordered[len(pos_params):]))
            if is_interesting(extra):
                self._seed(info, vararg.name, extra)
        self._note_refs_mode(info, self._refs_mode)
        info.callers.append((self._func, node))
        if info.parent is self._func and self._cur_state is not None:
            # Only the names the function spells: a copy of the whole environment per call
            # made a notebook (a def and its call per cell) quadratic in its cells.
            names = info.read_names
            if names is None:
                names = info.read_names = frozenset(
                    n.value for n in walk_nodes([info.node]) if type(n) is cst.Name)
            env = self._cur_state.env
            info.call_envs.append({k: env[k] for k in names if k in env})
        operands = [(b.value, b.expr) for b in bindings.values() if b.expr is not None]
        if mode == "traced":
            self._sink.add(TracedCall(
                kind=fv.transforms[-1].kind, node=node, func=self._func, targets=[info],
                transforms=fv.transforms, operands=operands, bindings={id(info): bindings}))
        elif mode == "plain":
            self._sink.add(PlainCall(node, self._func, info, bindings))
        return bindings

    def _seed(self, info: FunctionInfo, name: str, value: Value) -> None:
        self._interprocedural = True
        d = self._new_seeds.setdefault(id(info), {})
        d[name] = join(d[name], value) if name in d else value

    def _note_return(self, info: FunctionInfo, value: Optional[Value]) -> None:
        if is_interesting(value):
            self._interprocedural = True
            cur = self._new_returns.get(id(info), "missing")
            self._new_returns[id(info)] = value if cur == "missing" else join(cur, value)
        elif id(info) in self._new_returns:
            self._new_returns[id(info)] = None

    def _call_control_flow(self, node, a: "api.Api", args, state) -> Optional[Value]:
        """A control-flow call (scan, cond, while_loop ...): each function argument is called
        now, with the operands its Callee entry says it receives."""
        pos = [(arg, v) for arg, v in args if not arg.keyword and not arg.star]
        kw = {arg.keyword.value: (arg, v) for arg, v in args if arg.keyword}

        def given(s: "api.Src") -> list:
            """[(value, expr)] of the arguments ``s`` names (none when it is absent)."""
            if s.rest:
                return [(v, arg.value) for arg, v in pos[s.pos:]]
            got = pos[s.pos] if s.pos is not None and s.pos < len(pos) else kw.get(s.kw)
            return [(got[1], got[0].value)] if got is not None else []

        for s in a.array_args:  # a predicate, an index, loop bounds: Arrays
            for v, e in given(s):
                if isinstance(v, RefVal):
                    self._ref_use("call_arg", e, v, node, a.call_word or a.name)
        calls: list = []  # (FuncVal, [(value, expr)], role)
        for c in a.callees:
            got = pos[c.pos] if c.pos is not None and c.pos < len(pos) else kw.get(c.kw)
            if got is None:
                continue
            if c.sequence:
                fns = got[1].items if isinstance(got[1], SeqVal) else ()
            else:
                fns = (got[1],)
            values: list = []
            for s in c.receives:
                if s is None:
                    values.append((None, None))
                    continue
                found = given(s)
                if s.sliced:
                    found = [(_slice_of(v), e) for v, e in found]
                values.extend(found if (found or s.rest) else [(None, None)])
            for f in fns:
                for g in (f.alts if isinstance(f, OneOf) else (f,)):
                    if isinstance(g, FuncVal):
                        calls.append((g, values, c.role))
        operands = [item for s in a.operands for item in given(s)]
        targets = []
        all_bindings = {}
        for fv, values, role in calls:
            self._add_role(fv.info, role, node)
            positional = [(None, v, e) for v, e in values]
            b = self._bind_call(node, FuncVal(fv.info, (), fv.bound_args, fv.bound_kwargs,
                                              None, fv.bound_kw_values),
                                positional, {}, "none")
            targets.append(fv.info)
            all_bindings[id(fv.info)] = b
        if calls or operands:
            self._sink.add(TracedCall(kind=a.name, node=node, func=self._func,
                                      targets=targets, transforms=(),
                                      operands=operands, bindings=all_bindings))
        if a.result is api.Result.PAIR:
            return SeqVal((None, None))
        return None

    # -- events ------------------------------------------------------------------------------

    def _ref_use(self, kind, expr, ref: RefVal, context, detail: str) -> None:
        self._sink.add(RefUse(kind, expr, ref, context, detail, self._func))

    def _record_access(self, kind, node, ref_expr, ref: RefVal, value_expr, state) -> None:
        self._sink.add(RefAccess(kind, node, ref_expr, ref, value_expr, self._func))



def _all_refs(v) -> bool:
    """A tuple whose items are all refs."""
    return isinstance(v, SeqVal) and bool(v.items) and all(isinstance(x, RefVal) for x in v.items)
