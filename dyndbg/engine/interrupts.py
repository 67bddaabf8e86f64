"""Ctrl-C, as in pdb: the first one while the program runs stops at the next
generated instruction to run (in the frame it landed in, if that is generated
code); a second one before that stop is the program's KeyboardInterrupt, as
without dyndbg.

Python runs signal handlers in the main thread only: a Ctrl-C while the
program runs stops at the next generated instruction of any thread; one
while dyndbg is stopped in another thread (its prompt, or a breakpoint
condition there) is not the main thread's to take, and is ignored."""
from __future__ import annotations

import signal
import types
from typing import Callable, Protocol

from dyndbg.engine.threads import engine_busy_elsewhere, in_main_thread
from dyndbg.ownframes import is_own_frame


class InterruptTarget(Protocol):
    """What the handler asks of the engine."""

    detached: bool
    @property
    def at_prompt(self) -> bool: ...

    @property
    def in_condition(self) -> bool: ...

    def stop_soon(self, frame: types.FrameType | None, caller: str = "") -> None: ...


class Interrupts:
    def __init__(self, target: InterruptTarget, message: Callable[[str], None]) -> None:
        self._target = target
        self._message = message
        self._installed = False
        self.pending = False    # a Ctrl-C asked for a stop that has not come yet

    def install(self) -> None:
        """Only in the main thread, and only over Python's default handler."""
        if in_main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self.on_sigint)
            self._installed = True

    def restore(self) -> None:
        """Python's handler again. Only the main thread may set it: detached from
        another thread, ours stays and acts as Python's (on_sigint)."""
        if self._installed and in_main_thread() and \
                signal.getsignal(signal.SIGINT) == self.on_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False

    def on_sigint(self, signum: int, frame: types.FrameType | None) -> None:
        target = self._target
        if (target.at_prompt or target.in_condition) and not target.detached \
                and engine_busy_elsewhere():
            doing = "stopped" if target.at_prompt else "evaluating a breakpoint condition"
            self._message(f"dyndbg: Ctrl-C ignored: dyndbg is {doing} in another thread")
            return
        if target.detached or target.at_prompt or target.in_condition or self.pending:
            self.pending = False
            signal.default_int_handler(signum, frame)  # KeyboardInterrupt, as without dyndbg
        self.pending = True
        self._message("dyndbg: interrupted; stopping at the next generated instruction "
                      "(Ctrl-C again to interrupt the program)")
        while frame is not None and is_own_frame(frame):
            frame = frame.f_back    # where the program was, for the stop's first line
        target.stop_soon(frame, "Ctrl-C")
