"""Breakpoint conditions, evaluated in the frame that hit the breakpoint."""
from __future__ import annotations

import types
from typing import Callable

from dyndbg.engine.control import ConditionInterrupted


class Conditions:
    """Each condition text is compiled once; `running` is true while one runs
    (Ctrl-C then interrupts the condition, not the program)."""

    def __init__(self) -> None:
        self._compiled: dict[str, types.CodeType] = {}
        self.running = False

    def evaluate(self, frame: types.FrameType, expression: str,
                 stack: Callable[[], list[object] | None]) -> bool:
        """`expression` in `frame`; `__frame__` and `__stack__` (the value stack,
        read only when named) are there too."""
        code = self._compiled.get(expression)
        if code is None:
            code = self._compiled[expression] = compile(expression, "<condition>", "eval")
        names = code.co_names
        namespace = frame.f_locals  # read only: no copy needed without extras
        if "__frame__" in names or "__stack__" in names:
            namespace = dict(namespace)
            namespace["__frame__"] = frame
            if "__stack__" in names:
                values = stack()
                namespace["__stack__"] = list(values) if values is not None else []
        # No timer here (it would cost more than the check): Ctrl-C interrupts a
        # condition that never ends, and it then counts as raised (a stop).
        self.running = True
        try:
            return bool(eval(code, frame.f_globals, namespace))
        except KeyboardInterrupt:
            raise ConditionInterrupted("interrupted by Ctrl-C") from None
        finally:
            self.running = False
