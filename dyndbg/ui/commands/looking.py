"""The commands that look without running: the value stack, variables,
expressions and displays, frames (where, up, down), listings and source."""
from __future__ import annotations

import fnmatch
import linecache
import pprint
import types
from typing import TYPE_CHECKING

from dyndbg.engine.recording.recorded_values import Summary
from dyndbg.timelimit import time_limit
from dyndbg.ui.text import render
from dyndbg.ui.commands.host import Host
from dyndbg.ui.text.parsing import CommandError, parse_int, parse_list_range, parse_numbers
from dyndbg.ui.text.values import cut, safe_repr, summarize, type_name

if TYPE_CHECKING:
    from dyndbg.dynamo.compiles import GeneratedCode
    from dyndbg.engine.codeinfo import CodeInfo

DISPLAY_SECONDS = 2.0
DISPLAY_WIDTH = 240


class LookingCommands:
    title = "looking"

    def __init__(self, host: Host) -> None:
        self.host = host
        self.displays: dict[int, str] = {}   # `display EXPRESSION`, by number
        self._next_display = 1
        self._list_next: int | None = None   # where a bare `l` continues

    def new_stop(self) -> None:
        """A bare `l` lists around the current instruction again."""
        self._list_next = None

    # -- values ---------------------------------------------------------------------------
    def do_stack(self, arg: str) -> None:
        """stack
        The value stack of the selected frame, bottom to top: index, type, value.
        In expressions it is __stack__ (top last)."""
        stack, note = self.host.frame_stack()
        for line in render.stack_lines(stack, note):
            self.host.write(line)

    def do_locals(self, arg: str) -> None:
        """locals
        The local variables of the selected frame."""
        names = self.host.frame_locals()
        if self.host.past is not None:
            self.host.write(f"[{self.host.past.note()}]")
        if not names:
            self.host.write("no locals")
        width = min(30, max((len(name) for name in names), default=0))  # dynamo's are long
        for name, value in list(names.items()):
            self.host.write(f"  {name:<{width}} {type_name(value):<14} {summarize(value)}")

    def do_globals(self, arg: str) -> None:
        """globals [PATTERN]
        Module globals of the selected frame matching a glob (e.g. __compiled_fn_*)."""
        pattern = arg.strip() or "*"
        shown = 0
        for name, value in sorted(self.host.frame_globals().items()):
            if name == "__builtins__" or not fnmatch.fnmatchcase(name, pattern):
                continue
            self.host.write(f"  {name:<30} {type_name(value):<14} {summarize(value, 60)}")
            shown += 1
        if not shown:
            self.host.write(f"no globals match {pattern!r}")

    def do_p(self, arg: str) -> None:
        """p EXPRESSION
        Print the value of an expression evaluated in the selected frame."""
        self._print_value(arg, pretty=False)

    def do_pp(self, arg: str) -> None:
        """pp EXPRESSION
        Pretty-print the value of an expression."""
        self._print_value(arg, pretty=True)

    def _print_value(self, expression: str, pretty: bool) -> None:
        host = self.host
        if not expression.strip():
            raise CommandError("usage: p EXPRESSION")
        try:
            value = host.evaluate(expression)
        except Exception as error:  # noqa: BLE001 - user code
            raise CommandError(f"{type(error).__name__}: {error}") from None
        if isinstance(value, Summary):   # at a recorded point: not the object itself
            host.write(f"{value.text}  (only a summary of this {value.type_name} was recorded)")
        elif pretty:
            try:
                host.write(pprint.pformat(value))
            except Exception as error:  # noqa: BLE001
                raise CommandError(f"pformat failed: {type(error).__name__}: {error}") from None
        else:
            host.write(safe_repr(value))

    # -- displays ----------------------------------------------------------------------------
    def do_display(self, arg: str) -> None:
        """display [EXPRESSION]
        Show EXPRESSION at every stop; with no argument, list the displays."""
        expression = arg.strip()
        if not expression:
            if not self.displays:
                self.host.write("No displays.")
            for number, text in self.displays.items():
                self.host.write(f"{number}: {text}")
            return
        try:
            compile(expression, "<display>", "eval")
        except SyntaxError:
            raise CommandError(f"invalid expression {expression!r}") from None
        number = self._next_display
        self._next_display += 1
        self.displays[number] = expression
        self.host.write(f"{number}: {expression} = {self._display_value(expression)}")

    def do_undisplay(self, arg: str) -> None:
        """undisplay [N ...]
        Remove the numbered displays, or all of them."""
        if not arg.strip():
            self.displays.clear()
            self.host.write("Deleted all displays.")
            return
        for number in parse_numbers(arg, "display number"):
            if self.displays.pop(number, None) is None:
                raise CommandError(f"no display number {number}")
            self.host.write(f"Deleted display {number}")

    def show_displays(self) -> None:
        for number, expression in self.displays.items():
            self.host.write(f"{number}: {expression} = {self._display_value(expression)}")

    def _display_value(self, expression: str) -> str:
        try:
            with time_limit(DISPLAY_SECONDS):
                value = self.host.evaluate(expression)
            return cut(safe_repr(value), DISPLAY_WIDTH)  # shown at every stop: bounded
        except Exception as error:  # noqa: BLE001 - user code, a timeout included
            return f"<{type(error).__name__}: {error}>"

    # -- frames ------------------------------------------------------------------------------
    def do_where(self, arg: str) -> None:
        """w(here) | bt
        The frames from the script down to the current one: generated frames with
        their compile id and instruction, and the Python frames between them.
        At a recorded point: the recorded generated frames, each at its call."""
        if self.host.past is not None:
            self._recorded_where()
            return
        for i, frame in enumerate(self.host.frames):
            marker = ">" if i == self.host.selected else " "
            self.host.write(f"{marker} {i:>2} {self._frame_line(frame)}")

    do_w = do_bt = do_where

    def _recorded_where(self) -> None:
        past = self.host.past
        assert past is not None
        chain = self.host.engine.history.callers(past.record)[::-1]
        self.host.write(f"[{past.note()}; generated frames only]")
        for i, record in enumerate(chain):
            marker = ">" if i == len(chain) - 1 else " "
            code = record.entry.code
            self.host.write(f"{marker} {i:>2} {record.entry.label()}  instr {record.instr.index} "
                            f"@{record.instr.offset}  {code.co_filename}:{record.instr.line} "
                            f"{code.co_name}")
        if chain[0].caller >= 0:
            self.host.write("  (older callers were dropped from the history)")

    def _frame_line(self, frame: types.FrameType) -> str:
        """A frame's `where` line; post mortem, at the instruction of the traceback."""
        return render.frame_line(frame, self._generated(frame), self.host.traceback_lasti(frame))

    def _generated(self, frame: types.FrameType) -> tuple[str, CodeInfo] | None:
        """(label, CodeInfo) for a generated frame, None for a plain one."""
        engine = self.host.engine
        entry = engine.entry_for(frame.f_code)
        return None if entry is None else (entry.label(), engine.info_for(entry))

    def _move(self, arg: str, direction: int) -> None:
        host = self.host
        if host.past is not None:
            raise CommandError("at a recorded point frames are not selected ('where' lists "
                               "them); 'present' returns to the live frames")
        count = parse_int(arg, "frame count") if arg else 1
        if count < 1:
            raise CommandError("frame count must be at least 1")
        end = "Oldest frame" if direction < 0 else "Newest frame"   # pdb's words
        target = min(max(host.selected + direction * count, 0), len(host.frames) - 1)
        if target == host.selected:
            raise CommandError(end)
        if target != host.selected + direction * count:
            host.write(end)      # as far as it goes
        host.selected = target
        self._list_next = None
        host.write(self._frame_line(host.frame))

    def do_up(self, arg: str) -> None:
        """u(p) [N]
        Select the frame N levels up (towards the script)."""
        self._move(arg, -1)

    do_u = do_up

    def do_down(self, arg: str) -> None:
        """d(own) [N]
        Select the frame N levels down (towards the current instruction)."""
        self._move(arg, +1)

    do_d = do_down

    # -- listings ----------------------------------------------------------------------------
    def _listing_target(self) -> tuple[GeneratedCode, CodeInfo, int | None]:
        past = self.host.past
        if past is not None:
            recorded = past.record.entry
            return recorded, self.host.engine.info_for(recorded), past.record.instr.index
        frame = self.host.frame
        entry = self.host.engine.entry_for(frame.f_code)
        if entry is None:
            raise CommandError("the selected frame is not dynamo-generated code; "
                               f"it is {frame.f_code.co_filename}:{frame.f_lineno}")
        info = self.host.engine.info_for(entry)
        current = info.index_of(frame.f_lasti)
        return entry, info, current

    def do_list(self, arg: str) -> None:
        """l(ist) [INDEX | . | FIRST, LAST | FIRST, COUNT]
        Instructions around the current one (or INDEX; `.`: the current one
        again); again to continue. A second number smaller than the first is
        a count, as in pdb."""
        entry, info, current = self._listing_target()
        if arg.strip():
            first, last = parse_list_range(arg, current or 0)
        elif self._list_next is not None:
            first, last = self._list_next, self._list_next + 10
        else:
            center = current or 0
            first, last = center - 5, center + 5
        first = max(0, first)
        if first >= len(info):
            raise CommandError(f"end of code object ({len(info)} instructions)")
        self._print_listing(entry, info, first, min(last, len(info) - 1), current)
        self._list_next = last + 1

    do_l = do_list

    def do_longlist(self, arg: str) -> None:
        """ll | longlist | dis [--raw]
        The whole code object of the selected frame. Dynamo's globals are named
        by what they are (graph 2, the resume function, the module); --raw
        shows their real names."""
        if arg.strip() not in ("", "--raw"):
            raise CommandError("usage: dis [--raw]")
        entry, info, current = self._listing_target()
        self._print_listing(entry, info, 0, len(info) - 1, current, raw=arg.strip() == "--raw")

    do_ll = do_dis = do_longlist

    def _print_listing(self, entry: GeneratedCode, info: CodeInfo, first: int, last: int,
                       current: int | None, raw: bool = False) -> None:
        host = self.host
        offsets = host.engine.breakpoints.at_code(entry, info)
        rename = (lambda text: text) if raw else render.renamer_for(host.frame_globals())
        if host.past is not None:
            host.write(f"[{host.past.note()}]")
        for line in render.disassembly(info, first, last, current, offsets, rename,
                                       entry.edited or frozenset()):
            host.write(host.highlighter.disassembly_line(line))

    def do_source(self, arg: str) -> None:
        """source [CONTEXT]
        The user's source around the selected frame's current line (CONTEXT
        lines each side, 5 by default), the line marked."""
        context = parse_int(arg, "context") if arg.strip() else 5
        frame = self.host.frame
        generated = self._generated(frame)
        line: int | None
        filename = frame.f_code.co_filename
        if self.host.past is not None:
            line = self.host.past.record.instr.line
            filename = self.host.past.record.entry.code.co_filename
        elif generated is not None:
            instr = generated[1].at_offset(frame.f_lasti)
            line = instr.line if instr is not None else None
        else:
            line = frame.f_lineno
        if line is None:
            raise CommandError("no source line for the current instruction")
        first = max(1, line - context)
        shown = False
        for number in range(first, line + context + 1):
            text = linecache.getline(filename, number)
            if not text:
                break
            marker = "->" if number == line else "  "
            self.host.write(f"{marker} {number:>5}  {self.host.highlighter.python(text.rstrip())}")
            shown = True
        if not shown:
            raise CommandError(f"source not available for {filename}")
