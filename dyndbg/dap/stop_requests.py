"""Requests at a stop: the stack trace, scopes and variables, evaluation,
exception info, and the requests that run the program on (or back)."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Callable

from dyndbg.dap.hover import NotHoverable, hover_value
from dyndbg.dap.protocol import RequestError
from dyndbg.dap.shapes_scope import shape_items
from dyndbg.dap.variables import References, StaleReference, variable
from dyndbg.engine.stop import StopReason
from dyndbg.ui.text.parsing import CommandError
from dyndbg.ui.session import RUNNING_COMMANDS
from dyndbg.ui.text.values import exception_text

if TYPE_CHECKING:
    from dyndbg.dap.hub import Hub
    from dyndbg.ui.session import Session

# Debug-console commands that would change what the client believes about
# the program (where it is, its breakpoints): the client's own buttons do these.
MOVING_COMMANDS = RUNNING_COMMANDS | {"back", "forward", "present", "up", "down", "frame"}
CLIENT_OWNED = {"break", "tbreak", "clear", "delete", "disable", "enable", "condition",
                "ignore", "catch", "commands"}
RECORDED_FRAME = -1   # a frame id's index for the recorded point in view (`back`)


class StopRequests:
    def __init__(self, requests: "Hub") -> None:
        self.requests = requests
        self.refs = References()
        self._frame_ids: dict[int, int] = {}   # DAP frame id -> index in session.frames
        self._next_frame_id = 1

    @property
    def session(self):
        return self.requests.session

    def forget_stop(self) -> None:
        """References die on resume (the spec's object lifetime)."""
        self.refs.clear()
        self._frame_ids.clear()

    # -- frames ---------------------------------------------------------------------------
    def _frame_id(self, index: int) -> int:
        for frame_id, known in self._frame_ids.items():
            if known == index:
                return frame_id
        frame_id = self._next_frame_id
        self._next_frame_id = self._next_frame_id % 0x7FFFFFFF + 1
        self._frame_ids[frame_id] = index
        return frame_id

    def select(self, frame_id: object) -> int:
        """Select the frame a request names (the innermost when none): its index."""
        self.requests.checked_stop()
        if frame_id is None:
            index = len(self.session.frames) - 1
        elif not isinstance(frame_id, int) or frame_id not in self._frame_ids:
            raise RequestError(f"no frame {frame_id!r} at this stop (frame ids die on resume)")
        else:
            index = self._frame_ids[frame_id]
        if index != RECORDED_FRAME:
            self.session.selected = index
        return index

    def r_stackTrace(self, arguments: dict) -> dict:
        stop = self.requests.checked_stop()
        session = self.session
        frames: list[dict] = []
        past = session.past
        if past is not None:
            record = past.record
            frames.append(self.requests.code.frame_dict(
                self._frame_id(RECORDED_FRAME), f"{record.entry.label()} [{past.note()}]",
                record.entry, record.instr, record.entry.code.co_filename))
        for index in range(len(session.frames) - 1, -1, -1):
            frame = session.frames[index]
            if past is not None and frame is stop.frame:
                continue
            frames.append(self._describe(index, frame))
        return stack_trace(frames, arguments)

    def _describe(self, index: int, frame: types.FrameType) -> dict:
        engine = self.requests.engine
        stop = self.requests.checked_stop()
        entry = engine.entry_for(frame.f_code)
        frame_id = self._frame_id(index)
        if entry is not None:
            info = engine.info_for(entry)
            if frame is stop.frame:
                instr = stop.instr
            else:
                lasti = self.session.traceback_lasti(frame)
                instr = info.containing(frame.f_lasti if lasti is None else lasti) \
                    or info.instructions[0]
            return self.requests.code.frame_dict(frame_id, entry.label(), entry, instr,
                                                 frame.f_code.co_filename)
        return {"id": frame_id, "name": frame.f_code.co_name, "line": frame.f_lineno or 0,
                "column": 1, "presentationHint": "subtle",
                **self.requests.code.file_source(frame.f_code.co_filename)}

    # -- scopes and variables -------------------------------------------------------------------
    def r_scopes(self, arguments: dict) -> dict:
        index = self.select(arguments.get("frameId"))
        session = self.session
        stop = self.requests.checked_stop()
        scopes = []
        recorded = index == RECORDED_FRAME
        if recorded or session.past is None:
            local_values = session.frame_locals() if recorded else \
                session.frame_locals(session.frame)
            scopes.append(self._scope("Locals", "locals", list(local_values.items())))
        on_stop_frame = recorded or (session.past is None and session.frame is stop.frame)
        if recorded or self.requests.engine.entry_for(session.frame.f_code) is not None:
            stack, note = session.frame_stack()
            if stack is None:
                items: list[tuple[str, object]] = [("(not readable)", _Note(note))]
            else:
                items = [(str(i), value) for i, value in enumerate(stack)]
            scope = self._scope("Value stack", "registers", items)
            if note and stack is not None:
                scope["name"] = f"Value stack ({note})"
            scopes.append(scope)
        if on_stop_frame and not recorded and stop.entry_locals is not None:
            scopes.append(self._scope("Inputs at entry", "arguments",
                                      list(stop.entry_locals.items())))
        shapes = self._shapes() if not recorded and session.past is None else []
        if shapes:
            scopes.append(self._scope("Shapes", "data", shapes))
        return {"scopes": scopes}

    def _shapes(self) -> list[tuple[str, object]]:
        """`why shapes` of the selected frame's entry, where it has symbols."""
        try:
            return shape_items(self.session.dynamo.shapes_answer())
        except CommandError:        # not generated code
            return []

    def _scope(self, name: str, hint: str, items: list[tuple[str, object]]) -> dict:
        return {"name": name, "presentationHint": hint, "variablesReference":
                self.refs.scope(items), "namedVariables": len(items), "expensive": False}

    def r_variables(self, arguments: dict) -> dict:
        self.requests.checked_stop()
        return variables_of(self.refs, arguments, "when the program runs on")

    # -- evaluation -------------------------------------------------------------------------
    def r_evaluate(self, arguments: dict) -> dict:
        expression = arguments.get("expression")
        if not isinstance(expression, str):
            raise RequestError("'expression' must be a string")
        self.select(arguments.get("frameId"))
        context = arguments.get("context") or "repl"
        if context == "repl":
            return console(self.requests, expression)
        shown = variable("", evaluated(self.session, expression, context), self.refs)
        return {"result": shown["value"], "type": shown.get("type", ""),
                "variablesReference": shown["variablesReference"]}

    def r_exceptionInfo(self, arguments: dict) -> dict:
        stop = self.requests.checked_stop()
        exc = stop.exception
        if exc is None:
            raise RequestError("not stopped at an exception")
        import traceback
        kind = type(exc)
        text = exception_text(exc)
        return {"exceptionId": kind.__name__, "description": text,
                "breakMode": "unhandled" if stop.reason is StopReason.POST_MORTEM else "always",
                "details": {"message": text, "typeName": kind.__name__,
                            "fullTypeName": f"{kind.__module__}.{kind.__qualname__}",
                            "stackTrace": "".join(traceback.format_tb(exc.__traceback__))}}

    # -- running on ---------------------------------------------------------------------------
    def _at_present(self) -> None:
        if self.session.past is not None:
            self.session.past = None
            self.requests.frontend.output("dyndbg: back at the present (from a recorded point)")

    def _stepped_frame(self) -> types.FrameType:
        stop = self.requests.checked_stop()
        if stop.reason is StopReason.POST_MORTEM:
            raise RequestError("post mortem: the program has already failed; nothing runs "
                               "any more (continue or disconnect ends the session)")
        self._at_present()
        return stop.frame

    def _by_instruction(self, arguments: dict) -> bool:
        return arguments.get("granularity") == "instruction" or self.requests.code.bytecode_view

    def r_continue(self, arguments: dict) -> dict:
        self._at_present()
        self.requests.engine.set_continue()
        return {"allThreadsContinued": False}

    def r_next(self, arguments: dict) -> None:
        frame = self._stepped_frame()
        engine = self.requests.engine
        if self._by_instruction(arguments):
            engine.set_next(frame)
        else:
            engine.set_next_line(frame)

    def r_stepIn(self, arguments: dict) -> None:
        """By line or statement, at a compiled graph's call: into the graph,
        as `s` at the prompt; by instruction, over it as `si`."""
        frame = self._stepped_frame()
        engine = self.requests.engine
        if not self._by_instruction(arguments):
            note = self.requests.session.step_into_graph_here()
            if note is not None:
                if note:
                    self.requests.frontend.output(f"dyndbg: {note}")
                return
        if self._by_instruction(arguments):
            engine.set_step()
        else:
            engine.set_step_line(frame)

    def r_stepOut(self, arguments: dict) -> None:
        self.requests.engine.set_return(self._stepped_frame())

    def r_stepBack(self, arguments: dict) -> None:
        self._back("back", "stepBack")

    def r_reverseContinue(self, arguments: dict) -> None:
        self._back(f"back {len(self.requests.engine.history) or 1}", "reverseContinue")

    def _back(self, command: str, request: str) -> None:
        """Show a recorded point (the program does not move): a stop event
        tells the client to read the frames again."""
        self.requests.checked_stop()
        if not self.requests.engine.recording and not len(self.requests.engine.history):
            raise RequestError("stepping back needs the recording: launch with "
                               "\"record\": true, or evaluate `record on` in the debug console")
        shown = self.requests.console_command(command)
        if shown.errors:
            raise RequestError("; ".join(shown.errors))
        self.refs.clear()
        self._frame_ids.clear()
        self.requests.frontend.output(shown.text)
        past = self.requests.session.past
        description = past.note() if past is not None else "the present"
        self.requests.after_response[request] = lambda: self.requests.event(
            "stopped", {"reason": "step", "threadId": self.requests.stop_thread,
                        "allThreadsStopped": False, "description": description})

    # -- dyndbg's own views --------------------------------------------------------------------
    def _view(self, command: str, arguments: dict) -> dict:
        self.requests.checked_stop()
        extra = arguments.get("args", "")
        if not isinstance(extra, str):
            raise RequestError("'args' must be a string")
        shown = self.requests.console_command(f"{command} {extra}".strip(), typed=True)
        return {"text": shown.text}

    def r_dyndbg_guards(self, arguments: dict) -> dict:
        return self._view("guards", arguments)

    def r_dyndbg_cache(self, arguments: dict) -> dict:
        return self._view("cache", arguments)

    def r_dyndbg_graph(self, arguments: dict) -> dict:
        return self._view("graph", arguments)

    def r_dyndbg_why(self, arguments: dict) -> dict:
        return self._view("why", arguments)


def family_handler(family: object, command: str, refused: Callable[[], str] | None,
                   ) -> Callable[[dict], dict | None] | None:
    """A stop family's handler for `command` (its `r_COMMAND`), a refusal
    giving `refused()`'s reason where it has none and refuses it, or None
    (the usual one serves): compile stops and graph stops alike."""
    found = getattr(family, "r_" + command.replace("/", "_"), None)
    if found is not None or refused is None:
        return found
    reason = refused

    def refuse(arguments: dict) -> None:
        raise RequestError(reason())
    return refuse


def stack_trace(frames: list[dict], arguments: dict) -> dict:
    """A `stackTrace` request's answer: the frames it asks for (startFrame,
    levels), innermost first."""
    start = arguments.get("startFrame") or 0
    levels = arguments.get("levels") or 0
    if not isinstance(start, int) or not isinstance(levels, int) or start < 0 or levels < 0:
        raise RequestError("startFrame and levels must be integers of 0 or more")
    shown = frames[start:start + levels] if levels else frames[start:]
    return {"stackFrames": shown, "totalFrames": len(frames)}


def variables_of(refs: References, arguments: dict, dying: str) -> dict:
    """A `variables` request's answer from the stop's references (which die
    `dying`)."""
    ref = arguments.get("variablesReference")
    start, count = arguments.get("start") or 0, arguments.get("count") or 0
    if not (isinstance(ref, int) and isinstance(start, int) and isinstance(count, int)):
        raise RequestError("variablesReference, start and count must be integers")
    try:
        return {"variables": refs.variables(ref, start, count)}
    except StaleReference:
        raise RequestError(f"no variables reference {ref} at this stop (references die "
                           f"{dying})") from None


def evaluated(session: Session, expression: str, context: str) -> object:
    """An `evaluate` request's value: a hover reads names and attributes
    without running the program's code; watch and the rest evaluate."""
    try:
        if context == "hover":
            return hover_value(expression, session.namespace(), session.frame_globals())
        return session.evaluate(expression)
    except NotHoverable as why:
        raise RequestError(str(why)) from None
    except Exception as error:  # noqa: BLE001 - the user's expression
        raise RequestError(f"{type(error).__name__}: {exception_text(error)}") from None


def console(requests: Hub, line: str) -> dict:
    """The debug console: the session's commands as at the prompt (those that
    move the program refused), or Python."""
    session = requests.session
    command, word = session.parse_command(line.strip()) if line.strip() else (None, "")
    if command is not None:
        why = console_refusal(command.__name__[3:], word)
        if why is not None:
            raise RequestError(why)
    shown = requests.console_command(line, typed=True)   # the rest (;;, aliases) checked there
    return {"result": shown.text, "variablesReference": 0}


def console_refusal(name: str, word: str) -> str | None:
    """Why the debug console refuses the command `name` (typed as `word`), if it does."""
    if name in MOVING_COMMANDS:
        return (f"'{word}' moves the program or the view: use the editor's buttons "
                "(continue, step, step back), so that it knows where the program is")
    if name in CLIENT_OWNED:
        return f"'{word}': set breakpoints in the editor (its breakpoint list is the one it sends)"
    return None


def refuse_in_console(name: str, word: str) -> None:
    """The inspection session's guard: a refused command is an error line."""
    why = console_refusal(name, word)
    if why is not None:
        raise CommandError(why)


class _Note:
    """A line of text shown as a variable's value (why a stack is not readable)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text
