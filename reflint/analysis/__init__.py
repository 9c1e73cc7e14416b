"""The shared analysis of one module: computed once, queried by every rule.

It answers, for a libcst module and without importing anything:

1. which JAX API an expression names (imports and aliases resolved to qualified names,
   see :mod:`reflint.api`);
2. which expressions are Refs (abstract values flow through assignments, unpacking, containers,
   attributes of ``self``, parameters bound at call sites, return values of local functions);
3. which functions are traced, and by what (decorators, call forms, ``functools.partial``,
   the function arguments of ``lax.scan``/``cond``/``switch``/``while_loop``/``fori_loop``/``map``,
   ``custom_vjp`` rules, Pallas kernels), directly or through helpers they call;
4. call-site bindings (argument -> parameter, through pytrees) and closures (refs a function
   reads from enclosing scopes, module globals included);
5. which values depend on the inputs of a differentiated function, and which of them are
   written into refs JAX does not differentiate (``dependence``: the same evaluation, run again
   for each differentiated function with a ``deps`` component in its state, per call context).

The evaluation is an abstract interpretation over the statements of each function in program
order (branches merged), repeated until parameter and return summaries reach a fixpoint.
Anything it cannot resolve is ``None`` (unknown), and rules stay silent on unknowns.
"""

from __future__ import annotations

from .alternatives import (  # noqa: F401
    _CALLABLES,
    _choice,
    _count_scratch,
    _element_of,
    _one_of,
    _seq_item,
    _tag_via,
    _unpacked_refs,
)
from .constants import (  # noqa: F401
    _BUILTIN_NAMES,
    _CONTAINER_CONSTRUCTORS,
    _METADATA_ATTRIBUTES,
    _NO_TANGENT_BUILTINS,
    DEPENDENCE_LOOP_RUNS,
    EMPTY,
    MAX_DEPENDENCE_DEPTH,
    MAX_ROUNDS,
    MUTATING_METHODS,
)
from .core import ModuleAnalysis  # noqa: F401
from .facts import (  # noqa: F401
    AttributeWrite,
    Binding,
    ClassInfo,
    Creation,
    DependentWrite,
    Freeze,
    FunctionInfo,
    ItemWrite,
    KernelEntry,
    KernelLaunch,
    AotCall,
    MutatingCall,
    Param,
    PlainCall,
    RefAccess,
    RefUse,
    ReturnFact,
    Role,
    TracedCall,
    TracedConstructor,
    UseAfterFreeze,
    VjpApplication,
    VjpCall,
    WithRefs,
)
from .state import (  # noqa: F401
    _Dependence,
    _DepFrame,
    _join_deps,
    _State,
    _Unbound,
)
from .syntax import (  # noqa: F401
    _COMPREHENSION_KINDS,
    _FIELDS,
    _IS_NODE,
    _LITERALS,
    _METHOD_KINDS,
    _OP_TEXT,
    _SCOPES,
    _as_name,
    _binds_name,
    _body,
    _bool_constant,
    _const_index,
    _const_key,
    _first_positional,
    _first_positional_arg,
    _in_own_scope,
    _is_docstring,
    _is_pallas_param,
    _params_of,
    _positions_of,
    _slice_of,
    _target_names,
    child_nodes,
    dotted_name,
    last_name,
    op_text,
    slice_exprs,
    walk_nodes,
)
