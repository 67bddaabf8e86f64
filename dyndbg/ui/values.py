"""Short, safe summaries of runtime values for stops, stacks and locals.

A summary never reprs a whole large tensor and never lets a user object's
failing __repr__ escape.
"""
from __future__ import annotations

import sys

from dyndbg.cpython import NULL
from dyndbg.engine.recorded_values import Summary
from dyndbg.timelimit import TimeLimitExceeded, time_limit

_DTYPE_SHORT = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
    "bool": "b8", "complex64": "c64", "complex128": "c128",
}
DEFAULT_WIDTH = 80
_width = [DEFAULT_WIDTH]   # `set width N`


def width() -> int:
    return _width[0]


def set_width(value: int) -> None:
    _width[0] = max(20, value)


REPR_SECONDS = 2.0


def safe_repr(value: object) -> str:
    try:
        with time_limit(REPR_SECONDS):
            return repr(value)
    except TimeLimitExceeded:
        return f"<repr of {type(value).__name__} took over {REPR_SECONDS:g} s>"
    except Exception as error:  # noqa: BLE001 - user objects
        return f"<repr failed: {type(error).__name__}: {error}>"


def exception_text(error: BaseException) -> str:
    """str(error), else its repr where that is empty or raises (a user exception)."""
    try:
        with time_limit(REPR_SECONDS):
            text = str(error)
    except Exception:  # noqa: BLE001 - user objects; TimeLimitExceeded too
        text = ""
    return text or safe_repr(error)


def cut(text: str, width: int | None = None) -> str:
    """One line of at most ~width characters; a cut shows … and the full length."""
    width = width or _width[0]
    text = text.replace("\n", " ")
    if len(text) <= width:
        return text
    return f"{text[:width - 1]}… ({len(text)} chars)"


def _tensor_type():  # type: ignore[no-untyped-def]
    torch = sys.modules.get("torch")
    return None if torch is None else torch.Tensor


def type_name(value: object) -> str:
    """The type column of stack and locals listings: empty where the summary
    already names it (tensors, NULL); a recorded summary's type."""
    if isinstance(value, Summary):
        return value.type_name
    tensor = _tensor_type()
    if value is NULL or tensor is not None and isinstance(value, tensor):
        return ""
    return type(value).__name__


def tensor_summary(t) -> str:  # type: ignore[no-untyped-def]
    """`Tensor f32[3, 4] cpu grad [0, 1, 2, 3, …]` without formatting the whole tensor."""
    try:
        dtype = _DTYPE_SHORT.get(str(t.dtype).replace("torch.", ""), str(t.dtype))
        text = f"{type(t).__name__} {dtype}{list(t.shape)} {t.device.type}"
        if t.requires_grad:
            text += " grad"
        torch = sys.modules["torch"]
        if type(t) in (torch.Tensor, torch.nn.Parameter) and t.device.type != "meta":
            flat = t.detach().reshape(-1)
            shown = flat[:4].tolist()
            items = ", ".join(_number(v) for v in shown)
            text += f" [{items}{', …' if flat.numel() > 4 else ''}]"
        return text
    except Exception as error:  # noqa: BLE001
        return f"<tensor summary failed: {type(error).__name__}>"


def _number(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def summarize(value: object, width: int | None = None) -> str:
    if value is NULL:
        return "<NULL>"
    tensor = _tensor_type()
    if tensor is not None and isinstance(value, tensor):
        return cut(tensor_summary(value), width)
    return cut(safe_repr(value), width)
