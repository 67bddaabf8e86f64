"""Short, safe summaries of runtime values for stops, stacks and locals.

A summary never reprs a whole large tensor and never lets a user object's
failing __repr__ escape.
"""
from __future__ import annotations

import sys

from dyndbg.cpython import NULL
from dyndbg.engine.recording.recorded_values import Summary
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


def _tensor_type():
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


def tensor_summary(t) -> str:
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
    return cut(container_repr(value) or safe_repr(value), width)


# -- containers of tensors, at every stop ------------------------------------------------------
# A stop's stack line shows each value's repr cut to the width, with its full
# length: a list of tensors (dynamo's graph outputs) is repr'd whole, and
# torch formats a tensor in hundreds of microseconds. Stepping sees the same
# tensors stop after stop, so their text is kept, keyed by everything torch's
# repr depends on, their bytes included: the text is the repr, never an old one.
_ATOMS = (type(None), bool, int, float, str)
_CONTAINERS = (list, tuple, dict)
_TENSOR_TEXTS: dict[tuple, str] = {}
_TENSOR_TEXTS_HELD = 512
_SMALL_TENSOR = 4096          # elements; larger ones are formatted each time


def container_repr(value: object) -> str | None:
    """repr(value) for a list, tuple or dict (nested up to 3 deep) of tensors and
    plain atoms, formatting each distinct tensor once; None for anything else."""
    if type(value) not in _CONTAINERS or _tensor_type() is None:
        return None
    try:
        return _container_text(value, 0, set())
    except Exception:  # noqa: BLE001 - a tensor torch cannot read here: the plain repr
        return None


def _container_text(value: object, depth: int, path: set[int]) -> str | None:
    kind = type(value)
    if kind in _ATOMS:
        return repr(value)
    if kind is _tensor_type():
        return _tensor_text(value)
    if kind not in _CONTAINERS or depth >= 3 or id(value) in path:
        return None   # a cycle too: Python's own repr writes it
    path.add(id(value))
    if kind is dict:
        parts = []
        for key, item in value.items():  # type: ignore[attr-defined]  # kind is dict
            key_text, item_text = _container_text(key, depth + 1, path), \
                _container_text(item, depth + 1, path)
            if key_text is None or item_text is None:
                return None
            parts.append(f"{key_text}: {item_text}")
        text = "{" + ", ".join(parts) + "}"
    else:
        items = [_container_text(item, depth + 1, path) for item in value]  # type: ignore[attr-defined]  # a list, tuple or set
        if None in items:
            return None
        if kind is list:
            text = "[" + ", ".join(items) + "]"   # type: ignore[arg-type]  # no None left (checked above)
        else:
            text = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # type: ignore[arg-type]  # no None left (checked above)
    path.discard(id(value))
    return text


def _tensor_text(t) -> str:
    torch = sys.modules["torch"]
    if t.layout is not torch.strided or t.device.type != "cpu" or t.numel() > _SMALL_TENSOR \
            or t.is_quantized or any(name is not None for name in getattr(t, "names", ())):
        return safe_repr(t)
    options = torch._tensor_str.PRINT_OPTS
    grad_fn = t.grad_fn
    key = (t.dtype, tuple(t.shape), t.requires_grad,
           None if grad_fn is None else type(grad_fn).__name__, t.is_neg(), t.is_conj(),
           torch.get_default_dtype(), options.precision, options.threshold,
           options.edgeitems, options.linewidth, options.sci_mode,
           t.detach().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    text = _TENSOR_TEXTS.get(key)
    if text is None:
        text = safe_repr(t)
        if len(_TENSOR_TEXTS) >= _TENSOR_TEXTS_HELD:
            _TENSOR_TEXTS.clear()
        _TENSOR_TEXTS[key] = text
    return text
