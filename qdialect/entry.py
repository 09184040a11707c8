"""Which function of a module is the model.

One rule for every tool (DESIGN.md, command-line contract): the function named by the
user, else `@main`, else the only public function.  Declarations (no body) are never the
model.  The interpreter, the TVM translation, the quantizer and the TFLite exporter all
ask here, so a module one of them runs is the module the others run.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp


class EntryError(ValueError):
    """The module has no function the rule picks; the message says why."""


def _is_public(f: func.FuncOp) -> bool:
    return f.sym_visibility is None or f.sym_visibility.data == "public"


def entry_function(module: ModuleOp, name: str | None = None,
                   functions: Sequence[func.FuncOp] | None = None) -> func.FuncOp:
    """The model's function in `module`: `name` if given, else `@main`, else the only public
    function with a body.  `functions` replaces the module's top-level functions as the
    candidates (the TVM translation also looks into nested modules).  EntryError names what
    is missing: no such function, a declaration, or several candidates."""
    funcs = list(functions) if functions is not None else [op for op in module.ops if isinstance(op, func.FuncOp)]
    wanted = name if name is not None else ("main" if any(f.sym_name.data == "main" for f in funcs) else None)
    if wanted is not None:
        match = [f for f in funcs if f.sym_name.data == wanted]
        if not match:
            raise EntryError(f"no function @{wanted} in the module")
        if not match[0].body.blocks:
            raise EntryError(f"@{wanted} is a declaration (no body)")
        return match[0]
    public = [f for f in funcs if _is_public(f) and f.body.blocks]
    if len(public) == 1:
        return public[0]
    declared = [f for f in funcs if _is_public(f)]
    if not public and len(declared) == 1:
        raise EntryError(f"@{declared[0].sym_name.data} is a declaration (no body)")
    names = ", ".join(f"@{f.sym_name.data}" for f in public)
    raise EntryError("no @main and " + (f"several public functions ({names})" if public else "no public function with a body"))
