"""When dynamo skips a frame: its compile ends in an exception torch
suppresses, and the function runs eagerly instead. Torch suppresses its
"soft" failures (`Unsupported`, `UserError`: a graph break it cannot resume
from, such as one in a loop, which its graph_breaks log reports as a skip)
always, and any other error only under `config.suppress_errors`; with
`fullgraph=True` (error_on_graph_break) it raises them into the program
instead, and nothing is skipped.

Torch suppresses them in one place, `ConvertFrame.__call__`
(torch/_dynamo/convert_frame.py, the same on torch 2.13-2.15), and only
there calls `format_error_msg(e, code, record_filename, frame)`, to log the
error at INFO (not shown unless asked for). dyndbg wraps that module
global: the wrapper returns what torch's own returns, then tells dyndbg,
catching everything. Torch then marks the code to be skipped from now on:
each later call runs it eagerly, its older cache entries unused, unless the
exception says otherwise (`frame_exec_strategy`: the recompile limit, which
compiles/give_ups.py tells; on 2.15 `apply_to_code` False: this call only).

What is read from the exception: `gb_type` (the break that made dynamo
skip), `msg` (torch's text: the chain of breaks, first to last, each with
its explanation, hints and link), `real_stack` (the user's stack at the
first break), `compile_id`, `frame_exec_strategy`, `apply_to_code`.
"""
from __future__ import annotations

import enum
import functools
import traceback
import types
from typing import Any, Callable, NamedTuple

from dyndbg.dynamo.compiles.breaks import BreakReason
from dyndbg.dynamo.names import is_resume_name

_WRAPPED = "format_error_msg"    # convert_frame's name for the function wrapped
_ORIGINAL = "_dyndbg_wraps"      # on the wrapper: torch's own function


class SkipScope(enum.Enum):
    FOR_GOOD = "from now on"     # torch marks the code: every later call runs eagerly
    THIS_CALL = "this call"      # torch 2.15's apply_to_code False: dynamo tries again next call


class FrameSkip(NamedTuple):
    """Torch's account of one frame it skipped."""

    code: types.CodeType             # the code dynamo skipped
    compile_id: str | None           # "1/0", the compile that failed
    graph_break: bool                # torch's soft failure (a graph break), else a suppressed error
    kind: str                        # the break that made dynamo skip, or the error's class
    reason: BreakReason              # torch's text, and the user's stack at the first break
    scope: SkipScope

    @property
    def function(self) -> str:
        """`'f' (/path/file.py:12)`, as torch names a function in its warnings."""
        return f"'{self.code.co_name}' ({self.code.co_filename}:{self.code.co_firstlineno})"

    @property
    def is_resume(self) -> bool:
        """A resume function: dynamo's own code, which dyndbg stops in even uncompiled."""
        return is_resume_name(self.code.co_name)

    @property
    def cause(self) -> str:
        """Torch's reason and the user's line: `graph break in loop (GB7000); the
        first break: Failed to trace builtin operator (GB0059) at f.py:7: print(i)`."""
        reason = self.reason
        first = _named(reason.summary, reason.gb_id) + self._line
        if not self.graph_break:
            return f"{self.kind}: {first}"
        if self.kind == reason.summary:
            return first
        return f"{_named(self.kind, self._last_gb_id)}; the first break: {first}"

    @property
    def _last_gb_id(self) -> str | None:
        """The GB id torch links to in the last break's own part of the text."""
        text = self.reason.text
        after = BreakReason(text[text.rfind(self.kind):], ()).gb_ids
        return after[0] if after else None

    @property
    def _line(self) -> str:
        source = f": {self.reason.source}" if self.reason.source else ""
        return f" at {self.reason.where}{source}" if self.reason.user_stack else ""

    @property
    def what(self) -> str:
        return "a graph break it cannot resume from" if self.graph_break else \
            "an error it suppressed (config.suppress_errors)"

    @property
    def runs(self) -> str:
        return "it runs eagerly from now on" if self.scope is SkipScope.FOR_GOOD else \
            "this call runs eagerly"

    @property
    def at(self) -> str:
        """`[0/0] at a graph break it cannot resume from`: the compile and what ended it."""
        return (f"[{self.compile_id}] " if self.compile_id else "") + f"at {self.what}"

    def one_line(self) -> str:
        stops = "" if self.scope is not SkipScope.FOR_GOOD else \
            ", uncompiled (dyndbg still stops in it: a resume function is dynamo's code)" \
            if self.is_resume else " and no longer stops here"
        return (f"dyndbg: dynamo skipped {self.function} {self.at}, so {self.runs}{stops}; "
                f"torch's reason: {self.cause}")


def _named(name: str, gb_id: str | None) -> str:
    return f"{name} ({gb_id})" if gb_id else name


def skip_of(error: BaseException, code: types.CodeType) -> FrameSkip | None:
    """Torch's suppressed `error` for `code`, as a FrameSkip; None where the
    exception directs another way to run the frame (the recompile limit)."""
    from torch._dynamo.exc import Unsupported, UserError
    if getattr(error, "frame_exec_strategy", None) is not None:
        return None
    graph_break = isinstance(error, (Unsupported, UserError))
    text = str(getattr(error, "msg", None) or error)
    stack = tuple(getattr(error, "real_stack", None) or ())
    kind = str(getattr(error, "gb_type", None) or "") if graph_break else type(error).__name__
    reason = BreakReason(text, tuple(f for f in stack if isinstance(f, traceback.FrameSummary)))
    scope = SkipScope.FOR_GOOD if getattr(error, "apply_to_code", True) else SkipScope.THIS_CALL
    cid = getattr(error, "compile_id", None)
    return FrameSkip(code, None if cid is None else str(cid), graph_break,
                     kind or reason.summary, reason, scope)


_LISTENERS: list[Callable[[FrameSkip], None]] = []


def listen(tell: Callable[[FrameSkip], None]) -> bool:
    """Tell `tell` of each skip from now on; False where this torch lacks
    what is wrapped (nothing is told then)."""
    from torch._dynamo import convert_frame
    current = getattr(convert_frame, _WRAPPED, None)
    if current is None:
        return False
    if not hasattr(current, _ORIGINAL):
        setattr(convert_frame, _WRAPPED, _wrapping(current))
    _LISTENERS.append(tell)
    return True


def stop_listening(tell: Callable[[FrameSkip], None]) -> None:
    """The last listener gone, torch's own function is back in place."""
    from torch._dynamo import convert_frame
    if tell in _LISTENERS:
        _LISTENERS.remove(tell)
    current = getattr(convert_frame, _WRAPPED, None)
    if not _LISTENERS and hasattr(current, _ORIGINAL):
        setattr(convert_frame, _WRAPPED, getattr(current, _ORIGINAL))


def _wrapping(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def format_error_msg(error: Any, code: Any, *args: Any, **kwargs: Any) -> Any:
        """torch's own, then each listener told of the skip."""
        text = original(error, code, *args, **kwargs)
        try:
            skip = skip_of(error, code) if isinstance(code, types.CodeType) else None
            if skip is not None:
                for tell in list(_LISTENERS):
                    tell(skip)
        except Exception:  # noqa: BLE001 - torch's suppression must go on
            pass
        return text
    setattr(format_error_msg, _ORIGINAL, original)
    return format_error_msg
