"""Which elements of a graph node's value are NaN or Inf (`catch nan`, issue 50).

A read of the value the program's own graph computed, each floating (or
complex) tensor, alone or in a tuple or list; nothing is written. The
common case, all finite, costs one sum: a NaN or an Inf in a tensor makes
its sum NaN or Inf, so a finite sum means all finite (about 5 us on a
small CPU tensor against 25 for isfinite and all); where the sum is not
finite (an overflow, or a bad element) torch.isfinite decides.

Also torch's side of a graph's code made lazily (`_LazyGraphModule`: AOT's
GraphModules make their `forward` at their first call): the one code object
those first calls run, and the code a GraphModule has once made.
"""
from __future__ import annotations

import math
import types
from typing import NamedTuple

FIRST = 3     # the indices named, of each kind


class BadValues(NamedTuple):
    """What is not finite in one tensor of a node's value."""

    where: str                       # "" for the value itself, "[1]" for a tuple's element
    shape: tuple[int, ...]
    total: int                       # its elements
    nan: int
    nan_at: list[list[int]]          # the first few indices
    inf: int
    inf_at: list[list[int]]


def bad_values(value: object) -> list[BadValues]:
    """The tensors in `value` (a tensor, or a tuple or list of them, one level
    deep) holding a NaN or an Inf; [] where none does (or nothing is a
    floating tensor)."""
    import torch

    if isinstance(value, torch.Tensor):
        found = _bad(value, "")
        return [found] if found is not None else []
    out: list[BadValues] = []
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            if isinstance(item, torch.Tensor):
                found = _bad(item, f"[{i}]")
                if found is not None:
                    out.append(found)
    return out


def bad_outputs(result: object) -> list[tuple[int, BadValues]]:
    """A graph's result (a tuple or list of outputs, or one value): each
    output index with what is not finite in it."""
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    return [(i, bad._replace(where="")) for i, value in enumerate(outputs)
            for bad in bad_values(value)]


def _bad(tensor: object, where: str) -> BadValues | None:
    import torch

    assert isinstance(tensor, torch.Tensor)
    try:
        if not (tensor.is_floating_point() or tensor.is_complex()) or tensor.is_meta \
                or tensor.layout is not torch.strided:
            return None
        t = tensor.detach()
        if not t.is_complex() and math.isfinite(t.sum().item()):
            return None     # a NaN or an Inf anywhere makes the sum one: one op, not two
        if bool(torch.isfinite(t).all()):
            return None     # the sum overflowed (or is complex): isfinite says

        nan = torch.isnan(t)
        inf = torch.isinf(t)
        return BadValues(where, tuple(t.shape), t.numel(),
                         int(nan.sum()), torch.nonzero(nan)[:FIRST].tolist(),
                         int(inf.sum()), torch.nonzero(inf)[:FIRST].tolist())
    except Exception:  # noqa: BLE001 - a tensor isfinite cannot read: not checked
        return None


def lazy_forward_code() -> types.CodeType | None:
    """The code of `_LazyGraphModule._lazy_forward`: what a lazy GraphModule's
    first call runs before its own forward exists (torch 2.13; None where
    this torch has no such thing)."""
    try:
        from torch.fx._lazy_graph_module import _LazyGraphModule
    except ImportError:
        return None
    code = getattr(getattr(_LazyGraphModule, "_lazy_forward", None), "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def made_forward_code(gm: object) -> types.CodeType | None:
    """The GraphModule's generated forward code, once torch has made it."""
    forward = getattr(type(gm), "forward", None)
    code = getattr(forward, "__code__", None)
    if isinstance(code, types.CodeType) and code.co_filename.startswith("<eval_with_key>"):
        return code
    return None


def graph_globals() -> list[tuple[str, object]]:
    """(`__compiled_fn_*` name, value) of every compiled graph global alive now."""
    import sys

    out: list[tuple[str, object]] = []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name in [n for n in list(namespace) if n.startswith("__compiled_fn_")]:
            out.append((name, namespace[name]))
    return out
