"""Reading dynamo's objects at a compile stop without changing them: its
instructions, VariableTrackers, FX nodes and guards, as shown
(symbolic/state.py holds the hooks and the state they are read from).

A VariableTracker is read from its instance dict (`vars(vt)`): a
LazyVariableTracker's attribute lookup and `isinstance` against a
VariableTracker class both *realize* it, which installs guards; reading the
dict does neither, and an unrealized one is shown as such.
"""
from __future__ import annotations

import types
from typing import Any, Callable, NamedTuple

from dyndbg.dynamo.graphs import lookup as graphs


class UserInstruction(NamedTuple):
    """One instruction of the user's code object, as dynamo interprets it."""

    opname: str
    argval: str            # its argument, as dis shows it ("" when none)
    offset: int | None
    line: int | None


class SymbolicValue(NamedTuple):
    """A VariableTracker as shown: its class, what dynamo knows of the value,
    where it came from (a guarded source, an FX node)."""

    kind: str              # "TensorVariable", "ConstantVariable", ...
    text: str              # "f32[4]", "int 3", "Tensor f32[4], unrealized (no guard on it yet)"
    source: str = ""       # "L['x']" where dynamo has one
    node: str = ""         # the FX node holding it, for tensors and symbolic numbers

    def line(self) -> str:
        parts = [self.kind, self.text]
        if self.node:
            parts.append(f"node {self.node}")
        if self.source:
            parts.append(f"from {self.source}")
        return "  ".join(p for p in parts if p)


def is_variable_tracker(value: object) -> bool:
    """One of dynamo's VariableTrackers, known by its class's module:
    isinstance against dynamo's classes realizes a lazy one (its metaclass)."""
    return type(value).__module__.startswith("torch._dynamo.variables")


def user_instruction(inst: Any) -> UserInstruction:
    return UserInstruction(str(inst.opname), _argval(inst), inst.offset, line_of(inst))


def line_of(inst: Any) -> int | None:
    positions = getattr(inst, "positions", None)
    line = getattr(positions, "lineno", None)
    if line is None:
        line = getattr(inst, "starts_line", None)
        line = line if isinstance(line, int) and not isinstance(line, bool) else None
    return line


def _argval(inst: Any) -> str:
    if inst.arg is None and inst.argval is None:
        return ""
    value = inst.argval
    if isinstance(value, str):
        return value
    if isinstance(value, types.CodeType):
        return f"<code {value.co_name}>"
    if hasattr(value, "opname"):   # a jump's target instruction
        return f"to @{getattr(value, 'offset', '?')}"
    return _short(repr(value))


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def source_name(source: Any) -> str:
    """A Source as guards name it (`L['x']`); a source that has no such name
    (a LocalCellSource: a cell that is never guarded) as its class and fields."""
    if source is None:
        return ""
    try:
        name = getattr(source, "name", "")
        return str(name() if callable(name) else name)
    except Exception:  # noqa: BLE001 - torch leaves `name` unimplemented on some sources
        return _short(_fields_text(source))


def _fields_text(source: Any) -> str:
    """`LocalCellSource(local_name='t')`: a source's class and instance fields."""
    try:
        fields = ", ".join(f"{key}={_short(repr(value), 30)}"
                           for key, value in vars(source).items() if not key.startswith("_"))
    except TypeError:
        fields = ""
    return f"{type(source).__name__}({fields})"


