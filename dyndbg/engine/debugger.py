"""The engine: decides which frames are traced and where to stop.

Only dynamo-generated frames are ever traced, and only where a stop is
possible. torch's C callback (or, without it, a global trace function that
filters by code identity) installs `sys.settrace` just before generated code
runs if that code can stop: while stepping, every generated frame gets opcode
events; after `continue`, only frames holding enabled breakpoints are traced,
with line events, and opcode events only while on a line holding an armed
instruction (see ArmingPlan). The global trace function is removed when the
last traced frame returns; ordinary frames called from a traced frame see one
'call' event and are not traced; while dynamo compiles, tracing is suspended.
"""
from __future__ import annotations

import collections
import signal
import sys
import threading
import types
from dataclasses import dataclass
from typing import Callable, Protocol

from dyndbg.cpython import (StackUnavailable, read_suspended_stack, read_value_stack,
                            stack_support, suspended_depth)
from dyndbg.dynamo import DynamoHooks, GeneratedCode, Registry
from dyndbg.dynamo.names import RESUME_GLOBAL
from dyndbg.dynamo.registry import RESUME_PREFIXES
from dyndbg.dynamo.markers import torch_has_marker
from dyndbg.engine.breakpoints import ArmingPlan, BreakpointTable, MarkerTarget
from dyndbg.engine.codeinfo import CodeInfo, Instr, code_info
from dyndbg.engine.stop import Stop
from dyndbg.faults import FAULTS_ON, maybe_fault
from dyndbg.ownframes import is_own_frame

# How much of a generated frame is traced: not at all; its calls only (to see a
# resume function start); line events, with opcode events only while on a line
# holding an armed instruction; every instruction (stepping).
TRACE_NONE, TRACE_CALLS, TRACE_LINES, TRACE_OPCODES = 0, 1, 2, 3

# Exceptions that are control flow, not failures: no stop for these.
_QUIET_EXCEPTIONS = (StopIteration, StopAsyncIteration, GeneratorExit)


class ConditionInterrupted(Exception):
    """A breakpoint condition stopped by Ctrl-C: reported, the breakpoint hit."""


class DyndbgQuit(BaseException):
    """Raised into the program by `quit`, as pdb raises BdbQuit.

    A BaseException so that the program's `except Exception` cannot swallow it.
    """


class Frontend(Protocol):
    def interact(self, stop: Stop) -> None: ...
    def message(self, text: str) -> None: ...


@dataclass
class Mode:
    """Where the next stop may happen."""

    kind: str = "step"                          # step, next, return, until, continue
    frame: types.FrameType | None = None        # for next/return/until
    count: int = 1                              # step N / next N
    until_index: int = -1
    why: str = ""                               # said at the stop, e.g. "after dyndbg.breakpoint()"


