"""sys.monitoring: a resume function that dynamo declined to compile runs
without torch's C callback, so its code gets its events as generated code
calls it. A CALL event names the callable; on 3.12 a CALL_FUNCTION_EX (how
dynamo calls resume functions) gives no CALL event, and its callable is read
off the value stack at its INSTRUCTION event instead."""
from __future__ import annotations

import types
from typing import Callable

from dyndbg.cpython import StackUnavailable, call_site, read_value_stack
from dyndbg.cpython.tracing import function_ex_calls
from dyndbg.dynamo import GeneratedCode, Registry, is_resume_name


class ResumeCalls:
    def __init__(self, registry: Registry, detached: Callable[[], bool],
                 ensure: Callable[[GeneratedCode], None]) -> None:
        self._registry = registry
        self._detached = detached      # the session ended: nothing more is watched
        self._ensure = ensure          # gives a generated code its events
        self._function_ex: dict[int, dict[int, int]] = {}  # id(code) -> its CALL_FUNCTION_EXs

    def watch(self, function: object) -> None:
        """`function` is about to be called by generated code: if it is a resume
        function dynamo declined to compile, its code gets its events."""
        target = getattr(function, "__code__", None)
        if isinstance(target, types.CodeType) and is_resume_name(target.co_name) \
                and not self._registry.has_transform(target):
            entry = self._registry.get(target)
            if entry is not None and not self._detached():
                self._ensure(entry)

    def function_ex_calls(self, code: types.CodeType) -> dict[int, int]:
        """3.12: offset -> argument of each CALL_FUNCTION_EX in `code`."""
        calls = self._function_ex.get(id(code))
        if calls is None:
            calls = self._function_ex[id(code)] = function_ex_calls(code)
        return calls

    def before_function_ex(self, code: types.CodeType, offset: int,
                           frame: types.FrameType) -> None:
        """3.12, at an INSTRUCTION event of code that may call a resume
        function: if it is a CALL_FUNCTION_EX, its callable is watched."""
        calls = self.function_ex_calls(code)
        if offset in calls:
            try:
                site = call_site("CALL_FUNCTION_EX", calls[offset], read_value_stack(frame))
            except StackUnavailable:
                return
            if site is not None:
                self.watch(site.function)
