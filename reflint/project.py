"""The project: the summaries of every module of a checked tree, and what each module's
analysis reads from them (docs/project.md).

``Project.build(files)`` summarizes the files (``reflint.summary``), resolves names between
modules like a type checker (package roots, relative imports, ``__init__`` re-exports), and
solves to a fixpoint (bounded rounds, so import cycles end):

- which functions *forward* a parameter to a Pallas entry point or a JAX transform, directly
  or through other such functions (a project's own ``pallas_call`` wrapper);
- which functions are *launched* by another module as Pallas kernels or traced by it
  (``pl.pallas_call(kernels.scale, ...)`` in ops.py makes ``kernels.scale`` a kernel).

``Project.view(path)`` is what one module's analysis reads (``ModuleAnalysis(project=...)``):
its module name, the facts about its own functions, the project functions its imports name,
whether it must be analysed even when the pre-filter would skip it, and a digest of all that
(part of its cache key: a changed module re-checks the modules that read it).

The active project of a run is a process-wide setting (``activate``), read by the engine;
without one every file is analysed on its own, as before.
"""

from __future__ import annotations

import gc
import os

from . import api
from ._record import record
from .summary import ModuleSummary, Target, module_name, summarize, summarize_calls

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

MAX_ROUNDS = 12  # fixpoint rounds over the wrappers (chains longer than this stay unknown)
MAX_ALIAS_DEPTH = 16
# Library modules of the running environment read for their wrappers (a library's own
# `pallas_call` drop-in), at most this many per run; never the registry's own packages.
MAX_LIBRARY_MODULES = 64
# Installed modules read for the base classes of the project's classes (NNX modules).
MAX_CLASS_LIBRARY_MODULES = 32
REGISTRY_PACKAGES = ("jax", "jaxlib", "flax", "numpy", "functools", "builtins")


@record(frozen=True)
class Launch:
    """A function of the project given to an API by some module: the API (its canonical name,
    the Callee's role), how the launching call spells it, where, and what partial binds."""

    api: str
    role: str
    text: str
    path: str
    line: int
    bound: int = 0
    bound_kws: tuple = ()
    via: str = ""  # the project wrapper it went through ("" when the API is called directly)

    def describe(self, qualname: str, root: str = "") -> str:
        where = _rel(self.path, root)
        how = f"{self.text}" if not self.via else f"{self.via} (which passes it to {self.text})"
        verb = "launched by" if api.API[self.api].family is api.Family.KERNEL else "traced by"
        return f"{qualname} is {verb} {how} in {where}:{self.line}"


@record(frozen=True)
class Wrapper:
    """A project function that hands its parameter ``param`` (position ``index``) to ``api``
    (through ``via`` wrappers), binding ``bound`` positional and ``bound_kws`` keyword
    arguments of it on the way."""

    qualname: str
    param: str
    index: Optional[int]
    api: str
    text: str
    path: str
    line: int
    bound: int = 0
    bound_kws: tuple = ()


@record(frozen=True)
class Values:
    """A project name as a value (``Project.values_of``): a module-level ref (``ref_global``,
    created at ``path:line``), or a function that returns a new ref (``returns_ref``, its
    return at ``path:line``) or writes refs given to it (``effects``:
    ``(param, index, kind, line)``, as ``ModuleSummary.param_effects``)."""

    qualname: str
    path: str
    line: int
    ref_global: bool = False
    returns_ref: bool = False
    effects: tuple = ()
    # ((qualified name of a module-level ref of its module, kind, line, the ref's line), ...)
    global_writes: tuple = ()


@record(frozen=True)
class RefArg:
    """A ref another module gives a project function's parameter ``param``: the call
    (spelled ``text``) at ``path:line`` passes ``arg``, a ref there."""

    param: str
    text: str
    arg: str
    path: str
    line: int

    def describe(self, root: str = "") -> str:
        return f"{self.text} is called with the ref {self.arg} in {_rel(self.path, root)}:" \
               f"{self.line}"


