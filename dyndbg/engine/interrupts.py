"""Ctrl-C: while generated code runs it stops at the next generated
instruction; anywhere else it is the program's KeyboardInterrupt, as without
dyndbg."""
from __future__ import annotations

import signal
import threading
import types
from typing import Callable, Protocol

from dyndbg.ownframes import is_own_frame


class InterruptTarget(Protocol):
    """What the handler asks of the engine."""

    detached: bool
    at_prompt: bool
    in_condition: bool

    def generated_frames(self, frame: types.FrameType | None) -> list[types.FrameType]: ...
    def step_into(self, frames: list[types.FrameType]) -> None: ...


class Interrupts:
    def __init__(self, target: InterruptTarget, message: Callable[[str], None]) -> None:
        self._target = target
        self._message = message
        self._installed = False

    def install(self) -> None:
        """Only in the main thread, and only over Python's default handler."""
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self.on_sigint)
            self._installed = True

    def restore(self) -> None:
        if self._installed and signal.getsignal(signal.SIGINT) == self.on_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self._installed = False

    def on_sigint(self, signum: int, frame: types.FrameType | None) -> None:
        target = self._target
        generated = target.generated_frames(frame)
        running_ours = frame is not None and is_own_frame(frame)
        if target.detached or target.at_prompt or target.in_condition \
                or not (generated or running_ours):
            signal.default_int_handler(signum, frame)  # KeyboardInterrupt, as without dyndbg
        self._message("dyndbg: interrupted; stopping at the next generated instruction")
        target.step_into(generated)
