"""Readable names for the globals dynamo installs in user modules, and the
names of the resume functions it makes.

`__compiled_fn_2_58b2…` is graph 2, `__resume_at_70_3` is a resume function
(named by its code: `resume_code`), `__import_torch_dot_nn` is the module
torch.nn, and `__builtins_dict___4` is the builtins dict.
"""
from __future__ import annotations

import re
import sys
import types
from typing import Iterable

# torch 2.x names resume functions torch_dynamo_resume_in_<fn>_at_<line>;
# older releases used "<resume in fn>".
RESUME_PREFIXES = ("torch_dynamo_resume_in_", "<resume in ")
# The suffix is a uuid in torch 2.x; any word suffix is accepted.
GRAPH_NAME = re.compile(r"__compiled_fn_(\d+)(?:_\w*)?")
RESUME_GLOBAL = re.compile(r"__resume_at_\d+_\d+")
IMPORT_GLOBAL = re.compile(r"__import_\w+")
BUILTINS_GLOBAL = re.compile(r"__builtins_dict___\d+")
_DYNAMO_GLOBAL = re.compile("|".join(p.pattern for p in
                                     (GRAPH_NAME, RESUME_GLOBAL, IMPORT_GLOBAL, BUILTINS_GLOBAL)))


def is_resume_name(name: str) -> bool:
    """Whether a code object's name is that of a resume function."""
    return name.startswith(RESUME_PREFIXES)


def graph_number(name: str) -> int | None:
    """2 for `__compiled_fn_2_<uuid>` or `__compiled_fn_2`, else None."""
    match = GRAPH_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def find_graph_global(spec: str, first: Iterable[dict] = ()) -> tuple[dict, str] | None:
    """(namespace, global name) of compiled graph `spec` (its number or name): in the
    namespaces `first` (a stop's frames' globals), then in every module's."""
    number = int(spec) if spec.isdigit() else graph_number(spec)
    namespaces = list(first) + [vars(m) for m in list(sys.modules.values())
                                if isinstance(getattr(m, "__dict__", None), dict)]
    for namespace in namespaces:
        for name in [n for n in list(namespace) if n.startswith("__compiled_fn_")]:
            if name == spec or (number is not None and graph_number(name) == number):
                return namespace, name
    return None


def resume_code(value: object) -> types.CodeType | None:
    """The code of the resume function a `__resume_at_*` global holds, or None.

    The global holds the function itself, or, where the resume function has
    free variables (that of a closure's call dynamo inlined), a factory that
    makes it from a closure (`OutputGraph.install_resume_function_global`'s
    `_make_fn`; a loaded package's holds the code as a default): its code is
    then the one resume function's code the factory holds.
    """
    code = getattr(value, "__code__", None)
    if not isinstance(code, types.CodeType):
        return None
    if is_resume_name(code.co_name):
        return code
    held = [c for c in _held_by(value)
            if isinstance(c, types.CodeType) and is_resume_name(c.co_name)]
    return held[0] if len(held) == 1 else None


def _held_by(function: object) -> list[object]:
    """The values of a function's closure cells (the filled ones) and its defaults."""
    held = list(getattr(function, "__defaults__", None) or ())
    for cell in getattr(function, "__closure__", None) or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:          # an empty cell
            pass
    return held


def readable_name(name: str, module_globals: dict | None = None) -> str:
    """What a dynamo global is, for people; the name itself if not dynamo's."""
    number = graph_number(name)
    if number is not None:
        return f"graph {number}"
    value = (module_globals or {}).get(name)
    if RESUME_GLOBAL.fullmatch(name):
        code = resume_code(value)
        return code.co_name if code is not None else name
    if IMPORT_GLOBAL.fullmatch(name):
        module = getattr(value, "__name__", None)
        return module if isinstance(module, str) else \
            name[len("__import_"):].replace("_dot_", ".")
    if BUILTINS_GLOBAL.fullmatch(name):
        return "builtins"
    return name


def readable(text: str, module_globals: dict | None = None) -> str:
    """`text` with every dynamo global named by what it is."""
    return _DYNAMO_GLOBAL.sub(lambda m: readable_name(m.group(0), module_globals), text)
