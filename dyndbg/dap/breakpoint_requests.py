"""Breakpoints as the client sets them: each `set*Breakpoints` request
replaces the whole set of its kind (for a file: that file's), so dyndbg's
breakpoints are kept per kind and replaced together. The numbers are
dyndbg's (`hitBreakpointIds`, `b` in the console). A breakpoint on code
not compiled yet is answered `verified: false`, and a `breakpoint` event
says when it binds."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from dyndbg.dap.addresses import graph_of, parse_address
from dyndbg.dap.bytecode_source import serial_of_path
from dyndbg.dap.capabilities import ExceptionFilter
from dyndbg.dap.code_requests import FILE_REFERENCES
from dyndbg.dap.protocol import RequestError
from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.breakpoints import Breakpoint
from dyndbg.engine.targets import (BackwardCatchTarget, CatchTarget, InstructionTarget,
                                   LineTarget, Target)
from dyndbg.engine.nan_catch import NanCatchTarget
from dyndbg.ui.text.parsing import CommandError, check_condition, named_target

if TYPE_CHECKING:
    from dyndbg.dap.hub import Hub

FUNCTION = "function"
INSTRUCTION = "instruction"
REASONS = {FUNCTION: "function breakpoint", INSTRUCTION: "instruction breakpoint"}


class BreakpointRequests:
    def __init__(self, requests: "Hub") -> None:
        self.requests = requests
        self.stops_on_stepped_exceptions = True
        self._owned: dict[str, list[int]] = {}   # kind or file -> dyndbg numbers
        self._kind: dict[int, str] = {}          # number -> its kind (or file key)
        self._pending: set[int] = set()          # answered unverified, not bound yet
        self._catch: int | None = None           # the "raised" filter's catchpoint
        self._backward: int | None = None        # the "backward" filter's catchpoint
        self._nan: int | None = None             # the "nan" filter's catchpoint

    @property
    def table(self):
        return self.requests.engine.breakpoints

    @property
    def wants_exception_stops(self) -> bool:
        """The engine's exception stops are those of the default filter, or
        of `catch exception` (the "raised" filter)."""
        return self.stops_on_stepped_exceptions or self._catch is not None

    def reason_for(self, hit: list[Breakpoint]) -> str:
        kinds = {self._kind.get(bp.number, "") for bp in hit}
        for kind in (FUNCTION, INSTRUCTION):
            if kinds == {kind}:
                return REASONS[kind]
        return "breakpoint"

    # -- the requests ------------------------------------------------------------------------
    def r_setBreakpoints(self, arguments: dict) -> dict:
        source = arguments.get("source")
        if not isinstance(source, dict):
            raise RequestError("'source' must be an object")
        if arguments.get("breakpoints") is None:   # the older form: lines alone
            arguments = {"breakpoints": [{"line": line} for line in arguments.get("lines") or []]}
        wanted = _specs(arguments)
        entry = self._bytecode_entry(source)
        key = f"bytecode:{entry.serial}" if entry is not None else f"file:{source.get('path')}"
        if entry is None and not isinstance(source.get("path"), str):
            raise RequestError("'source' needs a 'path' (or a bytecode view's sourceReference)")

        def target_of(spec: dict) -> tuple[Target, dict]:
            line = spec.get("line")
            if not isinstance(line, int) or line < 1:
                raise _Unverified("'line' must be a positive integer")
            try:
                target = self._bytecode_target(entry, line) if entry is not None else \
                    LineTarget(source["path"], line)
            except RequestError as error:
                raise _Unverified(str(error), line) from None
            return target, {"line": line, "source": source}

        return self._replace(key, wanted, target_of)

    def r_setFunctionBreakpoints(self, arguments: dict) -> dict:
        def target_of(spec: dict) -> tuple[Target, dict]:
            name = spec.get("name")
            try:
                if not isinstance(name, str):
                    raise CommandError("'name' must be a string")
                return named_target(name.strip()), {}
            except CommandError as error:
                raise _Unverified(str(error)) from None

        return self._replace(FUNCTION, _specs(arguments), target_of)

    def r_setInstructionBreakpoints(self, arguments: dict) -> dict:
        def target_of(spec: dict) -> tuple[Target, dict]:
            reference = spec.get("instructionReference")
            parsed = parse_address(reference) if isinstance(reference, str) else None
            entry = self.requests.code.entry_of(parsed[0]) if parsed else None
            extra = spec.get("offset") or 0
            if parsed is not None and graph_of(parsed[0]) is not None:
                raise _Unverified(f"{reference!r} is a step of a compiled graph: instruction "
                                  "breakpoints are in generated code only (a line breakpoint "
                                  "on the step's user line stops in an eager or aot_eager graph)")
            if parsed is None or entry is None or not isinstance(extra, int):
                raise _Unverified(f"{reference!r} is not the address of generated code")
            try:
                target = self._instruction(entry, parsed[1] + extra)
            except RequestError as error:
                raise _Unverified(str(error)) from None
            return target, {"instructionReference": reference}

        return self._replace(INSTRUCTION, _specs(arguments), target_of)

    def r_setExceptionBreakpoints(self, arguments: dict) -> dict:
        filters = arguments.get("filters") or []
        if not isinstance(filters, list):
            raise RequestError("'filters' must be a list")
        known = {f.value for f in ExceptionFilter}
        unknown = [f for f in filters if f not in known]
        if unknown:
            raise RequestError(f"unknown exception filter {unknown[0]!r} (known: "
                               f"{', '.join(sorted(known))})")
        self.stops_on_stepped_exceptions = ExceptionFilter.STEPPED.value in filters
        self._catch = self._catchpoint(ExceptionFilter.RAISED.value in filters, self._catch,
                                       lambda: CatchTarget("exception"))
        self._backward = self._catchpoint(ExceptionFilter.BACKWARD.value in filters,
                                          self._backward, BackwardCatchTarget)
        self._nan = self._catchpoint(ExceptionFilter.NAN.value in filters, self._nan,
                                     NanCatchTarget)
        self.requests.engine.keep_failed_calls = ExceptionFilter.POST_MORTEM.value in filters
        self._rearm()
        return {"breakpoints": [{"verified": True} for _ in filters]}

    def _catchpoint(self, wanted: bool, number: int | None,
                    target: Callable[[], Target]) -> int | None:
        """An exception filter's catchpoint: added where wanted and not there,
        deleted where there and no longer wanted; its number, or None."""
        if wanted and number is None:
            return self.table.add(target()).number
        if not wanted and number is not None:
            self.table.delete(number)
            return None
        return number

    # -- the table ---------------------------------------------------------------------------
    def _replace(self, key: str, wanted: list[dict],
                 target_of: Callable[[dict], tuple[Target, dict]]) -> dict:
        """The answer to a `set*Breakpoints` request: KEY's breakpoints replaced by
        one for each spec, at target_of(spec)'s target (with what the answer shows
        of it), or answered unverified where target_of raises _Unverified."""
        self._forget(key)
        results = []
        for spec in wanted:
            try:
                target, shown = target_of(spec)
            except _Unverified as refused:
                results.append(_unverified(refused.message, refused.line))
                continue
            results.append(self._add(key, target, spec, shown))
        self._rearm()
        return {"breakpoints": results}

    def _forget(self, key: str) -> None:
        for number in self._owned.pop(key, []):
            self.table.delete(number)
            self._kind.pop(number, None)
            self._pending.discard(number)

    def _add(self, key: str, target: Target, spec: dict, shown: dict) -> dict:
        condition = spec.get("condition") or None
        ignore = 0
        try:
            if condition is not None:
                if not isinstance(condition, str):
                    raise CommandError("'condition' must be a string")
                check_condition(condition)
            ignore = _hit_count(spec.get("hitCondition"))
        except CommandError as error:
            return _unverified(str(error), shown.get("line"))
        bp = self.table.add(target, False, condition)
        bp.ignore = ignore
        self.requests.engine.graph_lines.resolve()     # the graphs holding a source line
        self._owned.setdefault(key, []).append(bp.number)
        self._kind[bp.number] = FUNCTION if key == FUNCTION else \
            INSTRUCTION if key == INSTRUCTION or key.startswith("bytecode:") else "line"
        result = {"id": bp.number, "verified": self._bound(bp), **shown}
        if not result["verified"]:
            self._pending.add(bp.number)
            result["message"] = self.requests.session.breaking.resolution(bp) + \
                " (it binds when dynamo compiles it)"
        return result

    def _bound(self, bp: Breakpoint) -> bool:
        return isinstance(bp.target, InstructionTarget) or bool(bp.locations)

    def _rearm(self) -> None:
        """While the program runs, a change must reach the tracing now; at a
        stop, resuming does it."""
        if self.requests.stop is None:
            self.requests.engine.rearm()

    def code_added(self, entry: GeneratedCode) -> None:
        """New code: tell the client which pending breakpoints bound to it, or
        to the graph it calls (a line dynamo captured into a graph)."""
        if self._pending:
            self.requests.engine.graph_lines.resolve()
        for number in sorted(self._pending):
            bp = self.table.get(number)
            if bp is None or not self._bound(bp):
                continue
            self._pending.discard(number)
            graphs = [loc.where for loc in bp.locations if loc.code is None]
            where = entry.label() if any(loc.code is entry.code for loc in bp.locations) \
                or not graphs else graphs[0]
            self.requests.event("breakpoint", {"reason": "changed", "breakpoint": {
                "id": number, "verified": True, "message": f"bound in {where}"}})

    # -- bytecode view and instruction references ------------------------------------------------
    def _bytecode_entry(self, source: dict) -> GeneratedCode | None:
        ref = source.get("sourceReference")
        serial = ref - 1 if isinstance(ref, int) and 0 < ref < FILE_REFERENCES else \
            serial_of_path(source.get("path", ""))
        return self.requests.code.entry_of(serial) if serial is not None else None

    def _bytecode_target(self, entry: GeneratedCode, line: int) -> InstructionTarget:
        offset = self.requests.code.listing(entry).offset_at(line)
        if offset is None:
            raise RequestError(f"no instruction at or after line {line}")
        return self._instruction(entry, offset)

    def _instruction(self, entry: GeneratedCode, offset: int) -> InstructionTarget:
        info = self.requests.engine.info_for(entry)
        instr = info.containing(offset)
        if instr is None or offset >= len(entry.code.co_code):
            raise RequestError(f"no instruction at offset {offset} in {entry.label()}")
        if instr.silent:
            raise RequestError(f"{instr.opname} at @{instr.offset} runs before tracing starts")
        return InstructionTarget(entry.code, instr.offset, instr.index, entry.label())


class _Unverified(Exception):
    """A requested breakpoint that cannot be set: answered `verified: false`."""

    def __init__(self, message: str, line: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def _specs(arguments: dict) -> list[dict]:
    wanted = arguments.get("breakpoints")
    if not isinstance(wanted, list) or not all(isinstance(w, dict) for w in wanted):
        raise RequestError("'breakpoints' must be a list of objects")
    return wanted


def _hit_count(text: object) -> int:
    """hitCondition `N` (or `>= N`): stop from the Nth hit on; dyndbg's `ignore N-1`."""
    if text is None or text == "":
        return 0
    if isinstance(text, str):
        stripped = text.strip().removeprefix(">=").strip()
        if stripped.isdecimal() and int(stripped) >= 1:
            return int(stripped) - 1
    raise CommandError(f"hit condition {text!r}: give a count N (stop from the Nth hit on)")


def _unverified(message: str, line: object = None) -> dict:
    result: dict = {"verified": False, "message": message}
    if isinstance(line, int):
        result["line"] = line
    return result
