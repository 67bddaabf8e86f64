"""What a stop shows the commands: its frames (the innermost selected,
`up`/`down` move), their locals and value stacks, a recorded point's in
their place, and Python run there; while dynamo compiles, the symbolic
locals instead (commands/compile_stops.py). Session (session.py) is a StopView."""
from __future__ import annotations

import collections
import contextlib
import sys
import types
from typing import TYPE_CHECKING, TextIO

from dyndbg.engine.stop import Stop
from dyndbg.ownframes import is_own_frame
from dyndbg.ui.commands.history import summarized_names
from dyndbg.ui.commands.host import PastView
from dyndbg.ui.text.values import safe_repr

if TYPE_CHECKING:
    from dyndbg.engine.debugger import Engine
    from dyndbg.engine.stop import CompileStop


class StopView:
    """The stop's frames and values, for the session that holds them."""

    out: TextIO
    engine: "Engine"
    frames: list[types.FrameType]
    selected: int
    past: PastView | None
    _locals: dict[int, dict]
    _past_locals: tuple[int, dict] | None

    @property
    def stop(self) -> Stop | None:
        raise NotImplementedError

    @property
    def compile_stop(self) -> CompileStop | None:
        raise NotImplementedError

    def write(self, text: str = "") -> None:
        raise NotImplementedError

    def error(self, text: str) -> None:
        raise NotImplementedError

    # -- frames -------------------------------------------------------------------------
    @staticmethod
    def _frame_list(frame: types.FrameType) -> list[types.FrameType]:
        """Frames from the script's top to `frame`, without dyndbg's own."""
        frames = []
        current: types.FrameType | None = frame
        while current is not None:
            if is_own_frame(current):
                break
            frames.append(current)
            current = current.f_back
        return frames[::-1]

    @property
    def frame(self) -> types.FrameType:
        return self.frames[self.selected]

    def frame_locals(self, frame: types.FrameType | None = None) -> dict:
        """f_locals read once per stop: reading it again would undo assignments.
        At a recorded point (and no frame named), the locals recorded there."""
        if self.past is not None and frame is None:
            seq = self.past.record.seq
            if self._past_locals is None or self._past_locals[0] != seq:
                self._past_locals = (seq, self.past.record.locals())
            return self._past_locals[1]
        frame = frame or self.frame
        cached = self._locals.get(id(frame))
        if cached is None:
            cached = self._locals[id(frame)] = frame.f_locals
        return cached

    def traceback_lasti(self, frame: types.FrameType) -> int | None:
        """Post mortem: the frame's instruction as the traceback gives it (it has unwound)."""
        if self.stop is None or not self.stop.frames:
            return None
        return next((lasti for f, lasti in self.stop.frames if f is frame), None)

    def frame_stack(self) -> tuple[list[object] | None, str]:
        """The value stack of the selected frame, or None and why not."""
        assert self.stop is not None
        if self.past is not None:
            return list(self.past.record.stack), self.past.note()
        frame = self.frame
        if frame is self.stop.frame:
            return self.stop.stack, self.stop.stack_note
        if self.engine.registry.is_generated(frame.f_code):
            if self.stop.frames is not None:  # post mortem: the frame has unwound
                return None, "not recorded for this frame (it has finished)"
            stack = self.engine.snapshots.suspended(frame)
            if stack is not None:
                return stack, "what the frame holds while suspended in the call its current instruction makes"
            return None, "not readable for this frame"
        return None, "not a dynamo-generated frame; its stack is not tracked"

    # -- evaluation -----------------------------------------------------------------------
    def namespace(self) -> collections.ChainMap:
        """The selected frame's locals (writes go there), then __stack__,
        __frame__ and __exception__; while dynamo compiles, the symbolic ones
        (SymbolicState.namespace)."""
        if self.compile_stop is not None:
            return collections.ChainMap({}, self.compile_stop.state.namespace())
        stack, _ = self.frame_stack()
        assert self.stop is not None
        exc = self.stop.exception if self.past is None else None
        extras = {"__stack__": list(stack) if stack is not None else [],
                  "__frame__": self.frame if self.past is None else None,
                  # as pdb: (type, value) while stopped at an exception
                  "__exception__": None if exc is None else (type(exc), exc)}
        return collections.ChainMap(self.frame_locals(), extras)

    def frame_globals(self) -> dict:
        """The module globals expressions see (a recorded point's: its frame's module)."""
        if self.compile_stop is not None:
            return self.compile_stop.state.globals()
        return self.past.record.globals if self.past is not None else self.frame.f_globals

    def reading(self) -> contextlib.AbstractContextManager:
        """Around running an expression: at a stop while dynamo compiles, one
        that cannot realize what dynamo has not (SymbolicState.read_only)."""
        return self.compile_stop.state.read_only() if self.compile_stop is not None else \
            contextlib.nullcontext()

    def evaluate(self, expression: str) -> object:
        namespace = self.namespace()
        try:
            with self.reading():
                return eval(expression, self.frame_globals(), namespace)
        except Exception as error:
            summarized = summarized_names(expression, namespace) if self.past else ""
            if summarized:
                raise type(error)(f"{error} ({summarized})") from None
            raise

    def run_python(self, source: str) -> None:
        try:
            code = compile(source + "\n", "<dyndbg>", "single")
        except (SyntaxError, ValueError):  # ValueError: NUL bytes
            self.error(f"unknown command or invalid Python: {source!r} (try 'help')")
            return
        saved = sys.stdout, sys.displayhook
        try:
            sys.stdout = self.out
            sys.displayhook = self._displayhook
            with self.reading():
                exec(code, self.frame_globals(), self.namespace())
        except Exception as error:  # noqa: BLE001 - user code
            self.error(f"{type(error).__name__}: {error}")
        finally:
            sys.stdout, sys.displayhook = saved

    def _displayhook(self, value: object) -> None:
        # Like pdb's: print the value without touching builtins._
        if value is not None:
            self.write(safe_repr(value))
