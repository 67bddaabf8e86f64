"""What the compiled core's trace functions may do without the engine's
Python code, granted per generated code when a tracing mechanism asks
(settrace.py, monitoring.py):

- `record`: while the engine only records (`record on`, continuing, no
  trace), record each instruction with History's compiled record; only the
  armed offsets still go to Engine.on_instruction.
- `condition_checks`: while the engine neither steps nor records nor
  traces, evaluate a lone breakpoint's condition and count the hit when it
  is false (breakpoints.condition_checks).

Nothing is granted on the Python core, nor while the engine must see every
instruction (stepping, `trace on`, fault injection).
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple

from dyndbg.engine.breakpoints import BreakpointTable, ConditionCheck
from dyndbg.engine.codeinfo import CodeInfo
from dyndbg.engine.conditions import Conditions
from dyndbg.engine.recording.history import History, RecordSpec
from dyndbg.engine.policy import TracePolicy
from dyndbg.faults import FAULTS_ON

if TYPE_CHECKING:
    from dyndbg.dynamo import DynamoHooks, GeneratedCode


class FastRecord(NamedTuple):
    """FastPaths.record: recording one code's instructions in the
    mechanism, without the engine (the compiled core)."""

    record: Callable[[types.FrameType, RecordSpec], int]   # History's compiled record(frame, spec)
    spec: RecordSpec                                        # its spec for the code
    armed: Mapping[int, object]                         # offsets that go to on_instruction
    after: Callable[[int], None]                        # History.after_record(result)


class FastInstructions(NamedTuple):
    """What the compiled INSTRUCTION callback of sys.monitoring needs for one
    code (monitoring.py's `fast`; engine/tracing/_monitoring.c reads it by
    index): while the engine only records, the recording (record, spec,
    after); while it does not, the condition checks. The `slow` offsets go
    to the engine."""

    record: Callable[[types.FrameType, RecordSpec], int] | None   # as FastRecord's
    spec: RecordSpec | None
    slow: frozenset[int]
    after: Callable[[int], None] | None
    checks: Mapping[int, ConditionCheck]


# `fast`'s entry for a code whose every instruction goes to the engine
EVERY_INSTRUCTION: tuple[()] = ()


class FastPaths:
    def __init__(self, stepping: Callable[[], bool], policy: TracePolicy, history: History,
                 breakpoints: BreakpointTable, conditions: Conditions, hooks: "DynamoHooks",
                 info_for: Callable[["GeneratedCode"], CodeInfo]) -> None:
        self._stepping = stepping           # the engine's mode steps
        self._policy = policy
        self._history = history
        self._breakpoints = breakpoints
        self._conditions = conditions
        self._hooks = hooks
        self._info_for = info_for

    def _continuing_untraced(self) -> bool:
        """Neither stepping nor `trace on` (nor fault injection): an
        instruction may be answered without Engine.on_instruction."""
        return not (FAULTS_ON or self._stepping() or self._policy.instruction_trace)

    def record(self, entry: "GeneratedCode") -> FastRecord | None:
        """What a compiled mechanism needs to record the entry's instructions
        itself, sending only the armed ones to on_instruction; None when it
        may not, or on the Python core."""
        if not self._continuing_untraced() or not self._history.on:
            return None
        record = self._history.compiled_record
        if record is None:
            return None
        info = self._info_for(entry)
        return FastRecord(record, self._history.spec(entry, info),
                          self._breakpoints.armed(entry, info), self._history.after_record)

    def condition_checks(self, entry: "GeneratedCode") -> dict[int, ConditionCheck]:
        """The armed offsets of the entry's code where a compiled mechanism
        may evaluate the breakpoint's condition itself; empty when it may not."""
        if not self._continuing_untraced() or self._history.on:
            return {}
        checks = self._breakpoints.condition_checks(entry, self._info_for(entry),
                                                    self._conditions.plain_code)
        # Evaluated from C, with no shielded Python frame of dyndbg's below.
        self._hooks.shield(*(check.code for check in checks.values()))
        return checks
