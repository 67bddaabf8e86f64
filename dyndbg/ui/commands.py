"""The commands: instruction-level versions of pdb's. Help comes from the
docstrings (first line: usage)."""
from __future__ import annotations

import fnmatch
import linecache
import os
from typing import TYPE_CHECKING

from dyndbg.cpython import SILENT_OPNAMES
from dyndbg.engine.breakpoints import (Breakpoint, CatchTarget, InstructionTarget, LineTarget,
                                       Target)
from dyndbg.ui import render, values
from dyndbg.ui.parsing import (CommandError, InstructionSpec, Place, check_alias_body,
                               check_condition, expand_aliases, parse_count, parse_int,
                               parse_list_range, parse_location, parse_numbers, split_commands,
                               split_condition)
from dyndbg.ui.values import summarize, type_name

if TYPE_CHECKING:
    from dyndbg.ui.session import Session


class Commands:
    ALIASES = {
        "s": "step", "n": "next", "r": "return", "unt": "until", "c": "continue",
        "cont": "continue", "b": "break", "cl": "clear", "w": "where", "bt": "where",
        "u": "up", "d": "down", "l": "list", "ll": "longlist", "dis": "longlist",
        "h": "help", "q": "quit", "exit": "quit", "?": "help",
    }
    GROUPS = [
        ("running", ["step", "next", "return", "until", "continue", "quit"]),
        ("breakpoints", ["break", "tbreak", "catch", "clear", "disable", "enable",
                         "condition", "ignore"]),
        ("dynamo", ["graph", "guards", "cache"]),
        ("looking", ["stack", "locals", "globals", "p", "pp", "display", "undisplay",
                     "where", "up", "down", "list", "longlist", "source"]),
        ("other", ["alias", "unalias", "sticky", "set", "help"]),
    ]

    # -- running ----------------------------------------------------------------------
    def do_step(self: "Session", arg: str) -> None:
        """s(tep) [N]
        Run the next instruction (N instructions), stopping in any dynamo-generated
        frame, including one that the current instruction calls."""
        self.engine.set_step(parse_count(arg, "step count"))
        self.resume()

    def do_next(self: "Session", arg: str) -> None:
        """n(ext) [N]
        Run to the next instruction of this frame (N instructions); calls run
        through. When the frame returns, stop at the next generated instruction."""
        count = parse_count(arg, "step count")
        self.engine.set_next(self._stopped_frame(), count)
        self.resume()

    def do_return(self: "Session", arg: str) -> None:
        """r(eturn)
        Run until this frame's return instruction; step again to stop in the caller."""
        self.engine.set_return(self._stopped_frame())
        self.resume()

    def do_until(self: "Session", arg: str) -> None:
        """unt(il) [INDEX]
        Run until an instruction of this frame with an index greater than the
        current one (past a loop), or at least INDEX; or until the frame returns."""
        assert self.stop is not None
        index = self.stop.instr.index + 1
        if arg:
            index = parse_int(arg, "instruction index")
            if not 0 <= index < len(self.stop.info):
                raise CommandError(f"instruction index out of range (0..{len(self.stop.info) - 1})")
        self.engine.set_until(self._stopped_frame(), index)
        self.resume()

    def do_continue(self: "Session", arg: str) -> None:
        """c(ont(inue))
        Run until a breakpoint or an exception in generated code."""
        self.engine.set_continue()
        self.resume()

    def do_quit(self: "Session", arg: str) -> None:
        """q(uit)
        End the program, as pdb does."""
        self.write("dyndbg: quitting")
        self.engine.quit()

    def _stopped_frame(self: "Session"):  # type: ignore[no-untyped-def]
        assert self.stop is not None
        if self.frame is not self.stop.frame:
            self.write("(stepping from the frame where execution stopped, not the selected one)")
        return self.stop.frame

    # -- breakpoints ------------------------------------------------------------------------
    def _parse_target(self: "Session", spec: str) -> Target:
        assert self.stop is not None
        location = parse_location(spec)
        if not isinstance(location, InstructionSpec):
            return location
        info, entry = self.stop.info, self.stop.entry
        selected = self.frame
        if selected is not self.stop.frame and self.engine.registry.is_generated(selected.f_code):
            entry = self.engine.entry_for(selected.f_code)  # type: ignore[assignment]
            info = self.engine.info_for(entry)
        if location.place is Place.OFFSET:
            offset = location.number
            instr = info.at_offset(offset)
            if instr is None:
                raise CommandError(f"no instruction starts at offset {offset} in {entry.label()}")
            if instr.opname in SILENT_OPNAMES:
                raise CommandError(f"@{offset} ({instr.opname}) runs before tracing starts")
            return InstructionTarget(entry.code, offset, instr.index, entry.label())
        index = location.number
        if not 0 <= index < len(info):
            raise CommandError(f"instruction index out of range (0..{len(info) - 1})")
        instr = info.instructions[index]
        if instr.opname in SILENT_OPNAMES:
            raise CommandError(f"instruction {index} ({instr.opname}) runs before tracing "
                               f"starts; use {index + 1}")
        return InstructionTarget(entry.code, instr.offset, index, entry.label())

    def _add_breakpoint(self: "Session", arg: str, temporary: bool) -> None:
        if not arg.strip():
            self._list_breakpoints()
            return
        spec, condition = split_condition(arg)
        target = self._parse_target(spec)
        bp = self.engine.breakpoints.add(target, temporary, condition)
        kind = "Temporary breakpoint" if temporary else "Breakpoint"
        resolution = self._resolution(bp)
        self.write(f"{kind} {bp.number} at {target.describe()}"
                   + (f" ({resolution})" if resolution else ""))

    def _resolution(self: "Session", bp: Breakpoint) -> str:
        """`resolved: ...` or `pending: ...`, from the generated code seen so far."""
        target = bp.target
        if isinstance(target, InstructionTarget):
            return ""
        labels = [entry.label() for entry in self.engine.registry.entries()
                  if target.offsets(entry, self.engine.info_for(entry))]
        if labels:
            more = f" (+{len(labels) - 3} more)" if len(labels) > 3 else ""
            return "resolved: in " + ", ".join(labels[:3]) + more
        if isinstance(target, LineTarget):
            if not os.path.exists(target.filename) and not any(
                    target.file_matches(e.code.co_filename) for e in self.engine.registry.entries()):
                return "pending: no such file seen yet"
            return ("pending: no generated instruction for that line yet; lines captured "
                    "inside a graph have none, their graph-break line does")
        return "pending: no matching code compiled yet"

    def visible_breakpoints(self: "Session") -> list[Breakpoint]:
        """The user's, and breakpoint 0 (torch's markers) once code has markers."""
        has_markers = self.engine.registry.has_markers
        return [bp for bp in self.engine.breakpoints if bp.number or has_markers]

    def _list_breakpoints(self: "Session") -> None:
        shown = self.visible_breakpoints()
        if not shown:
            self.write("No breakpoints.")
            return
        self.write("Num  Type   State     Where")
        for bp in shown:
            self.write(bp.describe(self._resolution(bp)))

    def do_break(self: "Session", arg: str) -> None:
        """b(reak) [LOCATION] [, CONDITION]
        LOCATION is one of:
          INDEX, @OFFSET        an instruction of the current code object
          FILE:LINE             where generated code enters that source line
          graph N, __compiled_fn_N[_uuid], __compiled_fn_*
                                the call of a compiled graph, from any frame
          resume, torch_dynamo_resume_in_f*, __resume_at_*
                                entry to resume functions
          FUNC, Class.method, module.FUNC
                                entry to the transformed code of a function
        Names may be globs and may name code not compiled yet: the breakpoint
        stays pending until dynamo compiles it. With no argument, list
        breakpoints with their state, condition and hit count."""
        self._add_breakpoint(arg, temporary=False)

    def do_tbreak(self: "Session", arg: str) -> None:
        """tbreak [LOCATION] [, CONDITION]
        A breakpoint deleted after its first stop (locations as for break)."""
        self._add_breakpoint(arg, temporary=True)

    def do_catch(self: "Session", arg: str) -> None:
        """catch compile | recompile | graph-break | exception
        Stop at the first run of each newly compiled code object (compile),
        of each recompilation, with the guard failures that caused it
        (recompile), where a frame leaves its graph for a resume function
        (graph-break), or at every exception raised in generated code
        (exception; without it, exceptions stop only in frames being stepped
        or holding a breakpoint). Listed, disabled and cleared like breakpoints."""
        event = arg.strip()
        if event not in ("compile", "recompile", "graph-break", "exception"):
            raise CommandError("usage: catch compile | recompile | graph-break | exception")
        bp = self.engine.breakpoints.add(CatchTarget(event, since=self.engine.registry.count()))
        self.write(f"Catchpoint {bp.number} ({event})")

    def _breakpoints_named(self: "Session", arg: str) -> list[Breakpoint]:
        found = []
        for number in parse_numbers(arg):
            bp = self.engine.breakpoints.get(number)
            if bp is None:
                raise CommandError(f"no breakpoint number {number}")
            found.append(bp)
        return found

    def do_clear(self: "Session", arg: str) -> None:
        """cl(ear) [N ... | FILE:LINE]
        Delete the numbered breakpoints, those at FILE:LINE, or all of them."""
        table = self.engine.breakpoints
        if not arg.strip():
            numbers = [bp.number for bp in self.visible_breakpoints()]
        elif ":" in arg:
            target = self._parse_target(arg)
            numbers = [bp.number for bp in table if isinstance(bp.target, LineTarget)
                       and bp.target.describe() == target.describe()]
            if not numbers:
                raise CommandError(f"no breakpoint at {arg.strip()}")
        else:
            numbers = [bp.number for bp in self._breakpoints_named(arg)]
        for number in numbers:
            table.delete(number)
            self.write(f"Deleted breakpoint {number}")
        if not numbers:
            self.write("No breakpoints.")

    def _set_enabled(self: "Session", arg: str, enabled: bool) -> None:
        if not arg.strip():
            raise CommandError("usage: enable|disable N [N ...]")
        for bp in self._breakpoints_named(arg):
            bp.enabled = enabled
            self.write(f"{'Enabled' if enabled else 'Disabled'} breakpoint {bp.number}")
        self.engine.breakpoints.changed()

    def do_disable(self: "Session", arg: str) -> None:
        """disable N [N ...]
        Disable breakpoints (kept, but they do not stop)."""
        self._set_enabled(arg, False)

    def do_enable(self: "Session", arg: str) -> None:
        """enable N [N ...]
        Enable breakpoints."""
        self._set_enabled(arg, True)

    def do_condition(self: "Session", arg: str) -> None:
        """condition N [CONDITION]
        Stop at breakpoint N only when CONDITION is true; without one, always."""
        number, _, condition = arg.strip().partition(" ")
        if not number:
            raise CommandError("usage: condition N [CONDITION]")
        bp = self._breakpoints_named(number)[0]
        condition = condition.strip()
        if condition:
            check_condition(condition)
            bp.condition = condition
            self.write(f"New condition set for breakpoint {bp.number}.")
        else:
            bp.condition = None
            self.write(f"Breakpoint {bp.number} is now unconditional.")

    def do_ignore(self: "Session", arg: str) -> None:
        """ignore N COUNT
        Pass breakpoint N the next COUNT times it is reached."""
        parts = arg.split()
        if len(parts) != 2:
            raise CommandError("usage: ignore N COUNT")
        bp = self._breakpoints_named(parts[0])[0]
        bp.ignore = max(0, parse_int(parts[1], "count"))
        self.write(f"Will ignore next {bp.ignore} crossings of breakpoint {bp.number}.")

    # -- looking -------------------------------------------------------------------------------
    def do_stack(self: "Session", arg: str) -> None:
        """stack
        The value stack of the selected frame, bottom to top: index, type, value.
        In expressions it is __stack__ (top last)."""
        stack, note = self.frame_stack()
        for line in render.stack_lines(stack, note):
            self.write(line)

    def do_locals(self: "Session", arg: str) -> None:
        """locals
        The local variables of the selected frame."""
        names = self.frame_locals()
        if not names:
            self.write("no locals")
        width = min(30, max((len(name) for name in names), default=0))  # dynamo's are long
        for name, value in list(names.items()):
            self.write(f"  {name:<{width}} {type_name(value):<14} {summarize(value)}")

    def do_globals(self: "Session", arg: str) -> None:
        """globals [PATTERN]
        Module globals of the selected frame matching a glob (e.g. __compiled_fn_*)."""
        pattern = arg.strip() or "*"
        shown = 0
        for name, value in sorted(self.frame.f_globals.items()):
            if name == "__builtins__" or not fnmatch.fnmatchcase(name, pattern):
                continue
            self.write(f"  {name:<30} {type_name(value):<14} {summarize(value, 60)}")
            shown += 1
        if not shown:
            self.write(f"no globals match {pattern!r}")

    def do_p(self: "Session", arg: str) -> None:
        """p EXPRESSION
        Print the value of an expression evaluated in the selected frame."""
        self.print_value(arg, pretty=False)

    def do_pp(self: "Session", arg: str) -> None:
        """pp EXPRESSION
        Pretty-print the value of an expression."""
        self.print_value(arg, pretty=True)

    def do_display(self: "Session", arg: str) -> None:
        """display [EXPRESSION]
        Show EXPRESSION at every stop; with no argument, list the displays."""
        expression = arg.strip()
        if not expression:
            if not self.displays:
                self.write("No displays.")
            for number, text in self.displays.items():
                self.write(f"{number}: {text}")
            return
        try:
            compile(expression, "<display>", "eval")
        except SyntaxError:
            raise CommandError(f"invalid expression {expression!r}") from None
        number = self._next_display
        self._next_display += 1
        self.displays[number] = expression
        self.write(f"{number}: {expression} = {self._display_value(expression)}")

    def do_undisplay(self: "Session", arg: str) -> None:
        """undisplay [N ...]
        Remove the numbered displays, or all of them."""
        if not arg.strip():
            self.displays.clear()
            self.write("Deleted all displays.")
            return
        for number in parse_numbers(arg, "display number"):
            if self.displays.pop(number, None) is None:
                raise CommandError(f"no display number {number}")
            self.write(f"Deleted display {number}")

    def do_where(self: "Session", arg: str) -> None:
        """w(here) | bt
        The frames from the script down to the current one: generated frames with
        their compile id and instruction, and the Python frames between them."""
        for i, frame in enumerate(self.frames):
            marker = ">" if i == self.selected else " "
            self.write(f"{marker} {i:>2} {self._frame_line(frame)}")

    def _frame_line(self: "Session", frame) -> str:  # type: ignore[no-untyped-def]
        """A frame's `where` line; post mortem, at the instruction of the traceback."""
        lasti = None
        if self.stop is not None and self.stop.frames:
            lasti = next((i for f, i in self.stop.frames if f is frame), None)
        return render.frame_line(frame, self._generated(frame), lasti)

    def _generated(self: "Session", frame):  # type: ignore[no-untyped-def]
        """(label, CodeInfo) for a generated frame, None for a plain one."""
        entry = self.engine.entry_for(frame.f_code)
        return None if entry is None else (entry.label(), self.engine.info_for(entry))

    def _move(self: "Session", arg: str, direction: int) -> None:
        count = parse_int(arg, "frame count") if arg else 1
        target = self.selected + direction * count
        if not 0 <= target < len(self.frames):
            raise CommandError("no frame further " + ("up" if direction < 0 else "down"))
        self.selected = target
        self._list_next = None
        self.write(self._frame_line(self.frame))

    def do_up(self: "Session", arg: str) -> None:
        """u(p) [N]
        Select the frame N levels up (towards the script)."""
        self._move(arg, -1)

    def do_down(self: "Session", arg: str) -> None:
        """d(own) [N]
        Select the frame N levels down (towards the current instruction)."""
        self._move(arg, +1)

    def _listing_target(self: "Session"):  # type: ignore[no-untyped-def]
        frame = self.frame
        entry = self.engine.entry_for(frame.f_code)
        if entry is None:
            raise CommandError("the selected frame is not dynamo-generated code; "
                               f"it is {frame.f_code.co_filename}:{frame.f_lineno}")
        info = self.engine.info_for(entry)
        current = info.index_of(frame.f_lasti)
        return entry, info, current

    def do_list(self: "Session", arg: str) -> None:
        """l(ist) [INDEX | FIRST, LAST]
        Instructions around the current one (or INDEX); again to continue."""
        entry, info, current = self._listing_target()
        if arg.strip():
            first, last = parse_list_range(arg)
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

    def do_longlist(self: "Session", arg: str) -> None:
        """ll | longlist | dis [--raw]
        The whole code object of the selected frame. Dynamo's globals are named
        by what they are (graph 2, the resume function, the module); --raw
        shows their real names."""
        if arg.strip() not in ("", "--raw"):
            raise CommandError("usage: dis [--raw]")
        entry, info, current = self._listing_target()
        self._print_listing(entry, info, 0, len(info) - 1, current, raw=arg.strip() == "--raw")

    def _print_listing(self: "Session", entry, info, first, last, current,  # type: ignore[no-untyped-def]
                       raw: bool = False) -> None:
        offsets = self.engine.breakpoints.at_code(entry, info)
        rename = (lambda text: text) if raw else self.renamer(self.frame)
        for line in render.disassembly(info, first, last, current, offsets, rename):
            self.write(self.highlighter.disassembly_line(line))

    def do_source(self: "Session", arg: str) -> None:
        """source [CONTEXT]
        The user's source around the selected frame's current line (CONTEXT
        lines each side, 5 by default), the line marked."""
        context = parse_int(arg, "context") if arg.strip() else 5
        frame = self.frame
        generated = self._generated(frame)
        if generated is not None:
            line = generated[1].at_offset(frame.f_lasti)
            line = line.line if line is not None else None
        else:
            line = frame.f_lineno
        if line is None:
            raise CommandError("no source line for the current instruction")
        filename = frame.f_code.co_filename
        first = max(1, line - context)
        shown = False
        for number in range(first, line + context + 1):
            text = linecache.getline(filename, number)
            if not text:
                break
            marker = "->" if number == line else "  "
            self.write(f"{marker} {number:>5}  {self.highlighter.python(text.rstrip())}")
            shown = True
        if not shown:
            raise CommandError(f"source not available for {filename}")

    def do_sticky(self: "Session", arg: str) -> None:
        """sticky
        Toggle sticky mode: at every stop, show the instructions around the
        current one, the value stack and the locals together (as pdb++)."""
        self.sticky = not self.sticky
        self.write(f"sticky mode {'on' if self.sticky else 'off'}")
        if self.sticky and self.stop is not None:
            self.print_sticky(self.stop)

    def do_set(self: "Session", arg: str) -> None:
        """set [OPTION [on|off|VALUE]]
        Options: vi (Vi keys at the prompt; off means Emacs keys), sticky,
        color, width (characters of a value shown in summaries).
        With no argument, show the options."""
        words = arg.split()
        if not words:
            self.write(f"vi {'on' if getattr(self, '_vi', False) else 'off'}, "
                       f"sticky {'on' if self.sticky else 'off'}, "
                       f"color {'on' if self.highlighter.enabled else 'off'}, "
                       f"width {values.width()}")
            return
        option, value = words[0], (words[1] if len(words) > 1 else "on")
        if option == "width":
            values.set_width(parse_int(value, "width"))
        elif value not in ("on", "off"):
            raise CommandError(f"set {option} takes on or off")
        elif option in ("vi", "emacs"):
            on = (value == "on") == (option == "vi")
            if not hasattr(self.reader, "set_vi"):
                raise CommandError("vi keys need the terminal prompt (not in plain mode)")
            self.reader.set_vi(on)  # type: ignore[union-attr]
            self._vi = on
        elif option == "sticky":
            self.sticky = value == "on"
        elif option == "color":
            if value == "on" and not self.color:
                raise CommandError("colour needs a terminal (and no NO_COLOR or --no-color)")
            self.highlighter.enabled = value == "on"
        else:
            raise CommandError(f"unknown option {option!r} (vi, sticky, color, width)")
        self.write(f"{option} {value}")

    # -- aliases (pdb's) ---------------------------------------------------------------------------
    def do_alias(self: "Session", arg: str) -> None:
        """alias [NAME [COMMAND]]
        Make NAME run COMMAND: in COMMAND, %1..%9 are replaced by the words
        after NAME and %* by all of them. Aliases apply to the first word of
        a line, again while it is an alias, and may hide a command; COMMAND
        may hold ';;'. 'alias NAME' shows one alias, 'alias' all of them."""
        words = arg.split()
        if not words:
            if not self.user_aliases:
                self.write("No aliases.")
            for name in sorted(self.user_aliases):
                self.write(f"{name} = {self.user_aliases[name]}")
            return
        name = words[0]
        if len(words) == 1:
            if name not in self.user_aliases:
                raise CommandError(f"no alias {name!r}")
            self.write(f"{name} = {self.user_aliases[name]}")
            return
        if name in ("alias", "unalias"):
            raise CommandError(f"{name!r} cannot be an alias (it could not be undone)")
        body = arg.strip()[len(name):].strip()
        check_alias_body(body)
        self.user_aliases[name] = body

    def do_unalias(self: "Session", arg: str) -> None:
        """unalias NAME
        Delete the alias NAME."""
        words = arg.split()
        if len(words) != 1:
            raise CommandError("usage: unalias NAME")
        if self.user_aliases.pop(words[0], None) is None:
            raise CommandError(f"no alias {words[0]!r}")

    def expand_aliases(self: "Session", line: str) -> str:
        return expand_aliases(line, self.user_aliases, lambda name: self.command(name) is not None,
                              lambda rest: self.pending.insert(0, rest))

    def split_commands(self: "Session", line: str) -> str:
        """The line up to its first ';;'; the rest is queued to run next."""
        line, rest = split_commands(line)
        if rest is not None:
            self.pending.insert(0, rest)
        return line

    # -- help -------------------------------------------------------------------------------------
    def do_help(self: "Session", arg: str) -> None:
        """h(elp) [COMMAND]
        List the commands, or show one command's help."""
        name = arg.strip()
        if name:
            command = self.command(name)
            if command is None or not command.__doc__:
                raise CommandError(f"no help for {name!r}")
            for line in command.__doc__.splitlines():
                self.write(line.strip() and "  " * (line != command.__doc__.splitlines()[0])
                           + line.strip())
            return
        self.write("Commands (type 'help COMMAND' for one):")
        for group, names in self.GROUPS:
            usages = [getattr(self, f"do_{n}").__doc__.splitlines()[0] for n in names]
            self.write(f"  {group:<12} " + ", ".join(u.split(" ")[0] for u in usages))
        self.write("Anything else is Python, run in the selected frame "
                   "(__stack__ is the value stack); '!' forces Python.")
        self.write("An empty line repeats the last command; ';;' separates commands.")
