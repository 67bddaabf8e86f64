"""Torch's state at a call, for evaluating guards after the fact.

Dynamo runs a cache entry only when all its guards pass, so the state its
GLOBAL_STATE guard recorded (`___check_global_state() against {JSON}` on torch
2.13-2.15: grad mode, autocast, default dtype...) is the state of every call
that ran it. The process's state can differ by the time `guards` runs: post
mortem, the `with torch.no_grad()` (autocast, inference_mode) the call ran in
has exited; under `up`, newer code may have changed grad mode. So guards/entries.py
evaluates against that record: GLOBAL_STATE guards by comparing records
(`changed`), the others with the record's thread-local part applied around the
check and restored after it (`applied`), since tensor guards see autocast and
inference mode through the thread's dispatch keys.

Inference mode is not in the record, only the grad mode it implies; guards/entries.py
takes it as the setting under which the running entry's own guards pass.
"""
from __future__ import annotations

import contextlib
import json
from typing import Iterator

# The order of torch's record arrays: at::autocast::_AUTOCAST_SUPPORTED_DEVICES
# (torch 2.13-2.15). `applied` checks the result, so a different order is noticed.
AUTOCAST_DEVICES = ("cpu", "cuda", "mtia", "maia", "xpu", "ipu", "hpu", "xla",
                    "privateuseone", "mps")
# The record names dtypes by c10::ScalarType number; the ones autocast uses.
_SCALAR_TYPES = {5: "float16", 6: "float32", 7: "float64", 15: "bfloat16"}
# The parts of the record a thread sets (the rest is process-wide: compared only).
THREAD_FIELDS = ("grad_mode", "autocast_state")
_MARKER = " against "


def recorded(code: str) -> dict | None:
    """The state a GLOBAL_STATE guard's code records; None if it records none."""
    _, marker, text = code.partition(_MARKER)
    if not marker:
        return None
    try:
        state = json.loads(text)
    except ValueError:
        return None
    return state if isinstance(state, dict) else None


def current() -> dict | None:
    """The calling thread's state now, as torch records it for GLOBAL_STATE."""
    try:
        from torch._C._dynamo.guards import GlobalStateGuard
        text = GlobalStateGuard().__getstate__()
        state = json.loads(text) if isinstance(text, str) else None
    except Exception:  # noqa: BLE001 - a torch without the record
        return None
    return state if isinstance(state, dict) else None


def changed(expected: dict, actual: dict) -> list[str]:
    """What differs between two records, named as torch's own reason names it
    (`GLOBAL_STATE changed: grad_mode`, `autocast(cpu)_enabled`)."""
    names = []
    for key in sorted(set(expected) | set(actual)):
        if expected.get(key) == actual.get(key):
            continue
        if key == "autocast_state" and isinstance(expected.get(key), dict) \
                and isinstance(actual.get(key), dict):
            names += _autocast_changes(expected[key], actual[key])
        else:
            names.append(key)
    return names


def _autocast_changes(expected: dict, actual: dict) -> list[str]:
    names = []
    for field in ("enabled", "dtype"):
        mine, theirs = expected.get(field) or [], actual.get(field) or []
        for index in range(max(len(mine), len(theirs))):
            if index >= len(mine) or index >= len(theirs) or mine[index] != theirs[index]:
                device = AUTOCAST_DEVICES[index] if index < len(AUTOCAST_DEVICES) else index
                names.append(f"autocast({device})_{field}")
    if expected.get("cached_enabled") != actual.get("cached_enabled"):
        names.append("autocast_cache_enabled")
    return names


def thread_differs(state: dict, inference: bool | None = None) -> bool:
    """Whether applying `state` (and `inference`) would change this thread's state."""
    now = current()
    if now is None:
        return False
    if inference is not None and inference != _inference_now():
        return True
    return any(now.get(key) != state.get(key) for key in THREAD_FIELDS)


def _inference_now() -> bool:
    import torch
    return bool(torch.is_inference_mode_enabled())


def inference_now() -> bool | None:
    """Whether inference mode is on in this thread (None if torch cannot say)."""
    try:
        return _inference_now()
    except Exception:  # noqa: BLE001
        return None


@contextlib.contextmanager
def applied(state: dict, inference: bool | None = None) -> Iterator[bool]:
    """Inside: this thread's grad mode and autocast as `state` records them (and
    inference mode as `inference`, unless None); restored on leaving. Yields
    whether the thread now matches the record; where it cannot be made to (a
    torch whose record reads differently), nothing is changed and it yields False.

    Only thread-local state is set: the program is stopped in this thread, and
    other threads never see it."""
    if not thread_differs(state, inference):
        yield True
        return
    with contextlib.ExitStack() as undo:
        try:
            _apply(state, inference, undo)
            now = current()
            matches = now is not None and all(now.get(k) == state.get(k) for k in THREAD_FIELDS)
        except Exception:  # noqa: BLE001 - restore what was set, evaluate as now
            matches = False
        if not matches:
            undo.close()
        yield matches


def _apply(state: dict, inference: bool | None, undo: contextlib.ExitStack) -> None:
    import torch
    if inference is not None and inference != _inference_now():
        # First: inference mode sets grad mode and the dispatch keys itself.
        undo.enter_context(torch.inference_mode(inference))
    grad = state.get("grad_mode")
    if isinstance(grad, bool) and grad != torch.is_grad_enabled():
        undo.enter_context(torch.set_grad_enabled(grad))   # sets now, restores on exit
    autocast = state.get("autocast_state")
    if isinstance(autocast, dict):
        _apply_autocast(autocast, undo)


def _apply_autocast(autocast: dict, undo: contextlib.ExitStack) -> None:
    import torch
    enabled, dtypes = autocast.get("enabled") or [], autocast.get("dtype") or []
    for device, on, number in zip(AUTOCAST_DEVICES, enabled, dtypes):
        was_on, was_dtype = torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)
        dtype = getattr(torch, _SCALAR_TYPES.get(number, ""), None)
        if dtype is not None and dtype != was_dtype:
            undo.callback(torch.set_autocast_dtype, device, was_dtype)
            torch.set_autocast_dtype(device, dtype)
        if bool(on) != was_on:
            undo.callback(torch.set_autocast_enabled, device, was_on)
            torch.set_autocast_enabled(device, bool(on))
    cached = autocast.get("cached_enabled")
    if isinstance(cached, bool) and cached != torch.is_autocast_cache_enabled():
        undo.callback(torch.set_autocast_cache_enabled, torch.is_autocast_cache_enabled())
        torch.set_autocast_cache_enabled(cached)