def node_target(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", "") or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if name is None:
        return _short(repr(target))
    module = {"_operator": "operator"}.get(module, module)
    return f"{module}.{name}" if module else name


def value_text(value: Any) -> str:
    """`f32[4]`, `f32[s0, 4]` for a (fake) tensor; the value of a symbolic number."""
    if value is None:
        return ""
    import torch
    if isinstance(value, torch.Tensor):
        return graphs.short_type(value)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return f"{type(value).__name__} {value}"      # str() of a SymInt adds no guard
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(value_text(v) or type(v).__name__ for v in value[:6]) + \
            (", ..." if len(value) > 6 else "") + ")"
    return type(value).__name__


CellContents = Callable[[Any], Any]
"""What a cell VariableTracker holds at this point of the trace (None if unknown)."""


def describe(value: Any, depth: int = 0, cell_contents: CellContents | None = None) -> SymbolicValue:
    """One VariableTracker as SymbolicValue, from its instance dict only; a
    cell's contents as `cell_contents` finds them (the trace's own mutations)."""
    kind = type(value).__name__
    try:
        fields = vars(value)
    except TypeError:
        return SymbolicValue(kind, _short(repr(value)))
    source = ""
    try:
        source = source_name(fields.get("source"))
        cache = fields.get("_cache")
        if cache is not None:                          # a LazyVariableTracker
            realized = getattr(cache, "vt", None)
            if realized is not None:
                return describe(realized, depth, cell_contents)
            return SymbolicValue(kind, f"{_raw_text(getattr(cache, 'value', None))}, "
                                       "unrealized (no guard on it yet)", source)
        proxy = fields.get("proxy")
        if proxy is not None and hasattr(proxy, "node"):
            node = proxy.node
            return SymbolicValue(kind, value_text(node.meta.get("example_value")) or "?",
                                 source, node.name)
        if "sym_num" in fields:
            return SymbolicValue(kind, f"{type(fields['sym_num']).__name__} {fields['sym_num']}",
                                 source)
        if "pre_existing_contents" in fields:           # a CellVariable
            return SymbolicValue(kind, _cell_text(value, fields, depth, cell_contents), source)
        if "items" in fields and isinstance(fields["items"], (list, tuple)) and depth < 2:
            items = [describe(v, depth + 1, cell_contents) for v in fields["items"][:6]]
            inner = ", ".join(f"{i.kind} {i.text}".strip() for i in items)
            more = ", ..." if len(fields["items"]) > 6 else ""
            return SymbolicValue(kind, f"[{inner}{more}]", source)
        for name in ("fn", "value"):
            if name in fields:
                return SymbolicValue(kind, _raw_text(fields[name]), source)
        if "obj" in fields and "name" in fields:        # GetAttrVariable
            return SymbolicValue(kind, f"{describe(fields['obj'], depth + 1).kind}"
                                       f".{fields['name']}", source)
        return SymbolicValue(kind, "", source)
    except Exception as error:  # noqa: BLE001 - one value unreadable, the rest shown
        return SymbolicValue(kind, f"(dyndbg cannot read this value: {type(error).__name__}"
                                   f"{': ' if str(error) else ''}{_short(str(error))})", source)


def _cell_text(cell: Any, fields: dict[str, Any], depth: int,
               cell_contents: CellContents | None) -> str:
    """`cell holding BuiltinVariable float`: what a cell holds now, as dynamo
    would load it (a store in this trace, else the contents it had before)."""
    if depth >= 2:
        return "cell"
    current = cell_contents(cell) if cell_contents is not None else None
    held, words = (current, "set in this trace") if current is not None else \
        (fields.get("pre_existing_contents"), "")
    if held is None:
        return "empty cell (no value stored yet)"
    inner = describe(held, depth + 1, cell_contents)
    return f"cell holding {inner.kind} {inner.text}".rstrip() + (f", {words}" if words else "")


def _raw_text(value: Any) -> str:
    """A Python value dynamo holds, without running the program's code: a
    constant's repr, a function's name, a tensor's dtype and shape, else its type."""
    import torch
    if value is None:
        return "None"
    if isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__} {_short(repr(value))}"
    if isinstance(value, torch.Tensor):
        return f"Tensor {value_text(value)}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                          types.BuiltinMethodType, type)):
        module = getattr(value, "__module__", None)
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
        return f"{module}.{name}" if module and module != "builtins" else str(name)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    return type(value).__name__
