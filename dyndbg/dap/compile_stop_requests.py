"""Requests at a stop while dynamo compiles (`catch trace`, the launch
argument `catchTrace`): the user's code as dynamo interprets it.

The stack trace is dynamo's inlining stack (the frame being compiled, then
each call it inlines, innermost first as DAP wants), each frame at the
user's file and line; its scopes are the symbolic stack and locals (each
VariableTracker as `stack` and `locals` print it) and the graph built so
far. continue, next, stepIn and stepOut step dynamo as c, nl, sl and r do
at the prompt (next and stepIn as n and s with granularity "instruction");
the debug console runs the prompt's compile-time commands
and Python against the selected frame's symbolic locals. What only makes
sense for generated code (disassemble, stepping back, exception info,
`cache`, `why`) is refused with the reason.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from dyndbg.dap.protocol import RequestError
from dyndbg.dap.stop_requests import (console, evaluated, family_handler, stack_trace,
                                      variables_of)
from dyndbg.dap.variables import References, variable
from dyndbg.dynamo.symbolic import SymbolicState, CompilePoint
from dyndbg.dynamo.symbolic import is_variable_tracker
from dyndbg.engine.recording.recorded_values import Summary
from dyndbg.engine.compile_stepping import CompileStep
from dyndbg.engine.stop import CompileStop
from dyndbg.ui.text.render import compile_stop_event

if TYPE_CHECKING:
    from dyndbg.dap.hub import Hub

# Frame ids of compile-time frames: far above those of generated-code stops
# (stop_requests.py counts from 1), so that an id from one kind of stop is
# never taken for a frame of the other.
FRAME_IDS = 1 << 30
MAX_FRAME_ID = 0x7FFFFFFF
PREFIX = "compile time: "

# next and stepIn step by line unless the client asks for granularity "instruction".
BY_LINE = {CompileStep.NEXT: CompileStep.NEXT_LINE, CompileStep.STEP: CompileStep.STEP_LINE}

# Requests about generated code, refused at a compile stop: why.
NO_GENERATED_CODE = "no generated code runs yet"
REFUSED = {
    "disassemble": "disassemble: dynamo is compiling; it has generated no code for this "
                   "frame yet (the frames are your code as dynamo interprets it)",
    "stepBack": "stepBack: the recording holds generated code only; at a compile stop "
                "there is nothing recorded to step back through",
    "reverseContinue": "reverseContinue: the recording holds generated code only; at a "
                       "compile stop there is nothing recorded to step back through",
    "exceptionInfo": "exceptionInfo: not stopped at an exception (dynamo is compiling)",
    "dyndbg/cache": f"dyndbg/cache: dynamo is compiling; {NO_GENERATED_CODE} (at this stop: "
                    "dyndbg/graph and dyndbg/guards show the graph and guards so far)",
    "dyndbg/why": f"dyndbg/why: dynamo is compiling; {NO_GENERATED_CODE} (a graph break it "
                  "decides stops here, with torch's reason)",
    "goto": "goto: dynamo's trace cannot be moved, only stepped",
}


def stop_text(stop: CompileStop) -> tuple[str, str | None]:
    """The stopped event's description ("compile time: ...") and its text
    (torch's reason, at a graph break or a restart)."""
    state = stop.state
    where = state.translators()[-1]
    tag = stop.tag
    point = stop.point
    event = compile_stop_event(stop)
    if event:
        event = f"{tag} {event}"
    else:
        instr = state.instruction()
        doing = f"  {instr.opname} {instr.argval}".rstrip() if instr is not None else ""
        before = " (before its first line)" if where.before_body else ""
        event = f"dynamo traces {where.function} {tag} at line {where.line}{before}{doing}"
    text = None
    if point in (CompilePoint.GRAPH_BREAK, CompilePoint.RESTART):
        text = f"{point.value}: {stop.reason.summary if stop.reason is not None else '?'}"
    return PREFIX + event, text


class CompileStopRequests:
    def __init__(self, requests: "Hub", refs: References) -> None:
        self.requests = requests
        self.refs = refs                       # shared with generated-code stops: no reuse
        self._frame_ids: dict[int, int] = {}   # DAP frame id -> level (0: the compiled frame)
        self._next_frame_id = FRAME_IDS
        self._stepped_in: str | None = None    # the compile the last compile stop stepped

    @property
    def session(self):
        return self.requests.session

    def checked_stop(self) -> CompileStop:
        stop = self.requests.compile_stop
        if stop is None:
            raise RequestError("not stopped while dynamo compiles")
        return stop

    def handler(self, command: str) -> Callable[[dict], dict | None] | None:
        """This family's handler for `command` at a compile stop, a
        refusal for what needs generated code, or None (the usual one serves)."""
        why = REFUSED.get(command)
        return family_handler(self, command, None if why is None else lambda: why)

    def forget_stop(self) -> None:
        self._frame_ids.clear()

    # -- the stop --------------------------------------------------------------------------
    def reason(self, stop: CompileStop) -> str:
        """A step that ended here; else a catchpoint, or an event of a compile
        being debugged (a graph break, a restart), which stops as a catchpoint."""
        stepped, self._stepped_in = self._stepped_in, None
        if stop.breakpoints or stepped != stop.compile_id:
            return "breakpoint"
        return "step"

    # -- frames ----------------------------------------------------------------------------
    def _frame_id(self, level: int) -> int:
        for frame_id, known in self._frame_ids.items():
            if known == level:
                return frame_id
        frame_id = self._next_frame_id
        self._next_frame_id = frame_id + 1 if frame_id < MAX_FRAME_ID else FRAME_IDS
        self._frame_ids[frame_id] = level
        return frame_id

    def _level(self, frame_id: object) -> tuple[int, SymbolicState]:
        """The level a request's frameId names (the innermost when none) and its state."""
        stop = self.checked_stop()
        levels = stop.state.levels()
        if frame_id is None:
            index = len(levels) - 1
        elif not isinstance(frame_id, int) or frame_id not in self._frame_ids:
            raise RequestError(f"no frame {frame_id!r} at this stop (frame ids die on resume)")
        else:
            index = self._frame_ids[frame_id]
        if not 0 <= index < len(levels):
            raise RequestError(f"no frame {frame_id!r} at this stop")
        return index, levels[index]

    def r_stackTrace(self, arguments: dict) -> dict:
        stop = self.checked_stop()
        translators = stop.state.translators()
        frames = []
        for level in range(len(translators) - 1, -1, -1):
            where = translators[level]
            inlined = ", inlined" if level else ""
            frame: dict[str, Any] = {
                "id": self._frame_id(level), "column": 1, "line": where.line,
                "name": f"{where.function} [compile {stop.trace_id}{inlined}]"}
            frame.update(self.requests.code.file_source(where.filename))
            frames.append(frame)
        return stack_trace(frames, arguments)

    # -- scopes and variables ----------------------------------------------------------------
    def r_scopes(self, arguments: dict) -> dict:
        _, state = self._level(arguments.get("frameId"))
        stack = [(f"[{i}]", Summary(v.kind, v.line())) for i, v in enumerate(state.stack())]
        names = [(name, Summary(v.kind, v.line())) for name, v in state.locals()]
        nodes = [(n.name, Summary(n.op, "  ".join(p for p in (
            f"{n.op} {n.target}", n.value, n.place) if p))) for n in state.graph_nodes()]
        return {"scopes": [self._scope("Symbolic stack", "registers", stack),
                           self._scope("Symbolic locals", "locals", names),
                           self._scope("Graph so far", "", nodes)]}

    def _scope(self, name: str, hint: str, items: Sequence[tuple[str, object]]) -> dict:
        scope = {"name": name, "variablesReference": self.refs.scope(list(items)),
                 "namedVariables": len(items), "expensive": False}
        if hint:
            scope["presentationHint"] = hint
        return scope

    def r_variables(self, arguments: dict) -> dict:
        self.checked_stop()
        return variables_of(self.refs, arguments, "when dynamo goes on")

    # -- evaluation ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _looking_at(self, state: SymbolicState) -> Iterator[None]:
        """The inspection session looks at `state`'s level (the frame selected)."""
        session = self.session
        self.checked_stop()
        session.compile_level = state
        try:
            yield
        finally:
            session.compile_level = None

    def r_evaluate(self, arguments: dict) -> dict:
        expression = arguments.get("expression")
        if not isinstance(expression, str):
            raise RequestError("'expression' must be a string")
        _, state = self._level(arguments.get("frameId"))
        context = arguments.get("context") or "repl"
        with self._looking_at(state):
            if context == "repl":
                return console(self.requests, expression)
            value = evaluated(self.session, expression, context)
        if is_variable_tracker(value):   # as `stack` and `locals` show it, never realized
            shown = state.describe(value)
            return {"result": shown.line(), "type": shown.kind, "variablesReference": 0}
        result = variable("", value, self.refs)
        return {"result": result["value"], "type": result.get("type", ""),
                "variablesReference": result["variablesReference"]}

    def _view(self, command: str, arguments: dict) -> dict:
        self.checked_stop()
        extra = arguments.get("args", "")
        if not isinstance(extra, str):
            raise RequestError("'args' must be a string")
        shown = self.requests.console_command(f"{command} {extra}".strip(), typed=True)
        if shown.errors:
            raise RequestError("; ".join(shown.errors))
        return {"text": shown.text}

    def r_dyndbg_guards(self, arguments: dict) -> dict:
        """The guards dynamo has installed so far (the prompt's `guards` here)."""
        return self._view("guards", arguments)

    def r_dyndbg_graph(self, arguments: dict) -> dict:
        """The graph built so far (the prompt's `graph` here)."""
        return self._view("graph", arguments)

    # -- running dynamo on -------------------------------------------------------------------
    def _resume(self, kind: CompileStep, arguments: dict | None = None) -> None:
        """Step dynamo on (c, n, s, r at the prompt); a step by line unless
        the client asks for granularity "instruction" (its disassembly)."""
        stop = self.checked_stop()
        self._stepped_in = None if kind is CompileStep.CONTINUE else stop.compile_id
        if arguments is not None and arguments.get("granularity") != "instruction":
            kind = BY_LINE.get(kind, kind)
        self.session.compile_commands.step_on(kind)

    def r_continue(self, arguments: dict) -> dict:
        self._resume(CompileStep.CONTINUE)
        return {"allThreadsContinued": False}

    def r_next(self, arguments: dict) -> None:
        self._resume(CompileStep.NEXT, arguments)

    def r_stepIn(self, arguments: dict) -> None:
        self._resume(CompileStep.STEP, arguments)

    def r_stepOut(self, arguments: dict) -> None:
        self._resume(CompileStep.RETURN)

    def r_pause(self, arguments: dict) -> None:
        """Already stopped."""
