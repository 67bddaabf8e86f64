"""Breakpoint conditions, evaluated in the frame that hit the breakpoint."""
from __future__ import annotations

import types
from typing import Callable, NamedTuple, Protocol

from dyndbg.engine.exceptions import ConditionInterrupted


class Outcome(NamedTuple):
    """A condition the compiled core evaluated and found true or raising
    (engine/tracing/_fast_paths.h): hit() takes it instead of evaluating again."""

    frame_id: int
    lasti: int
    expression: str
    error: BaseException | None     # None: it was true


class GraphEvaluate(Protocol):
    """A condition in a compiled graph's frame: its locals, or `names` in
    their stead (what an inductor graph's frame holds that is true to read,
    dynamo/graphs/kernel_lines.condition_names)."""

    def __call__(self, frame: types.FrameType, expression: str,
                 names: dict | None = None) -> object: ...


class Conditions:
    """Each condition text is compiled once; `running` is true while one runs
    (Ctrl-C then interrupts the condition, not the program)."""

    Outcome = Outcome   # for the compiled core, which makes them

    def __init__(self) -> None:
        self._compiled: dict[str, types.CodeType] = {}
        self.running = False
        self.outcome: Outcome | None = None

    def _code(self, expression: str) -> types.CodeType:
        code = self._compiled.get(expression)
        if code is None:
            code = self._compiled[expression] = compile(expression, "<condition>", "eval")
        return code

    def plain_code(self, expression: str) -> types.CodeType | None:
        """The compiled condition, if it needs nothing but the frame's
        locals and globals (the compiled core evaluates those itself)."""
        try:
            code = self._code(expression)
        except SyntaxError:
            return None
        names = code.co_names
        return None if "__frame__" in names or "__stack__" in names else code

    def evaluate(self, frame: types.FrameType, expression: str,
                 stack: Callable[[], list[object] | None], local: dict | None = None) -> bool:
        """`expression` in `frame` (its locals, or `local` in their stead);
        `__frame__` and `__stack__` (the value stack, read only when named)
        are there too."""
        outcome, self.outcome = self.outcome, None
        if outcome is not None and outcome[:3] == (id(frame), frame.f_lasti, expression):
            if outcome.error is None:
                return True
            if isinstance(outcome.error, KeyboardInterrupt):
                raise ConditionInterrupted("interrupted by Ctrl-C") from None
            raise outcome.error
        code = self._code(expression)
        names = code.co_names
        namespace = frame.f_locals if local is None else local  # read only: no copy needed without extras
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
