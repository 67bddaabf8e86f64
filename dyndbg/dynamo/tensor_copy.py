"""Copies of tensors for the recorded history (engine/recording/history.py), taken so
that the program computes exactly what it would without dyndbg: no autograd
edge, and none of the program's torch-function or dispatch modes sees them."""
from __future__ import annotations

import contextlib

import torch

# Types whose values never change: the history keeps them as they are.
TORCH_IMMUTABLE_TYPES: tuple[type, ...] = (torch.dtype, torch.device, torch.Size,
                                           torch.layout, torch.memory_format)
# Tensors the history may copy; a subclass (a FakeTensor, a DTensor) is only described.
PLAIN_TENSOR_TYPES: tuple[type, ...] = (torch.Tensor, torch.nn.Parameter)
Tensor = torch.Tensor


def version(tensor: torch.Tensor) -> int | None:
    """The tensor's version counter (an in-place change bumps it); None for
    an inference tensor, which has none."""
    try:
        return tensor._version
    except RuntimeError:
        return None


def nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def copy_tensor(tensor: torch.Tensor) -> torch.Tensor | None:
    """A detached copy of a plain tensor on its own device, or None where it
    cannot be taken (a meta tensor, an error in torch)."""
    if tensor.device.type == "meta":
        return None
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch._C.DisableTorchFunction())
            if torch._C._len_torch_dispatch_stack():
                from torch.utils._python_dispatch import _disable_current_modes
                stack.enter_context(_disable_current_modes())
            copy = tensor.detach().clone()
            # What a summary shows of it: a Parameter, requiring grad (a leaf: no graph).
            if type(tensor) is torch.nn.Parameter:
                return torch.nn.Parameter(copy, requires_grad=tensor.requires_grad)
            if tensor.requires_grad:
                copy.requires_grad_(True)
            return copy
    except Exception:  # noqa: BLE001 - an odd tensor is described instead
        return None


_DTYPE_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
                "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
                "bool": "b8"}


def describe(tensor: torch.Tensor) -> str:
    """`Tensor f32[1000, 1000] cpu`: a tensor's kind, without reading its values."""
    try:
        dtype = str(tensor.dtype).replace("torch.", "")
        return (f"{type(tensor).__name__} {_DTYPE_SHORT.get(dtype, dtype)}"
                f"{list(tensor.shape)} {tensor.device.type}")
    except Exception as error:  # noqa: BLE001
        return f"<{type(tensor).__name__}: {type(error).__name__}>"


def describe_module(module: object) -> str | None:
    """`Linear(in_features=3, out_features=3, bias=True)` for a module of
    torch.nn's own (their extra_repr is torch's code), with its children
    counted where it has some (`Sequential(… 3 children)`: an empty
    extra_repr alone would read as an empty container); `Name(…)` for
    other modules; None for other objects."""
    if not isinstance(module, torch.nn.Module):
        return None
    kind = type(module)
    name = kind.__name__
    if not kind.__module__.startswith("torch.nn."):
        return f"{name}(…)"
    try:
        extra = module.extra_repr()
        children = sum(1 for _ in module.children())
    except Exception:  # noqa: BLE001
        return f"{name}(…)"
    if not children:
        return f"{name}({extra})"
    counted = f"… {children} child{'ren' if children != 1 else ''}"
    return f"{name}({extra}, {counted})" if extra else f"{name}({counted})"
