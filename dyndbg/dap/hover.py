"""The value under the mouse: names, attributes and constant subscripts
read without running the program's code (a hover must change nothing, and
an attribute may be a property, a subscript a defaultdict's)."""
from __future__ import annotations

import ast
import builtins
import inspect
import sys
import types
from typing import Mapping

# Read by getattr: C-level slots and fields, no Python code of the program.
_C_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


class NotHoverable(Exception):
    """An expression a hover does not evaluate: its message says why."""


def hover_value(expression: str, names: Mapping[str, object], module: Mapping[str, object]
                ) -> object:
    """`expression`'s value, from the frame's `names` (locals first) and
    `module` globals; NotHoverable (or the NameError, AttributeError, KeyError
    or IndexError the lookup meets) where it cannot be read so."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError):
        raise NotHoverable("not a name") from None
    return _value(tree.body, names, module)


def _value(node: ast.AST, names: Mapping[str, object], module: Mapping[str, object]) -> object:
    if isinstance(node, ast.Name):
        for scope in (names, module, vars(builtins)):
            if node.id in scope:
                return scope[node.id]
        raise NameError(f"name {node.id!r} is not defined")
    if isinstance(node, ast.Attribute):
        return _attribute(_value(node.value, names, module), node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _item(_value(node.value, names, module), node.slice.value)
    raise NotHoverable("hover shows names, attributes and constant subscripts only (no calls)")


def _attribute(base: object, name: str) -> object:
    found = inspect.getattr_static(base, name)   # AttributeError where there is none
    if isinstance(found, _C_DESCRIPTORS) and _plain_c_type(type(base)):
        return getattr(base, name)
    if isinstance(found, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)) \
            or not hasattr(type(found), "__get__"):
        return found
    raise NotHoverable(f"{name!r} is computed when read (a property or descriptor): "
                       "evaluate it in the debug console")


def _plain_c_type(kind: type) -> bool:
    """A type whose attribute reads run no Python code of the program: a
    builtin, or a plain tensor (a subclass may override them)."""
    torch = sys.modules.get("torch")
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        return True
    return kind.__module__ == "builtins"


def _item(base: object, key: object) -> object:
    if type(base) is dict:
        return base[key]   # a plain dict: no __missing__, no user __getitem__
    if type(base) in (list, tuple) and type(key) is int:
        return base[key]   # type: ignore[index]  # checked: a list or tuple
    raise NotHoverable(f"hover reads items of plain dicts, lists and tuples only, not "
                       f"{type(base).__name__}")