class Engine:
    def __init__(self, frontend: Frontend, force_fallback: bool = False) -> None:
        self.frontend = frontend
        self.registry = Registry()
        self.breakpoints = BreakpointTable()
        if torch_has_marker():
            self.breakpoints.add_marker_breakpoint()
        self.mode = Mode()
        self.detached = False
        self.hooks = DynamoHooks(self.registry, self._on_code_start, self._suspend,
                                 self._resume, self._internal_error, force_fallback)
        self._active: list[types.FrameType] = []       # live traced generated frames
        # id(frame) -> (f_lasti, the stack before that instruction): the last one read
        self._snapshots: dict[int, tuple[int, list[object]]] = {}
        # Frames an exception left, for post_mortem(): id -> (frame, f_lasti, stack or None)
        self._failed: collections.OrderedDict[int, tuple] = collections.OrderedDict()
        # --post-mortem: trace every generated frame and the calls it makes, so
        # that an exception leaving a call keeps the caller's stack before it
        self.record_for_post_mortem = False
        self._entry_locals: dict[int, dict] = {}       # id(frame) -> its arguments at the start
        self._stopped_in: set[int] = set()             # ids of live frames that have stopped
        self._levels: dict[int, int] = {}              # id(code) -> trace level after continue
        self._tracers: dict[int, tuple] = {}           # id(code) -> (ArmingPlan, line tracer)
        self.events: collections.Counter[str] = collections.Counter()  # trace events received
        self._compiled: dict[str, types.CodeType] = {}  # breakpoint conditions
        self._sigint_installed = False
        self._at_prompt = False
        self._in_condition = False
        self._line_tracer_shielded = False
        self._cache_version = -1                       # breakpoint table version of both
        self._generated = self.registry.by_id          # for the hot paths: id(code) -> entry
        self._stopped_exception: BaseException | None = None
        self._line_handled: tuple[int, int] | None = None  # (id(frame), f_lasti) of a line event
        self._tracing = False
        self._suspended = 0

    # -- life cycle -----------------------------------------------------------
    def start(self) -> None:
        # The layout self-check traces a probe function: it cannot run later,
        # inside a trace callback, where tracing is off.
        stack_support()
        self._install_sigint()
        self.hooks.install()
        # Everything dyndbg runs is entered through these: dynamo must skip them
        # and all they call (the line tracer's closure is shielded when made).
        self.hooks.shield(self._global_trace, self._local_trace, self._callee_trace,
                          self._on_sigint)
        if not self.hooks.has_callback:
            self._install_trace()

    def detach(self) -> None:
        """No more stops: the program runs on as without dyndbg."""
        self.detached = True
        self.hooks.uninstall()
        self._restore_sigint()
        self._snapshots.clear()
        self._failed.clear()
        self._entry_locals.clear()
        self._stopped_in.clear()
        self._stopped_exception = None
        if self._tracing:
            self._tracing = False
            sys.settrace(None)
        for frame in self._active:
            frame.f_trace = None
            frame.f_trace_opcodes = False
        self._active.clear()

    # -- resume modes (set by the front end) -----------------------------------
    def set_step(self, count: int = 1) -> None:
        self.mode = Mode("step", count=count)
        self._retrace_active()
        self.hooks.set_callback_active(True)

    def set_next(self, frame: types.FrameType, count: int = 1) -> None:
        self.mode = Mode("next", frame, count=count)
        self._retrace_active()
        self.hooks.set_callback_active(True)

    def set_return(self, frame: types.FrameType) -> None:
        self.mode = Mode("return", frame)
        self._retrace_active()
        self.hooks.set_callback_active(True)

    def set_until(self, frame: types.FrameType, index: int) -> None:
        self.mode = Mode("until", frame, until_index=index)
        self._retrace_active()
        self.hooks.set_callback_active(True)

    def set_continue(self) -> None:
        self.mode = Mode("continue")
        self._retrace_active()
        # Nothing can stop: no call into dyndbg at all until something can.
        self.hooks.set_callback_active(not self._idle())

    def close(self) -> None:
        """Detach and unregister from torch, for a session that ends outside
        torch's own hook loops (the end of `with dyndbg.debug()`)."""
        self.detach()
        self.hooks.remove()

    def _idle(self) -> bool:
        """Nothing can stop (or be recorded) after continue. Once some code
        holds torch's markers, never: unhooked, torch would start its own
        debugger there."""
        if self.registry.has_markers or self.record_for_post_mortem:
            return False
        return not any(bp.enabled and not isinstance(bp.target, MarkerTarget)
                       for bp in self.breakpoints)

    def quit(self) -> None:
        self.detach()
        raise DyndbgQuit()

    # -- queries ----------------------------------------------------------------
    def entry_for(self, code: types.CodeType) -> GeneratedCode | None:
        return self.registry.get(code)

    def info_for(self, entry: GeneratedCode) -> CodeInfo:
        return code_info(entry.extra, entry.code)

    def snapshot_for(self, frame: types.FrameType) -> list[object] | None:
        """The stack before `frame`'s current instruction, if it was read."""
        snapshot = self._snapshots.get(id(frame))
        return snapshot[1] if snapshot is not None and snapshot[0] == frame.f_lasti else None

    def evaluate_in(self, frame: types.FrameType, expression: str,
                    stack: Callable[[], list[object] | None]) -> bool:
        """A breakpoint condition, in the frame (compiled once per text)."""
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
        self._in_condition = True
        try:
            return bool(eval(code, frame.f_globals, namespace))
        except KeyboardInterrupt:
            raise ConditionInterrupted("interrupted by Ctrl-C") from None
        finally:
            self._in_condition = False

    # -- Ctrl-C -------------------------------------------------------------------
    def _install_sigint(self) -> None:
        """Ctrl-C while generated code runs stops at its next instruction."""
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._on_sigint)
            self._sigint_installed = True

    def _restore_sigint(self) -> None:
        if self._sigint_installed and signal.getsignal(signal.SIGINT) == self._on_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self._sigint_installed = False

    def _on_sigint(self, signum: int, frame: types.FrameType | None) -> None:
        generated = self._generated_frames(frame)
        running_ours = frame is not None and is_own_frame(frame)
        if self.detached or self._at_prompt or self._in_condition \
                or not (generated or running_ours):
            signal.default_int_handler(signum, frame)  # KeyboardInterrupt, as without dyndbg
        self.frontend.message("dyndbg: interrupted; stopping at the next generated instruction")
        self._step_into(generated)

    def stop_soon(self, frame: types.FrameType | None, caller: str = "") -> None:
        """set_trace(): stop at the next generated instruction to run: in the
        innermost generated frame that `frame` returns to, if there is one.
        `caller` names the entry point for the stop's first line."""
        generated = self._generated_frames(frame)
        self._step_into(generated)
        if caller and generated:
            self.mode.why = f"after {caller}"
        elif caller and frame is not None:
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            self.mode.why = f"at the first generated code since {caller} at {where}"

    def _generated_frames(self, frame: types.FrameType | None) -> list[types.FrameType]:
        """The generated frames among `frame` and its callers, innermost first."""
        generated = []
        while frame is not None:
            if self.registry.get(frame.f_code) is not None:
                generated.append(frame)
            frame = frame.f_back
        return generated

    def _step_into(self, generated: list[types.FrameType]) -> None:
        """Step mode, with these live generated frames traced at every instruction."""
        self.mode = Mode("step")
        self.hooks.set_callback_active(True)
        for g in generated:
            if not any(g is a for a in self._active):
                self._active.append(g)
            self._arm_frame(g, self.registry.get(g.f_code), TRACE_OPCODES)  # type: ignore[arg-type]
        if generated or not self.hooks.has_callback:
            self._install_trace()  # else the C callback installs it when generated code starts

    # -- tracing control --------------------------------------------------------
    def _install_trace(self) -> None:
        if not self._tracing and not self._suspended:
            self._tracing = True
            sys.settrace(self._global_trace)

    def _on_code_start(self, code: types.CodeType) -> None:
        """torch's C callback: generated code is about to run. Tracing goes on
        only if a stop is possible in it (or in a resume function it calls)."""
        if FAULTS_ON:
            maybe_fault("callback")
        if self.hooks.interrupt_pending:
            self._install_trace()  # its call event delivers the deferred interrupt
            return
        entry = self._generated.get(id(code))
        if entry is None:  # compiled before dyndbg was attached
            entry = self.registry.recover(code) or self.registry.add_transformed(None, code, None)
        if self.detached or self._tracing:
            return
        if self.mode.kind != "continue":
            self._install_trace()
            return
        self._sync_code_caches()
        level = self._levels.get(id(code))
        if level is None:
            level = self._levels[id(code)] = self._trace_level(entry)
        if level != TRACE_NONE:
            self._install_trace()

    def _sync_code_caches(self) -> None:
        """Per-code decisions depend on the breakpoint table: drop them when it changes."""
        if self._cache_version != self.breakpoints.version:
            self._levels.clear()
            self._tracers.clear()
            self._cache_version = self.breakpoints.version

    def _trace_level(self, entry: GeneratedCode, frame: types.FrameType | None = None,
                     recording: bool = True) -> int:
        """How much of a generated frame must be traced for every possible stop
        (and, with `recording`, for --post-mortem's record).

        Without the frame (from the C callback) the answer errs towards tracing;
        the frame's call event then decides exactly.
        """
        if self.mode.kind != "continue":
            return TRACE_OPCODES
        if self.breakpoints.armed(entry, self.info_for(entry)):
            return TRACE_LINES
        if self.breakpoints.catches_exceptions() or self._calls_watched_resume(entry, frame) \
                or (recording and self.record_for_post_mortem):
            return TRACE_CALLS
        return TRACE_NONE

    def _calls_watched_resume(self, entry: GeneratedCode, frame: types.FrameType | None) -> bool:
        """A resume function dynamo declined to compile runs without the C
        callback: only a trace of its caller's calls can see it start."""
        if not self.breakpoints.watches_resume_calls():
            return False
        names = [n for n in entry.code.co_names if RESUME_GLOBAL.fullmatch(n)]
        if frame is None:
            return bool(names)
        for name in names:
            code = getattr(frame.f_globals.get(name), "__code__", None)
            if code is None or self.registry.has_transform(code):
                continue
            resume = self.registry.get(code)
            if resume is not None and self.breakpoints.armed(resume, self.info_for(resume)):
                return True
        return False

    def _retrace_active(self) -> None:
        """After a resume command: each live traced frame gets the tracing it
        needs now (every instruction when stepping, armed lines otherwise)."""
        for frame in self._active:
            entry = self.registry.get(frame.f_code)
            if entry is not None:
                self._arm_frame(frame, entry, max(TRACE_CALLS, self._trace_level(entry, frame)))

    def _arm_frame(self, frame: types.FrameType, entry: GeneratedCode, level: int) -> None:
        if level == TRACE_LINES:
            self._sync_code_caches()
            cached = self._tracers.get(id(entry.code))
            if cached is None:  # one plan and tracer per code object, shared by its frames
                plan = self._plan_for(entry)
                cached = self._tracers[id(entry.code)] = (plan, self._line_tracer(plan))
            plan, frame.f_trace = cached
            frame.f_trace_lines = True
            # A frame re-armed mid-line gets no line event until the line changes.
            frame.f_trace_opcodes = plan.all_opcodes or \
                plan.line_of.get(frame.f_lasti) in plan.hot_lines
        else:
            frame.f_trace = self._local_trace
            frame.f_trace_lines = False
            frame.f_trace_opcodes = level == TRACE_OPCODES

    def _release(self, frame: types.FrameType) -> None:
        """Stop tracing a frame that can stop no more: the rest of it, and the
        calls it makes, run untraced (the trace goes if no traced frame is left)."""
        frame.f_trace_opcodes = False
        frame.f_trace_lines = False
        frame.f_trace = None
        self._forget(frame)
        self._maybe_remove_trace()

    def _forget(self, frame: types.FrameType) -> None:
        self._snapshots.pop(id(frame), None)
        self._entry_locals.pop(id(frame), None)
        self._stopped_in.discard(id(frame))
        for i in range(len(self._active) - 1, -1, -1):
            if self._active[i] is frame:
                del self._active[i]
                break

    def _plan_for(self, entry: GeneratedCode) -> ArmingPlan:
        info = self.info_for(entry)
        return ArmingPlan(set(self.breakpoints.armed(entry, info)), info)

    def _line_tracer(self, plan: ArmingPlan):  # type: ignore[no-untyped-def]
        """The local trace function of a frame with breakpoints, after continue.

        Line events switch opcode events on only while executing a line that
        holds an armed instruction no line event reaches; everything else
        returns at once. Returning None keeps the frame's trace function.
        """
        offsets, hot_lines, line_of = plan.offsets, plan.hot_lines, plan.line_of
        dispatch = self._dispatch

        events = self.events

        def tracer(frame: types.FrameType, event: str, arg: object) -> None:
            events[event] += 1
            if event == "opcode":
                if frame.f_lasti not in offsets:
                    return None
            elif event == "line":
                lasti = frame.f_lasti
                hot = plan.all_opcodes or line_of.get(lasti) in hot_lines
                frame.f_trace_opcodes = hot
                if hot or lasti not in offsets:
                    return None  # the opcode event for this instruction follows if hot
                # an armed instruction that a line event reaches: handled as its opcode
            dispatch(frame, event, arg)
            # Only under this plan: a stop may have re-armed the frame with a new one.
            if event != "return" and self.mode.kind == "continue" and \
                    frame.f_trace is tracer and plan.done_after(frame.f_lasti):
                self._release(frame)
            return None

        if not self._line_tracer_shielded:  # every closure shares this code object
            self.hooks.shield(tracer)
            self._line_tracer_shielded = True
        return tracer

    def _suspend(self) -> None:
        """Dynamo starts compiling: nothing of dyndbg runs under it."""
        self._suspended += 1
        if self._tracing and sys.gettrace() == self._global_trace:
            sys.settrace(None)

    def _resume(self) -> None:
        self._suspended = max(0, self._suspended - 1)
        if self._tracing and not self._suspended and not self.detached:
            sys.settrace(self._global_trace)

    def _maybe_remove_trace(self) -> None:
        if not self._active and self.hooks.has_callback and self._tracing:
            self._tracing = False
            sys.settrace(None)

    def _global_trace(self, frame: types.FrameType, event: str, arg: object):  # type: ignore[no-untyped-def]
        if event != "call":
            return None
        code = frame.f_code
        # The hot path: most calls made while a generated frame runs are not generated.
        if id(code) not in self._generated and not code.co_name.startswith(RESUME_PREFIXES) \
                and not self.hooks.interrupt_pending:
            if self.record_for_post_mortem and frame.f_back is not None \
                    and id(frame.f_back.f_code) in self._generated:
                # Called by generated code: if an exception leaves it, the
                # caller's stack still holds the call (read only then).
                frame.f_trace_lines = False
                return self._callee_trace
            return None
        if self.hooks.interrupt_pending:
            # A Ctrl-C that arrived inside torch's C callback, where raising
            # would abort the process: delivered here, as the frame starts.
            self.hooks.interrupt_pending = False
            self._maybe_remove_trace()
            raise KeyboardInterrupt
        try:
            entry = self.registry.get(code)  # registers a resume function on first sight
            if self.detached or entry is None:
                return None
            level = self._trace_level(entry, frame)
            if level == TRACE_NONE:
                self._maybe_remove_trace()  # installed by the callback's cautious guess
                return None
            self._active.append(frame)
            # Its arguments as the guards saw them, before the code changes them.
            self._entry_locals[id(frame)] = dict(frame.f_locals)
            self._arm_frame(frame, entry, level)
            return frame.f_trace
        except (DyndbgQuit, KeyboardInterrupt):
            raise  # into the program, as it would arrive without dyndbg
        except BaseException as error:  # noqa: BLE001
            self._internal_error("trace", error)
            return None

    def suspended_stack(self, frame: types.FrameType) -> list[object] | None:
        """The stack of a live generated frame suspended in a call (a caller of
        the stopped frame), as before its current instruction."""
        snapshot = self.snapshot_for(frame)
        if snapshot is not None:
            return snapshot
        depth = suspended_depth(frame.f_code, frame.f_lasti)
        if depth is None:
            return None
        try:
            return read_suspended_stack(frame, depth)
        except StackUnavailable:
            return None

    def _callee_trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        """--post-mortem: the local trace of a function called by generated code."""
        if event == "exception":
            try:
                self._record_caller(frame.f_back)
            except BaseException as error:  # noqa: BLE001
                self._internal_error("trace", error)

    def _record_caller(self, caller: types.FrameType | None) -> None:
        """An exception leaves a call made by a generated frame: keep the
        caller's stack as before that call (its operands are still there)."""
        if caller is None:
            return
        if id(caller.f_code) not in self._generated:
            return
        depth = suspended_depth(caller.f_code, caller.f_lasti)
        if depth is None:
            return
        try:
            self._snapshots[id(caller)] = (caller.f_lasti, read_suspended_stack(caller, depth))
        except StackUnavailable:
            pass

    def post_mortem(self, tb: types.TracebackType | None, exc: BaseException | None) -> bool:
        """Open the front end at the innermost generated frame of the traceback
        `tb`, as it failed. False if the traceback has no generated frame."""
        entries = []
        while tb is not None:
            entries.append((tb.tb_frame, tb.tb_lasti))
            tb = tb.tb_next
        for depth in range(len(entries) - 1, -1, -1):
            frame, lasti = entries[depth]
            entry = self.registry.get(frame.f_code)
            if entry is not None:
                break
        else:
            return False
        info = self.info_for(entry)
        instr = info.at_offset(lasti)
        if instr is None:
            return False
        recorded = self._failed.get(id(frame))
        if recorded is not None and recorded[0] is frame and recorded[1] == lasti \
                and recorded[2] is not None:
            stack, note = recorded[2], "as before the failing instruction"
        else:
            stack, note = None, ("not recorded before the failing instruction (recorded "
                                 "under `python -m dyndbg --post-mortem`)")
        frames = [(f, i) for f, i in entries[:depth + 1] if not is_own_frame(f)]
        self._stop(Stop(frame, entry, info, instr, "post-mortem", stack, note,
                        exception=exc, frames=frames))
        return True

    def _local_trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        """Events of a traced generated frame. Returns None, which keeps the
        frame's current trace function (another may have been set meanwhile)."""
        self.events[event] += 1
        self._dispatch(frame, event, arg)

    def _dispatch(self, frame: types.FrameType, event: str, arg: object) -> None:
        try:
            if self.detached:
                return
            if event in ("opcode", "line"):
                if event == "opcode" and self._line_handled == (id(frame), frame.f_lasti):
                    # A stop at a line event re-armed the frame for opcodes: the
                    # opcode event of the same instruction follows; it is done.
                    self._line_handled = None
                    return
                self._line_handled = (id(frame), frame.f_lasti) if event == "line" else None
                self._on_opcode(frame)
            elif event == "exception":
                self._on_exception(frame, arg)  # type: ignore[arg-type]
            elif event == "return":
                self._on_return(frame)
        except (DyndbgQuit, KeyboardInterrupt):
            raise  # into the program, as it would arrive without dyndbg
        except BaseException as error:  # noqa: BLE001
            self._internal_error("trace", error)

    # -- events -------------------------------------------------------------------
    def _read_stack(self, frame: types.FrameType) -> tuple[list[object] | None, str]:
        try:
            return read_value_stack(frame), ""
        except StackUnavailable as why:
            return None, str(why)

    def _on_opcode(self, frame: types.FrameType) -> None:
        if FAULTS_ON:
            maybe_fault("opcode")
        entry = self.registry.get(frame.f_code)
        if entry is None:
            return
        info = self.info_for(entry)
        stepping = self.mode.kind != "continue"
        if not stepping and frame.f_lasti not in self.breakpoints.armed(entry, info):
            return  # the fast path: nothing can stop here
        instr = info.at_offset(frame.f_lasti)
        if instr is None:
            return
        read: list[tuple[list[object] | None, str]] = []

        def stack() -> list[object] | None:
            """The value stack, read once and only if something needs it."""
            if not read:
                read.append(self._read_stack(frame))
            return read[0][0]

        if stepping and stack() is not None:
            self._snapshots[id(frame)] = (frame.f_lasti, stack())  # for an exception stop
        hit = self.breakpoints.hit(
            entry, info, frame, instr, stack,
            lambda expr: self.evaluate_in(frame, expr, stack), self.frontend.message)
        if hit:
            reason = "breakpoint"
        elif self._wants_step_stop(frame, instr):
            reason = "step"
        else:
            return
        values = stack()
        self._stop(Stop(frame, entry, info, instr, reason, values, read[0][1], hit,
                        why=self.mode.why if reason == "step" else ""))

    def _wants_step_stop(self, frame: types.FrameType, instr: Instr) -> bool:
        mode = self.mode
        if mode.kind == "continue":
            return False
        if mode.kind == "return":
            return frame is mode.frame and instr.opname in ("RETURN_VALUE", "RETURN_CONST")
        if mode.kind == "until":
            return frame is mode.frame and instr.index >= mode.until_index
        if mode.kind == "next" and frame is not mode.frame:
            return False
        mode.count -= 1
        return mode.count <= 0

    def _on_exception(self, frame: types.FrameType,
                      arg: tuple[type, BaseException, types.TracebackType]) -> None:
        exc = arg[1]
        if isinstance(exc, _QUIET_EXCEPTIONS) or exc is self._stopped_exception:
            return
        entry = self.registry.get(frame.f_code)
        if entry is None:
            return
        info = self.info_for(entry)
        instr = info.at_offset(frame.f_lasti)
        if instr is None:
            return
        stack = self.snapshot_for(frame)
        self._failed[id(frame)] = (frame, frame.f_lasti, stack)
        while len(self._failed) > 8:  # only the latest matter; keep few frames alive
            self._failed.popitem(last=False)
        if self.record_for_post_mortem and self._trace_level(entry, frame, recording=False) \
                == TRACE_NONE:
            return  # traced only to record this
        self._stopped_exception = exc
        note = "before the failing instruction" if stack is not None else \
            "not recorded before the failing instruction"
        self._stop(Stop(frame, entry, info, instr, "exception", stack, note, exception=exc))

    def _on_return(self, frame: types.FrameType) -> None:
        self._forget(frame)
        mode = self.mode
        if mode.frame is frame:
            # The frame we were stepping over left: stop at the next generated
            # instruction, in the caller if it is generated code.
            self.mode = Mode("step")
        if not self._active:
            self._stopped_exception = None
            self._maybe_remove_trace()

    def _stop(self, stop: Stop) -> None:
        key = id(stop.frame)
        stop.first_in_frame = key not in self._stopped_in
        stop.entry_locals = self._entry_locals.get(key)
        self._stopped_in.add(key)
        maybe_fault("render")
        self._at_prompt = True
        try:
            self.frontend.interact(stop)
        finally:
            self._at_prompt = False

    def _internal_error(self, where: str, error: BaseException) -> None:
        """An error inside dyndbg: say so once, detach, let the program go on."""
        try:
            self.frontend.message(
                f"*** dyndbg internal error in {where}: {type(error).__name__}: {error}; "
                "detaching, the program continues without the debugger")
        finally:
            self.detach()
