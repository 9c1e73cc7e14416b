"""The project (``ProjectMixin``): what one module's analysis reads from the other modules'
summaries (``reflint.project``; docs/project.md).

Without a project (``ModuleAnalysis(project=None)``, the default) none of this runs and a
module is analysed on its own. With one:

- a relative import names its absolute module (``from . import lib`` binds ``pkg.lib``);
- a top-level function that another module launches as a Pallas kernel (or traces) gets the
  role the launching API gives (its parameters are refs), with where the fact comes from
  (``_provenance``, read by ``description``);
- a call of a project function that forwards a parameter to a Pallas entry point or a
  transform (a project's own ``pallas_call`` wrapper) makes the argument a kernel (or traced)
  here;
- a call of a project function defined under a transform (``@jax.jit``) is a traced call here
  (REF002 and the rules that read ``TracedCall`` operands);
- a class of another module (or of an installed library) whose bases reach a Flax NNX Module
  or Variable, or a Pallas BlockSpec, is one here: a base of this module's classes, or built
  by a call (``_project_class_kind``).
- refs given to this module's top-level functions by calls in other modules
  (``ProjectView.ref_args_of``) seed those parameters, as a call here would (REF001 when a
  jitted function returns one, REF007 in arithmetic ...);
- values (``_project_values_call``, ``project_name_value``): a call of another module's
  function that returns a new ref gives a ref here (REF001 when a jitted function returns it,
  REF007 in arithmetic ...); a call of one that writes its ref parameter writes the ref given
  to it, at the call (REF005 under ``jax.vmap`` ...); a module-level ref another module
  exports (``from lib import state``, ``lib.state``) is a ref created outside every function
  here (closed over by a jitted function: REF001, REF005 ...).

Anything the project does not resolve stays unknown.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

from .. import nodes as cst

from .. import api
from ..values import FuncVal, OneOf, Transform, Value
from ..values import QN, RefVal
from ..summary import MAPPING_KEYWORDS
from .calls import _mapping_binds
from .facts import Binding, FunctionInfo, KernelEntry, RefAccess, TracedCall


class ProjectMixin:
    project = None  # a reflint.project.ProjectView, or None

    def _project_module(self, stmt: cst.ImportFrom) -> Optional[str]:
        """The absolute module of a relative ``from ... import``."""
        from .syntax import dotted_name

        name = dotted_name(stmt.module) if stmt.module is not None else None
        if stmt.module is not None and name is None:
            return None
        return self.project.absolute(len(stmt.relative), name)

    def _project_roles(self, info: FunctionInfo, node) -> None:
        """``info``, a top-level function, as other modules launch or trace it, and with the
        refs they give its parameters."""
        try:
            launches = self.project.launches_of(info.name)
            ref_args = self.project.ref_args_of(info.name)
        except Exception:  # noqa: BLE001 - a project fact must never cost the file
            return
        for r in ref_args:
            p = info.param(r.param)
            if p is None:
                continue
            # As a call in this module passing a ref would: the parameter is a ref there
            # (its value seeds the parameter, ``_param_value``), where the call says.
            self._seed(info, r.param, RefVal(key=("project-arg", info.name, r.param),
                                             origin="created", node=p.node,
                                             scope=self.module_info, name=r.arg))
            self._provenance[id(p.node)] = r.describe(self.project.project.root)
        if not launches:
            return
        kernels: dict = {}
        for launch in launches:
            a = api.API.get(launch.api)
            if a is None:
                continue
            if a.family is api.Family.KERNEL and a.callees and a.callees[0].refs:
                bound, kws = kernels.get(a.name, (0, ()))
                kernels[a.name] = (max(bound, launch.bound), tuple(sorted(set(kws) |
                                                                       set(launch.bound_kws))))
            elif a.family is api.Family.TRANSFORM and a.role is not None and \
                    not launch.bound and not launch.bound_kws:
                # (`jax.grad(partial(lib.f, 3.0))`: which parameters the transform sees is
                # not modelled across modules: no role.)
                self._add_role(info, a.role, node)
        for name, (bound, kws) in kernels.items():
            callee = api.API[name].callees[0]
            fv = FuncVal(info, (), (None,) * bound, tuple(k for k in kws
                                                          if k != MAPPING_KEYWORDS))
            if MAPPING_KEYWORDS in kws:
                # `partial(lib.kernel, **config)` in another module: as in this one
                # (calls._call_partial), the refs are the positional parameters spelled so.
                opened = _mapping_binds(fv, 0, {})
                if opened is None:
                    continue
                fv = FuncVal(info, (), fv.bound_args, fv.bound_kwargs + opened)
            self._mark_kernel(fv, node, callee)
            self._sink.add(KernelEntry(info, name, callee, node))
        self._provenance[id(info)] = self.project.describe(info.name)

    def _call_qn(self, node: cst.Call, qn: str, args: list, state):
        """A call of a qualified name: a project function the registry does not know is
        another module's (a wrapper, a jitted function); anything else, CallsMixin's."""
        if self.project is not None and qn not in self._project_inert and \
                api.lookup(qn) is None:
            kind = self._project_class_kind(qn)
            if kind == "block_spec":
                # A BlockSpec subclass of another module: its functions are index maps.
                self._block_spec_subclass(node, args)
                return None
            if kind:
                # A Flax NNX Module / Variable class of another module: built like flax's.
                return self._call_nnx(node, api.API["nnx_variable" if kind == "variable"
                                                    else "nnx_module"], args)
            handled, value = self._project_call(node, qn, args, state)
            if handled:
                return value
            if self._project_says_nothing(qn):
                self._project_inert.add(qn)  # asked once: most calls name no project fact
        return super()._call_qn(node, qn, args, state)

    def _project_says_nothing(self, qn: str) -> bool:
        """The project knows nothing that makes a call of ``qn`` other than CallsMixin's:
        no class kind, no function fact, no value but a module-level ref (which a call
        does not read)."""
        try:
            if self.project.function(qn) is not None:
                return False
            v = self.project.values(qn)
        except Exception:  # noqa: BLE001
            return False
        return v is None or v.ref_global

    def _project_class_kind(self, qn: str) -> str:
        """"module" / "variable" when ``qn`` names another module's class that is a Flax NNX
        Module / Variable through its bases, "block_spec" for a Pallas BlockSpec
        (``ProjectView.class_kind``), "" otherwise."""
        if self.project is None:
            return ""
        try:
            return self.project.class_kind(qn)
        except Exception:  # noqa: BLE001 - a project fact must never cost the file
            return ""

    def _project_call(self, node: cst.Call, qn: str, args: list, state) -> tuple:
        """(handled, value) for a call of the project function ``qn``."""
        try:
            ext = self.project.function(qn)
        except Exception:  # noqa: BLE001
            return False, None
        if ext is None:
            return self._project_values_call(node, qn, args, state)
        from ..project import Wrapper

        if isinstance(ext, Wrapper):
            self._project_wrapper_call(node, ext, args, state)
            return True, None
        self._project_traced_call(node, ext, args)
        return True, None

    def _project_wrapper_call(self, node, w, args: list, state) -> None:
        value: Optional[Value] = None
        positional = 0
        for arg, v in args:
            if arg.star:
                if arg.star == "*" and w.index is not None and positional <= w.index:
                    return  # `wrapper(*xs)`: which argument reaches the kernel is unknown
                continue
            if arg.keyword is None:
                if positional == w.index:
                    value = v
                positional += 1
            elif arg.keyword.value == w.param:
                value = v
        a = api.API.get(w.api)
        if a is None:
            return
        funcs = value.alts if isinstance(value, OneOf) else (value,)
        text = self.text_of(node.func)
        for fv in funcs:
            if not isinstance(fv, FuncVal) or fv.transforms or fv.self_value is not None:
                continue
            fv = FuncVal(fv.info, (), fv.bound_args + (None,) * w.bound,
                         tuple(fv.bound_kwargs) + tuple(w.bound_kws), None, fv.bound_kw_values)
            self._apply_api(a, fv, node, {}, (), state)
            verb = "launched by" if a.family is api.Family.KERNEL else "traced by"
            from ..project import _rel

            self._provenance.setdefault(
                id(fv.info), f"{fv.info.name} is {verb} {text}, which passes it to {w.text} "
                             f"({_rel(w.path, self.project.project.root)}:{w.line})")

    def _project_traced_call(self, node, f, args: list) -> None:
        """A call of a function another module defines under a transform (``@jax.jit``)."""
        if any(static for _, static in f.transforms) or any(arg.star for arg, _ in args):
            return  # static arguments are not traced; a starred one reaches unknown params
        transforms = tuple(Transform(kind, node, {}) for kind, _ in f.transforms)
        pos = [n for n, k in f.params if k in ("pos", "posonly")]
        names = {n for n, k in f.params if k not in ("vararg", "kwarg")}
        bindings = {}
        operands = []
        i = 0
        for arg, v in args:
            operands.append((v, arg.value))
            if arg.keyword is None:
                if i < len(pos):
                    bindings[pos[i]] = Binding(pos[i], v, arg.value)
                i += 1
            elif arg.keyword.value in names:
                bindings[arg.keyword.value] = Binding(arg.keyword.value, v, arg.value)
        self._sink.add(TracedCall(kind=transforms[-1].kind, node=node, func=self._func,
                                  targets=[], transforms=transforms, operands=operands,
                                  bindings={0: bindings}))

    def _project_values_call(self, node: cst.Call, qn: str, args: list, state) -> tuple:
        """(handled, value) for a call of another module's function that returns a new ref or
        writes the refs given to it (``reflint.project.Values``)."""
        try:
            v = self.project.values(qn)
        except Exception:  # noqa: BLE001
            return False, None
        if v is None or v.ref_global:
            return False, None
        short = ".".join(v.qualname.rsplit(".", 2)[-2:])
        for param, index, kind, line in v.effects:
            got = _argument(args, param, index)
            if got is None or not isinstance(got[1], RefVal) or got[1].tree:
                continue
            expr, ref = got
            self._sink.add(RefAccess(kind, node, expr, ref, None, self._func))
        for gqn, kind, line, made in v.global_writes:
            # `record(x)` writes `log_ref`, a ref of its module: here, at the call.
            from ..project import Values

            ref = self._project_global(Values(gqn, v.path, made, ref_global=True), node)
            self._sink.add(RefAccess(kind, node, None, ref, None, self._func))
        if not v.returns_ref:
            return True, None
        self._provenance[id(node)] = f"created by {short} ({self.project.where(v)})"
        return True, RefVal(key=("new", id(node)), origin="created", node=node,
                            scope=self._func)

    def project_name_value(self, value, node):
        """A module-level ref of another module named by ``value`` (a qualified name from
        this module's imports), as a ref created outside every function here; else
        ``value``."""
        if type(value) is not QN or self.project is None:
            return value
        cache = self._project_names
        got = cache.get(value.qualname, False)
        if got is False:
            try:
                v = self.project.values(value.qualname)
            except Exception:  # noqa: BLE001
                v = None
            got = cache[value.qualname] = v if v is not None and v.ref_global else None
        if got is None:
            return value
        return self._project_global(got, node)

    def _project_global(self, v, node) -> RefVal:
        """Another module's module-level ref (``Values.ref_global``), seen at ``node``."""
        self._provenance[id(node)] = f"created in {self.project.where(v)}"
        return RefVal(key=("project", v.qualname), origin="created", node=node,
                      scope=self.module_info, name=v.qualname.rsplit(".", 1)[1])

    def provenance(self, info: Optional[FunctionInfo]) -> str:
        """Where the fact that makes ``info`` a kernel (or traced) comes from, when another
        module says so ("" otherwise)."""
        if info is None:
            return ""
        return self._provenance.get(id(info), "")


def _argument(args: list, param: str, index: Optional[int]):
    """(expression, value) of the argument a call binds to ``param`` (position ``index``);
    None when a starred argument makes it unknown or none binds it."""
    positional = 0
    for arg, v in args:
        if arg.star:
            if arg.star == "*":
                return None
            continue
        if arg.keyword is None:
            if positional == index:
                return arg.value, v
            positional += 1
        elif arg.keyword.value == param:
            return arg.value, v
    return None