def _rel(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(path, root or os.getcwd())
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _role(api_name: str) -> Optional[str]:
    a = api.API[api_name]
    if a.role is not None:
        return str(a.role)
    if a.callees and a.callees[0].role is not None:
        return str(a.callees[0].role)
    return None


class Project:
    def __init__(self, summaries: list, root: str = ""):
        self.root = root
        self.modules: dict = {}  # dotted name -> ModuleSummary
        self.by_path: dict = {}  # abspath -> ModuleSummary
        for s in summaries:
            if s is None:
                continue
            self.by_path[os.path.abspath(s.path)] = s
            if s.module and s.module not in self.modules:
                self.modules[s.module] = s
        self.summarized = len(self.by_path)  # summaries made by this run (not cached)
        self.wrappers: dict = {}  # qualname -> Wrapper
        self.launches: dict = {}  # qualname -> [Launch]
        self._solve()

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def build(cls, files: list, read=None, jobs: int = 1, root: str = "",
              cache=None, share_trees: bool = False, decide=None) -> "Project":
        """Summarize ``files`` (``read(path) -> text``; default: the file on disk). With
        ``cache`` (a ``reflint.cache.Cache``), a file whose bytes are unchanged gets its
        summary from the cache (``read`` must be the default). ``share_trees``: the caller
        checks the files next, in this process (see ``_summarize_task``). ``decide``: the
        caller checks them next here or in children it forks, and ``decide(text, path,
        tree)`` is the gate's verdict for a file it checks (``decide.wants(text, path)``: one
        the textual pre-filter keeps), reached on the tree the summary parses whole and
        remembered for the check (``reflint.gate.remember``): one parse per file, by
        whichever process summarizes it."""
        read = read or _read
        global _DECIDE
        _DECIDE = decide
        cached: dict = {}
        keys: dict = {}
        todo = files
        if cache is not None and read is _read and not cache.disabled:
            todo = []
            for f in files:
                got = _cached_summary(cache, f, keys)
                if got is _MISS:
                    todo.append(f)
                else:
                    cached[f] = got
        tasks = [(f, read) for f in todo]
        try:
            if jobs > 1 and len(todo) > 8 and read is _read:
                fresh = _parallel(todo, jobs)
            else:
                fresh = [_summarize_task(t, share_trees) for t in tasks]
        finally:
            _DECIDE = None
        for f, s in zip(todo, fresh):
            if f in keys:
                cache.put_summary(keys[f], s)
            cached[f] = s
        summaries = [cached[f] for f in files]
        project = cls(summaries, root)
        project.summarized = len(todo)

        def calls_of(s: ModuleSummary, names: frozenset):
            text = read(s.path)
            if text is None or not any(n in text for n in names):
                return None
            full = summarize_calls(text, s)
            full.complete = True
            return full

        project.complete(calls_of)
        project._read_libraries()
        return project

    def complete(self, calls_of) -> None:
        """Read the calls of the modules summarized from their imports and headers only
        (``ModuleSummary.complete`` false) that may matter, and solve again, to a fixpoint
        (``MAX_ROUNDS``): a module without a transform's or an entry point's name that spells
        a wrapper's name may wrap it in turn; so is one that spells the name of a function
        writing its module's own refs (``jax.vmap(lib.accumulate)`` gives ``accumulate`` the
        role that makes the write REF005 there). ``calls_of(summary, names)``: the completed
        summary of a module spelling one of ``names``, else None (``Project.build`` reads the
        file; the server answers from its memos)."""
        writers = {name for s in self.by_path.values() if not s.library
                   for name in s.global_effects}
        for _ in range(MAX_ROUNDS):
            names = frozenset({q.rsplit(".", 1)[1] for q in self.wrappers} | writers)
            writers = set()
            if not names:
                break
            more = []
            for s in list(self.by_path.values()):
                if s.complete:
                    continue
                full = calls_of(s, names)
                if full is not None:
                    more.append(full)
            if not more:
                break
            for s in more:
                self.by_path[os.path.abspath(s.path)] = s
                if s.module:
                    self.modules[s.module] = s
            self._solve()

    # -- library modules of the environment --------------------------------------------------

    def _read_libraries(self) -> None:
        """Summarize the installed modules (source on ``sys.path``) that the project calls with
        a function argument, so a library's wrapper of a Pallas entry point is seen; solve
        again. Bounded: ``MAX_LIBRARY_MODULES`` modules, ``MAX_ROUNDS`` rounds."""
        tried: set = set()
        read = 0
        for _ in range(MAX_ROUNDS):
            wanted = set()
            for s in list(self.by_path.values()):
                for name in s.calls:
                    if self.canonical(name) is None:
                        wanted.add(self._expand(name))
            added = False
            for qn in sorted(wanted):
                parts = qn.split(".")
                if parts[0] in REGISTRY_PACKAGES or parts[0] in _stdlib():
                    continue
                for i in range(len(parts) - 1, 0, -1):
                    mod = ".".join(parts[:i])
                    if mod in self.modules or mod in tried:
                        break
                    tried.add(mod)
                    path = find_library_source(mod)
                    if path is None:
                        continue
                    if read >= MAX_LIBRARY_MODULES:
                        return
                    read += 1
                    text = _read(path)
                    s = summarize(text, path, mod) if text is not None else None
                    if s is not None:
                        s.library = True
                        self.modules[mod] = s
                        self.by_path.setdefault(os.path.abspath(path), s)
                        added = True
                    break
            if not added:
                return
            self._solve()

    # -- names -------------------------------------------------------------------------------

    def resolve(self, qualname: str, _depth: int = 0, globals_too: bool = False):
        """(module summary, function name) that ``qualname`` names, following re-exports;
        None when it is not a function of the project (with ``globals_too``, also a
        module-level ref: ``ModuleSummary.ref_globals``)."""
        if _depth > MAX_ALIAS_DEPTH or not qualname:
            return None
        parts = qualname.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = self.modules.get(".".join(parts[:i]))
            if mod is None:
                continue
            rest = parts[i:]
            head = rest[0]
            if len(rest) == 1 and (head in mod.functions or
                                   globals_too and head in mod.ref_globals):
                return mod, head
            if head in mod.aliases:
                return self.resolve(".".join([mod.aliases[head]] + rest[1:]), _depth + 1,
                                    globals_too)
            if ".".join(parts[:i + 1]) in self.modules:
                continue  # a submodule: the longer prefix
            return None
        return None

    def _expand(self, qualname: str, libs: Optional[dict] = None) -> str:
        """``qualname`` with the re-exports of the known modules (and of ``libs``, library
        modules read so far) followed as far as they go (the name of the module still to
        read)."""
        for _ in range(MAX_ALIAS_DEPTH):
            parts = qualname.split(".")
            for i in range(len(parts) - 1, 0, -1):
                name = ".".join(parts[:i])
                mod = self.modules.get(name) or (libs.get(name) if libs else None)
                if mod is not None and parts[i] in mod.aliases:
                    qualname = ".".join([mod.aliases[parts[i]]] + parts[i + 1:])
                    break
            else:
                return qualname
        return qualname

    def canonical(self, qualname: str) -> Optional[str]:
        r = self.resolve(qualname)
        if r is None:
            return None
        mod, name = r
        return f"{mod.module}.{name}"

    def values_of(self, qualname: str) -> Optional["Values"]:
        """What the project function or module-level ref ``qualname`` is as a value: a
        function returning a new ref, a function writing its parameters, a
        module's ref; None when it is none of these (or not the project's). Memoized: every
        module importing ``lib`` asks it of each of lib's names."""
        key = ("v", qualname)
        if key not in self._facts:
            self._facts[key] = self._values_of(qualname)
        return self._facts[key]

    def function_fact(self, qualname: str) -> tuple:
        """(canonical name or None, fact): the fact is the ``Wrapper`` of a project function
        that forwards a parameter, or its ``FunctionSummary`` when it has transforms, else
        None. Memoized, like ``values_of``; a view drops its own module's functions."""
        key = ("f", qualname)
        got = self._facts.get(key)
        if got is None:
            qn = self.canonical(qualname)
            fact = None
            if qn is not None:
                fact = self.wrappers.get(qn)
                if fact is None:
                    mod, name = self.resolve(qn)
                    f = mod.functions.get(name)
                    fact = f if f is not None and f.transforms else None
            got = self._facts[key] = (qn, fact)
        return got

    def module_names(self, module: str) -> tuple:
        """What ``import module`` gives another module, computed once per module: for each
        name it reaches (its functions, its re-exports and its refs, sorted) that has one,
        ``(qualname, canonical name, function fact, value fact)``. Each reading view drops
        the facts about its own functions."""
        key = ("mn", module)
        got = self._facts.get(key)
        if got is None:
            mod = self.modules[module]
            names = []
            for name in sorted(set(mod.functions) | set(mod.aliases) | set(mod.ref_globals)):
                full = f"{module}.{name}"
                qn, fact = self.function_fact(full)
                val = self.values_of(full)
                if fact is not None or val is not None:
                    names.append((full, qn, fact, val))
            got = self._facts[key] = tuple(names)
        return got

    def module_classes(self, module: str) -> tuple:
        """The kinds (``class_kind``) of ``module``'s classes and re-exports,
        ``(qualname, kind)``, computed once per module (only a cache key reads them: a check needs them only for
        the classes its analysis meets)."""
        key = ("mc", module)
        got = self._facts.get(key)
        if got is None:
            mod = self.modules[module]
            classes = []
            for qn in sorted({f"{module}.{c}" for c in mod.classes} |
                             {f"{module}.{a}" for a in mod.aliases}):
                if api.lookup(qn) is None:
                    kind = self.class_kind(qn)
                    if kind:
                        classes.append((qn, kind))
            got = self._facts[key] = tuple(classes)
        return got

    def _values_of(self, qualname: str) -> Optional["Values"]:
        if api.lookup(qualname) is not None:
            return None  # the registry is the truth for JAX, Pallas and Flax (`jax.new_ref`)
        r = self.resolve(qualname, globals_too=True)
        if r is None:
            return None
        mod, name = r
        if mod.library:
            return None
        qn = f"{mod.module}.{name}"
        if api.lookup(qn) is not None:
            return None
        if name in mod.ref_globals and name not in mod.functions:
            return Values(qn, mod.path, mod.ref_globals[name], ref_global=True)
        factory = mod.ref_factories.get(name)
        effects = mod.param_effects.get(name, ())
        writes = tuple((f"{mod.module}.{g}", kind, line, mod.ref_globals[g])
                       for g, kind, line in mod.global_effects.get(name, ())
                       if g in mod.ref_globals)
        if factory is None and not effects and not writes:
            return None
        return Values(qn, mod.path, factory or 0, returns_ref=factory is not None,
                      effects=effects, global_writes=writes)

    def is_module(self, qualname: str) -> bool:
        return qualname in self.modules

    # -- classes: Flax NNX Modules and Variables of other modules ------------------------------

    def resolve_class(self, qualname: str, _depth: int = 0):
        """(module summary, class name) that ``qualname`` names, following re-exports, in
        the checked tree or an installed library module read for classes; None otherwise."""
        if _depth > MAX_ALIAS_DEPTH or not qualname:
            return None
        parts = qualname.split(".")
        libs = self.__dict__.setdefault("_class_libs", {})
        for i in range(len(parts) - 1, 0, -1):
            name = ".".join(parts[:i])
            mod = self.modules.get(name) or libs.get(name)
            if mod is None:
                continue
            rest = parts[i:]
            head = rest[0]
            if len(rest) == 1 and head in mod.classes:
                return (mod, head) if mod.classes[head] is not None else None
            if head in mod.aliases:
                return self.resolve_class(".".join([mod.aliases[head]] + rest[1:]),
                                          _depth + 1)
            if ".".join(parts[:i + 1]) in self.modules or ".".join(parts[:i + 1]) in libs:
                continue
            return None
        return None

    def _expand_class(self, qualname: str) -> str:
        """``qualname`` through the re-exports of the modules known so far (libraries read
        for classes included): the name of the module still to read."""
        return self._expand(qualname, self.__dict__.setdefault("_class_libs", {}))

    def nnx_class(self, qualname: str) -> str:
        """"module" when ``qualname`` names a class whose bases (through the project's
        modules and installed libraries, transitively) reach a Flax NNX Module or Pytree
        (``api.Result.NNX_OBJECT``), "variable" for a Variable, "" when not known to."""
        for name in self.api_bases(qualname):
            a = api.API[name]
            if a.result is api.Result.NNX_OBJECT:
                return "variable" if a.ref_keywords else "module"
        return ""

    def class_kind(self, qualname: str) -> str:
        """What an analysis asks of the class ``qualname`` of another module: its NNX kind
        (``nnx_class``), "block_spec" for a subclass of a Pallas BlockSpec, else ""."""
        kind = self.nnx_class(qualname)
        if not kind and not api.BLOCK_SPEC_APIS.isdisjoint(self.api_bases(qualname)):
            kind = "block_spec"
        return kind

    def api_bases(self, qualname: str) -> tuple:
        """The registry APIs (their names) that ``qualname`` is, or that the class it names
        derives from through its bases (the project's modules and installed libraries,
        transitively), in the order of the bases; () when not known to."""
        memo = self.__dict__.setdefault("_api_bases_memo", {})
        if qualname not in memo:
            memo[qualname] = ()  # a cycle of bases ends here
            memo[qualname] = self._api_bases(qualname, 0)
        return memo[qualname]

    def _api_bases(self, qualname: str, depth: int) -> tuple:
        if depth > MAX_ALIAS_DEPTH:
            return ()
        a = api.lookup(qualname) or api.lookup(self._expand(qualname))
        if a is not None:
            return (a.name,)
        found = self.resolve_class(qualname)
        for _ in range(4):  # a re-export of a re-export in modules not read yet
            if found is not None or not self._read_class_library(self._expand_class(qualname)):
                break
            found = self.resolve_class(qualname)
        if found is None:
            return ()
        mod, name = found
        out: list = []
        for base in mod.classes[name]:
            if base is not None:
                out += [b for b in self.api_bases(base) if b not in out]
        return tuple(out)

    def _read_class_library(self, qualname: str) -> bool:
        """Summarize the installed module that may define the class ``qualname`` (flax's own
        layers under their module names, a library's base classes); bounded per run."""
        parts = qualname.split(".")
        if parts[0] in ("jax", "jaxlib", "numpy", "builtins") or parts[0] in _stdlib():
            return False
        libs = self.__dict__.setdefault("_class_libs", {})
        tried = self.__dict__.setdefault("_class_libs_tried", set())
        for i in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.modules or mod in libs:
                return False
            if mod in tried:
                continue
            tried.add(mod)
            if len(libs) >= MAX_CLASS_LIBRARY_MODULES:
                return False
            path = find_library_source(mod)
            if path is None:
                continue
            text = _read(path)
            s = summarize(text, path, mod) if text is not None else None
            if s is None:
                return False
            s.library = True
            libs[mod] = s
            return True
        return False

    # -- the fixpoint ------------------------------------------------------------------------

    def _solve(self) -> None:
        self.__dict__.pop("_views", None)  # views read the solved facts
        self._facts: dict = {}  # memo of function_fact / values_of / exports (solved facts)
        wrappers: dict = {}
        for _ in range(MAX_ROUNDS):
            changed = False
            for s in self.by_path.values():
                for f in s.forwards:
                    qn = f"{s.module}.{f.function}"
                    if qn in wrappers or not s.module:
                        continue
                    w = self._forward(s, f, wrappers)
                    if w is not None:
                        wrappers[qn] = w
                        changed = True
            if not changed:
                break
        self.wrappers = wrappers
        launches: dict = {}
        for s in self.by_path.values():
            for u in s.uses:
                qn = self.canonical(u.qualname)
                if qn is None:
                    continue
                launch = self._launch(s, u.target, u.line, u.bound, u.bound_kws)
                if launch is not None:
                    launches.setdefault(qn, []).append(launch)
        for v in launches.values():
            v.sort(key=lambda x: (x.path, x.line))
        self.launches = launches
        self.ref_args = self._solve_ref_args()

    def _solve_ref_args(self) -> dict:
        """qualname -> (RefArg, ...): the refs other checked modules give each function's
        parameters, a parameter once. A ref reaches a parameter from a call passing a
        module-level ref or a local bound by a constructor (``ModuleSummary.ref_args``), or
        passing on a parameter that is a ref (``ModuleSummary.param_args``): a Pallas
        kernel's (``_kernel_refs``) or one a ref reached already, through any number of
        functions (a worklist: each (function, parameter) once). Calls inside one module
        carry the fact on but give no RefArg: the module's own analysis sees them."""
        out: dict = {}
        known: set = set()
        work: list = []

        def reach(s, qualname, index, kw, line, arg, text):
            r = self.resolve(qualname)
            if r is None:
                return
            mod, name = r
            if mod.library or not mod.module:
                return
            f = mod.functions.get(name)
            param = _param_of(f.params, index, kw) if f is not None else None
            if param is None:
                return
            qn = f"{mod.module}.{name}"
            if mod is not s:
                out.setdefault(qn, {}).setdefault(param, RefArg(param, text, arg, s.path, line))
            if (qn, param) not in known:
                known.add((qn, param))
                work.append((qn, param))

        edges: dict = {}
        for s in self.by_path.values():
            if s.library or not s.module:
                continue
            for qualname, index, kw, line, arg, text in s.ref_args:
                reach(s, qualname, index, kw, line, arg, text)
            for fn, param, qualname, index, kw, line, text in s.param_args:
                edges.setdefault((f"{s.module}.{fn}", param), []).append(
                    (s, qualname, index, kw, line, param, text))
        if edges:
            kernels = dict(self.launches)
            for s in self.by_path.values():
                for u in s.local_uses:
                    launch = self._launch(s, u.target, u.line, u.bound, u.bound_kws)
                    if launch is not None:
                        kernels[u.qualname] = kernels.get(u.qualname, []) + [launch]
            for qn, launches in kernels.items():
                r = self.resolve(qn)
                if r is None or r[0].library:
                    continue
                f = r[0].functions.get(r[1])
                for param in _kernel_refs(f, launches) if f is not None else ():
                    if (qn, param) not in known:
                        known.add((qn, param))
                        work.append((qn, param))
        while work:
            for edge in edges.get(work.pop(), ()):
                reach(*edge)
        return {qn: tuple(sorted(d.values(), key=lambda a: a.param)) for qn, d in out.items()}

    def _target_wrapper(self, target: Target, wrappers: dict) -> Optional[Wrapper]:
        """The wrapper a ``call`` target's argument reaches, when it is the forwarded one."""
        qn = self.canonical(target.name)
        w = wrappers.get(qn) if qn else None
        if w is None:
            return None
        if (target.pos is not None and target.pos == w.index) or \
                (target.kw is not None and target.kw == w.param):
            return w
        return None

    def _forward(self, s: ModuleSummary, f, wrappers: dict) -> Optional[Wrapper]:
        t = f.target
        if t.kind == "api":
            return Wrapper(f"{s.module}.{f.function}", f.param, f.index, t.name, t.text,
                           s.path, f.line, f.bound, f.bound_kws)
        w = self._target_wrapper(t, wrappers)
        if w is None:
            return None
        return Wrapper(f"{s.module}.{f.function}", f.param, f.index, w.api, w.text, w.path,
                       w.line, f.bound + w.bound, f.bound_kws + w.bound_kws)

    def _launch(self, s: ModuleSummary, t: Target, line: int, bound: int, kws: tuple):
        if t.kind == "api":
            role = _role(t.name)
            return Launch(t.name, role, t.text, s.path, line, bound, kws) if role else None
        w = self._target_wrapper(t, self.wrappers)
        if w is None:
            return None
        role = _role(w.api)
        if role is None:
            return None
        return Launch(w.api, role, w.text, s.path, line, bound + w.bound, kws + w.bound_kws,
                      via=t.text)

    # -- what one module reads ---------------------------------------------------------------

    def view(self, path: str) -> Optional["ProjectView"]:
        """What the module at ``path`` reads (one view per module: the pre-filter, the cache
        key and the analysis ask the same one)."""
        path = os.path.abspath(path)
        views = self.__dict__.setdefault("_views", {})
        if path in views:
            return views[path]
        s = self.by_path.get(path)
        v = None
        if s is not None and s.module and not getattr(s, "library", False):
            v = ProjectView(self, s)
        views[path] = v
        return v


class ProjectView:
    """What the analysis of one module reads from the project."""

    def __init__(self, project: Project, summary: ModuleSummary):
        self.project = project
        self.summary = summary
        self.module = summary.module
        self.is_package = summary.is_package
        self._digest: Optional[str] = None
        self._memo: dict = {}

    def absolute(self, level: int, name: Optional[str]) -> Optional[str]:
        """The absolute module of ``from <level dots><name> import ...`` in this module."""
        from .summary import _resolve_relative

        return _resolve_relative(self.module, self.is_package, level, name)

    def launches_of(self, name: str) -> list:
        """How other modules launch or trace this module's top-level function ``name``."""
        return self.project.launches.get(f"{self.module}.{name}", [])

    def ref_args_of(self, name: str) -> tuple:
        """The refs other modules give this module's top-level function ``name``
        (``RefArg``s, one per parameter)."""
        return self.project.ref_args.get(f"{self.module}.{name}", ())

    def function(self, qualname: str):
        """What a project function named ``qualname`` (from this module's imports) is: a
        ``Wrapper``, a ``FunctionSummary`` with transforms, or None (memoized: the analysis
        asks for every call of a name the registry does not know)."""
        memo = self._memo
        key = ("f", qualname)
        if key not in memo:
            memo[key] = self._function(qualname)
        return memo[key]

    def _function(self, qualname: str):
        qn, fact = self.project.function_fact(qualname)
        if qn is None or qn.startswith(self.module + ".") and \
                qn.count(".") == self.module.count(".") + 1:
            return None  # unknown, or this module's own (its analysis sees it)
        return fact

    def class_kind(self, qualname: str) -> str:
        """"module" / "variable" when ``qualname`` (from this module's imports) names a class
        of another module (or of an installed library) that is a Flax NNX Module / Variable
        through its bases, "block_spec" for a Pallas BlockSpec (``Project.class_kind``); ""
        otherwise (memoized: the analysis asks for every call of a name the registry does
        not know)."""
        memo = self._memo
        key = ("c", qualname)
        if key not in memo:
            memo[key] = self.project.class_kind(qualname)
        return memo[key]

    def values(self, qualname: str) -> Optional[Values]:
        """What the project name ``qualname`` (from this module's imports) is as a value
        (``Project.values_of``); None for this module's own names (its analysis sees them)."""
        memo = self._memo
        key = ("v", qualname)
        if key not in memo:
            v = self.project.values_of(qualname)
            memo[key] = None if v is None or v.qualname.rsplit(".", 1)[0] == self.module \
                else v
        return memo[key]

    def where(self, v: Values) -> str:
        """``lib.py:6``: where a value fact comes from, for messages."""
        return f"{_rel(v.path, self.project.root)}:{v.line}"

    def describe(self, name: str) -> str:
        """Where the fact that makes this module's ``name`` a kernel (or traced) comes from."""
        launches = self.launches_of(name)
        if not launches:
            return ""
        return launches[0].describe(f"{self.module.rsplit('.', 1)[-1]}.{name}",
                                    self.project.root)

    @property
    def must_analyse(self) -> bool:
        """Whether another module's summary may give this module a finding that its own text
        does not announce (the pre-filter must not skip it): one of its functions is launched
        or traced elsewhere, or it gives a function to a project wrapper, or it imports a ref
        or a function that returns or writes one. (A call of another module's jitted function
        needs a ref here, which the pre-filter already looks for.) ``must_analyse_text``
        asks the same of the module's text."""
        return bool(self._forcing()) or bool(self.traced_elsewhere())

    def must_analyse_text(self, source: str) -> bool:
        """Whether this text of the module must be analysed whatever the pre-filter and the
        gate say of it: a function of it launched as a kernel elsewhere, given refs or to a
        wrapper; a ref or a ref-returning function its imports reach, where the text spells
        its name (the analysis follows names: ``state_types.zeros_like_abstract_ref`` never
        spelled, the import of ``state_types`` gives the module no ref). A function only
        traced elsewhere (``jax.jit(core.f)``) does not force it: the gate is asked, told
        so (``traced_elsewhere``)."""
        forcing = self._forcing()
        if forcing is True or not forcing:
            return bool(forcing)
        return any(next(api.whole_words(source, word), None) is not None for word in forcing)

    def traced_elsewhere(self) -> frozenset:
        """The names of this module's top-level functions that other modules only give to a
        transform (``jax.jit(core.f)``): REF012 may report a leak in them that the module's
        own text does not announce (the gate is told). One launched as a kernel forces the
        analysis instead (``must_analyse_text``)."""
        return self._launched()[1]

    def _launched(self) -> tuple:
        """(whether another module launches a function of this module as a kernel, or
        through an API this one does not know; the functions it only traces)."""
        cached = getattr(self, "_launch_kinds", None)
        if cached is None:
            prefix = self.module + "."
            launches = self.project.launches
            kernel, traced = False, set()
            for name in self.summary.functions:
                got = launches.get(prefix + name)
                if not got:
                    continue
                if all(api.API.get(x.api) is not None and
                       api.API[x.api].family is api.Family.TRANSFORM for x in got):
                    traced.add(name)
                else:
                    kernel = True  # a kernel (refs), or an API this does not know
            cached = self._launch_kinds = (kernel, frozenset(traced))
        return cached

    def _forcing(self):
        """True when the module is forced whatever its text, else the last words of the
        names of the refs and ref functions its imports reach (empty: not forced)."""
        cached = getattr(self, "_must", None)
        if cached is None:
            cached = self._must = self._forced()
        return cached

    def _forced(self):
        if self._launched()[0]:
            return True
        prefix = self.module + "."
        ref_args = self.project.ref_args
        if any(prefix + name in ref_args for name in self.summary.functions):
            return True
        for name in self.summary.calls:
            qn = self.project.canonical(_absolute(self.summary, name))
            if qn is not None and qn in self.project.wrappers:
                return True
        # A ref another module exports, or a function returning one: this module may hold a
        # ref its own text does not create, where it spells the name (an import's alias
        # spells it too: `from lib import make_ref as mk`).
        return frozenset(full.rpartition(".")[2] for full, v in self._value_reads()
                         if v.ref_global or v.returns_ref or v.global_writes)

    def digest(self) -> str:
        """A digest of every fact this module reads from the project (its cache key)."""
        if self._digest is None:
            import hashlib

            self._digest = hashlib.sha256(repr(self._reads()).encode()).hexdigest() \
                if self._reads() else ""
        return self._digest

    def _reads(self) -> list:
        cached = getattr(self, "_reads_cache", None)
        if cached is not None:
            return cached
        out = []
        for name in sorted(self.summary.functions) + sorted(
                n for n in self._defined_names() if n not in self.summary.functions):
            launches = self.launches_of(name)
            if launches:
                out.append(("launch", name, tuple(launches)))
            ref_args = self.ref_args_of(name)
            if ref_args:
                out.append(("ref_args", name, ref_args))
        for full, fact, val in self._import_reads():
            if fact is not None:
                out.append(("import", full, fact))
            if val is not None:
                out.append(("values", full, val))
        out.extend(self._class_reads())
        self._reads_cache = out
        return out

    def _import_reads(self) -> list:
        """(qualified name, function fact, value fact) of each name this module's imports
        reach that has one: an imported name, or, for `import lib; lib.f(...)`, the functions
        of ``lib`` and what it re-exports (sorted by the local name of the import)."""
        cached = getattr(self, "_imports_cache", None)
        if cached is not None:
            return cached
        out = []
        for local, qn in sorted(self.summary.aliases.items()):
            fulls = [full for full, _, _, _ in self.project.module_names(qn)] \
                if self.project.is_module(qn) else [qn]
            for full in fulls:
                fact, val = self.function(full), self.values(full)
                if fact is not None or val is not None:
                    out.append((full, fact, val))
        self._imports_cache = out
        return out

    def _value_reads(self) -> list:
        """(qualified name, value fact) of the values among ``_import_reads`` (what
        ``must_analyse`` asks, without the launches, ref arguments and classes ``_reads`` reads
        too)."""
        return [(full, val) for full, _, val in self._import_reads() if val is not None]

    def _class_reads(self) -> list:
        """The kinds of the classes this module imports (or reaches through an imported
        module), and of the bases of its own classes: what the analysis asks
        (``Project.class_kind``)."""
        kinds = {}
        names = set()
        for local, qn in self.summary.aliases.items():
            if self.project.is_module(qn):
                kinds.update(self.project.module_classes(qn))
            else:
                names.add(qn)
        for bases in self.summary.classes.values():
            names.update(b for b in bases or () if b)
        for qn in names - kinds.keys():
            if api.lookup(qn) is None:
                kind = self.project.class_kind(qn)
                if kind:
                    kinds[qn] = kind
        return [("class", qn, kind) for qn, kind in sorted(kinds.items())]

    def _defined_names(self) -> set:
        prefix = self.module + "."
        return {q[len(prefix):] for q in self.project.launches
                if q.startswith(prefix) and "." not in q[len(prefix):]}


def _kernel_refs(f, launches: list) -> tuple:
    """The parameters of ``f`` that are refs where every one of ``launches`` runs it as a
    Pallas kernel: the positional ones, but for those functools.partial binds and those with
    a default value; none when a launch's API says some parameters are not refs (a pipeline
    body's indices, a carry) or is not a kernel launch."""
    for launch in launches:
        a = api.API.get(launch.api)
        if a is None or a.family is not api.Family.KERNEL or not a.callees:
            return ()
        c = a.callees[0]
        if not c.refs or c.leading or c.carry_if:
            return ()
    bound = max(launch.bound for launch in launches)
    kws = {k for launch in launches for k in launch.bound_kws}
    positional = [n for n, k in f.params if k in ("pos", "posonly")][bound:]
    return tuple(n for n in positional if n not in kws and n not in f.defaults)


def _param_of(params: tuple, index: Optional[int], kw: Optional[str]) -> Optional[str]:
    """The parameter a call's argument at position ``index`` (or keyword ``kw``) binds."""
    if index is not None:
        positional = [n for n, k in params if k in ("pos", "posonly")]
        if index < len(positional):
            return positional[index]
        return None  # `*args` (or too many arguments): not a named parameter
    names = {n for n, k in params if k in ("pos", "kwonly")}
    return kw if kw in names else None


def _absolute(s: ModuleSummary, name: str) -> str:
    return name


def _stdlib() -> frozenset:
    import sys

    return frozenset(getattr(sys, "stdlib_module_names", ()))


def find_library_source(module: str) -> Optional[str]:
    """The source file of ``module`` on ``sys.path`` (``a/b.py`` or ``a/b/__init__.py``),
    found without importing anything; None when there is none."""
    import sys

    rel = module.replace(".", os.sep)
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        for cand in (os.path.join(entry, rel + ".py"),
                     os.path.join(entry, rel, "__init__.py")):
            if os.path.isfile(cand):
                return cand
    return None


def _read(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    try:
        from .engine import decode

        return decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


_MISS = object()


def _cached_summary(cache, path: str, keys: dict):
    """The cache's summary of ``path`` (its key recorded in ``keys``), or ``_MISS``."""
    from .cache import MISS

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return _MISS
    key = cache.summary_key(path, module_name(path)[1], data)
    keys[path] = key
    got = cache.get_summary(key)
    return _MISS if got is MISS else got


def _summarize_task(task, share: bool = False) -> Optional[ModuleSummary]:
    """The summary of ``task`` = (path, read). ``share``: the file is checked in this
    process (or a child it forks) after the summary phase: a module the summary parses whole
    (one spelling an entry point or a ref) is parsed once, its tree kept for the check
    (reflint.gate.keep) while there is room for it (past that, the summary cuts and parses
    the text as it does without ``share``)."""
    path, read = task
    try:
        text = read(path)
        if text is None:
            return None
        if _DECIDE is not None and _DECIDE.wants(text, path):
            return _decided(text, path, share)
        if not share:
            return summarize(text, path, module_name(path)[1])

        def whole():
            from . import gate  # only for a module parsed whole: the check imports it then

            if not gate.room_for(text):
                return None  # cut and parsed as without `share`
            tree = gate.parse(text)
            if tree is not None:
                gate.keep(text, tree)
            return tree

        return summarize(text, path, module_name(path)[1], whole=whole)
    except Exception:  # noqa: BLE001 - a summary is an extra: never fail the run for it
        return None


_DECIDE = None  # Project.build's ``decide``, while it runs (inherited by forked workers)


def _decided(text: str, path: str, share: bool) -> Optional[ModuleSummary]:
    """The summary of a module the run checks next, from its whole tree, and the gate's
    verdict on that tree, remembered for the check (``reflint.gate.remember``). ``share``: the
    check runs in this process (or a child it forks): the tree is kept for it if the verdict
    lets the file through (reflint.gate.keep)."""
    # As in the check (cli._lint_task): the collector would scan the growing tree again and
    # again while it is built. The tree is freed (unless kept) before it runs again.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _decide_tree(text, path, share)
    finally:
        if enabled:
            gc.enable()


def _decide_tree(text: str, path: str, share: bool) -> Optional[ModuleSummary]:
    from . import gate

    tree = gate.parse(text)
    s = summarize(text, path, module_name(path)[1], whole=lambda: tree, parsed=tree is not None)
    if tree is not None:
        verdict = _DECIDE(text, path, tree)
        if verdict is not None:
            gate.remember(path, hash(text), verdict)
            if share and _DECIDE.allows(verdict, path):
                gate.keep(text, tree)
                # Out of the collector's sight until the check takes it: re-enabled after
                # this file, the collector would walk the whole tree at its next passes.
                gc.freeze()
    return s


def _summarize_path(path: str):
    """The summary of ``path`` in a worker, with the gate's record of it (see ``_decided``)
    for the parent to remember."""
    s = _summarize_task((path, _read))
    if _DECIDE is None:
        return s, None
    from . import gate

    return s, gate.forget(path)


def _parallel(files: list, jobs: int) -> list:
    try:
        from concurrent.futures import ProcessPoolExecutor

        from .cli import _pool_context

        with ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context()) as pool:
            got = list(pool.map(_summarize_path, files, chunksize=max(1, len(files) //
                                                                      (jobs * 8))))
    except (OSError, ImportError, RuntimeError):
        got = [_summarize_path(f) for f in files]
    except Exception:  # noqa: BLE001 - a broken pool: summarize here
        got = [_summarize_path(f) for f in files]
    from . import gate

    for f, (_, decided) in zip(files, got):
        if decided is not None:
            gate.remember(f, *decided)
    return [s for s, _ in got]


# -- the active project of this process -----------------------------------------------------

_ACTIVE: Optional[Project] = None
_OVERRIDES: dict = {}  # abspath -> a view (stdin text placed in the project)


def activate(project: Optional[Project]) -> None:
    global _ACTIVE
    _ACTIVE = project


def active() -> Optional[Project]:
    return _ACTIVE


def view_for(path: str) -> Optional[ProjectView]:
    if _ACTIVE is None or not path:
        return None
    try:
        return _ACTIVE.view(path)
    except Exception:  # noqa: BLE001 - a project fact must never cost the file its check
        return None


def must_analyse(path: str, source: Optional[str] = None) -> bool:
    """Whether the module at ``path`` (with the text ``source`` when given) must be analysed
    whatever the pre-filter and the gate say of it (``ProjectView.must_analyse``,
    ``must_analyse_text``)."""
    v = view_for(path)
    if v is None:
        return False
    try:
        return v.must_analyse if source is None else v.must_analyse_text(source)
    except Exception:  # noqa: BLE001
        return False


def traced_elsewhere(path: str) -> frozenset:
    """The top-level functions of the module at ``path`` that other modules trace
    (``ProjectView.traced_elsewhere``): the gate must be told, and not the text alone
    decide."""
    v = view_for(path)
    if v is None:
        return frozenset()
    try:
        return v.traced_elsewhere()
    except Exception:  # noqa: BLE001
        return frozenset()


def cache_digest(path: str) -> str:
    v = view_for(path)
    if v is None:
        return ""
    try:
        return v.digest()
    except Exception:  # noqa: BLE001
        return ""
