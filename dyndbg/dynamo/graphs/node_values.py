"""Every node's value of an FX graph, run eagerly, and whether a compiled value
agrees with it, judged as torch's own accuracy checks judge a backend.

The judgement (`agreement`) is `torch._dynamo.utils.same` with a float64
reference, the check of torch's accuracy minifier and benchmark suite: a
compiled value agrees when it is close to the eager one (`allclose` with
rtol, atol) or when its error against the float64 run of the same graph is
no more than a small multiple of the eager value's own error (so float32
reordering in a correct kernel is not a difference, and a wrong kernel is).
`agreement` is self-contained (torch and math only): `graph bisect --save`
copies its source into the script it writes, so that the script judges as
dyndbg did.
"""
from __future__ import annotations

import copy
from typing import Any, NamedTuple, Sequence


class Agreement(NamedTuple):
    """A compiled value against the eager reference."""

    agree: bool
    max_abs: float          # largest |compiled - eager| (nan where not numbers)
    max_rel: float          # largest |compiled - eager| / |eager|
    where: tuple            # the index of the element where |compiled - eager| is largest
    note: str               # "" or why they cannot be compared element by element


def agreement(eager: Any, compiled: Any, fp64: Any = None, rtol: float = 1e-4,
              atol: float = 1e-4) -> Agreement:
    """Whether `compiled` agrees with `eager` (torch.Tensor or a number), with
    `fp64` (the same computed in float64, or None) as torch's
    `torch._dynamo.utils.same` uses it."""
    import math
    import torch
    from torch._dynamo.utils import same
    nan = math.nan
    if not isinstance(eager, torch.Tensor) or not isinstance(compiled, torch.Tensor):
        if isinstance(eager, torch.Tensor) or isinstance(compiled, torch.Tensor):
            return Agreement(False, nan, nan, (), f"{type(eager).__name__} against "
                                                 f"{type(compiled).__name__}")
        return Agreement(bool(eager == compiled), nan, nan, (), "")
    if eager.shape != compiled.shape or eager.dtype != compiled.dtype:
        return Agreement(False, nan, nan, (), f"{eager.dtype}{list(eager.shape)} against "
                                              f"{compiled.dtype}{list(compiled.shape)}")
    eager, compiled = eager.detach(), compiled.detach()
    max_abs = max_rel = nan
    where: tuple = ()
    if eager.numel():
        left, right = eager.to(torch.float64), compiled.to(torch.float64)
        error = (left - right).abs()
        error = torch.where(torch.isnan(left) & torch.isnan(right), 0.0, error)
        flat = int(torch.nan_to_num(error, nan=math.inf).flatten().argmax())
        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), eager.shape))
        max_abs = float(error.flatten()[flat])
        nonzero = left != 0            # relative to an eager value of 0: not a number
        if bool(nonzero.any()):
            max_rel = float((error[nonzero] / left[nonzero].abs()).max())
    if torch.allclose(eager, compiled, rtol=rtol, atol=atol, equal_nan=True):
        return Agreement(True, max_abs, max_rel, where, "")
    reference = fp64.detach() if isinstance(fp64, torch.Tensor) else None
    agree = same(eager, compiled, reference, tol=atol, equal_nan=True,
                 log_error=lambda *args, **kwargs: None)
    return Agreement(bool(agree), max_abs, max_rel, where, "")


def verdict_line(node: str, target: str, line: str, agreed: Agreement, eager: Any = None,
                 compiled: Any = None) -> str:
    """`first differing node: h_2 (call_function torch.relu) at model.py:9: max abs 1,
    max rel 220, at [0, 26]: eager 0, compiled 1`."""
    at = f" at {line}" if line else ""
    head = f"first differing node: {node} ({target}){at}: "
    if agreed.note:
        return head + agreed.note
    where = "[" + ", ".join(str(i) for i in agreed.where) + "]"
    text = head + f"max abs {agreed.max_abs:.3g}, max rel {agreed.max_rel:.3g}, at {where}"
    try:
        text += f": eager {eager[agreed.where].item():.6g}, " \
                f"compiled {compiled[agreed.where].item():.6g}"
    except Exception:  # noqa: BLE001 - no element to show (a 0-d value, not tensors)
        pass
    return text


def record(gm: Any, args: Sequence[Any]) -> dict[str, Any]:
    """Each node's value (by node name) when `gm` runs eagerly on `args`."""
    import torch
    import torch.fx

    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node: Any) -> Any:
            value = super().run_node(node)
            values[node.name] = detached(value)
            return value

    with torch.no_grad():
        Recorder(gm, garbage_collect_values=False).run(*args)
    return values


def record_fp64(gm: Any, args: Sequence[Any]) -> dict[str, Any]:
    """Each node's value with the graph and its floating inputs cast to float64,
    as torch's minifier casts them (`torch._dynamo.debug_utils.cast_to_fp64`,
    on a copy: `gm` is left as it is)."""
    from torch._dynamo.debug_utils import cast_to_fp64
    model, inputs = cast_to_fp64(copy.deepcopy(gm), list(clones(args)))
    return record(model, inputs)


def clones(args: Sequence[Any]) -> list[Any]:
    """Fresh copies of a graph's inputs, as torch's minifier makes them (each
    tensor cloned, keeping requires_grad), so that no run mutates the
    program's tensors or another run's."""
    from torch._dynamo.debug_utils import clone_inputs_retaining_gradness
    return list(clone_inputs_retaining_gradness(list(args)))


def detached(value: Any) -> Any:
    """A value with its tensors (and those of a plain tuple or list) detached."""
    import torch
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(detached(v) for v in value) if type(value) in (tuple, list) \
            else value
    return value


def is_tensor(value: Any) -> bool:
    import torch
    return isinstance(value, torch.Tensor)
