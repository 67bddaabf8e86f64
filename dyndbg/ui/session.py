"""The command loop at a stop: reading lines, telling commands from Python,
`;;` chaining, repeating the last command on an empty line. The session is the
Host (commands/host.py) of the command families, each in a module of its own."""
from __future__ import annotations

import ast
import io
import sys
import types
from typing import TYPE_CHECKING, Callable, NamedTuple, TextIO

from dyndbg.engine.stop import Stop, StopReason, InstructionTraceEvent
from dyndbg.ui.text import boundaries, render
from dyndbg.ui.text.boundaries import GraphCall
from dyndbg.ui.commands.breakpoints import BreakpointCommands
from dyndbg.ui.commands.edits import CacheCommands
from dyndbg.ui.commands.compiled import DynamoCommands
from dyndbg.ui.commands.history import HistoryCommands
from dyndbg.ui.commands.host import Family, PastView, Reader
from dyndbg.ui.commands.looking import LookingCommands
from dyndbg.ui.text.parsing import CommandError, expand_aliases, leading_word, split_commands
from dyndbg.ui.terminal.reader import (KernelReader, ScriptedReader, TerminalReader, in_kernel,
                              is_terminal, line_terminal_io, printable)
from dyndbg.ui.commands.running import RunningCommands
from dyndbg.ui.commands.settings import SessionCommands
from dyndbg.ui.stop_printer import StopPrinter
from dyndbg.ui.stop_view import StopView
from dyndbg.ui.text.style import Highlighter, wants_color
from dyndbg.ui.terminal.prompt import PromptReader
from dyndbg.ui.commands.compile_stops import PROMPT, CompileStopCommands
from dyndbg.ui.commands.graph_stops import PROMPT as GRAPH_PROMPT, GraphStopCommands

# Commands that would run the program: post mortem, c and q end the session, the rest refuse.
RUNNING_COMMANDS = {"step", "stepi", "next", "nextline", "stepline", "return", "until", "continue",
                    "quit"}
# pdb's `?` for help: a name no `do_` method can have.
SPELLINGS = {"?": "help"}

if TYPE_CHECKING:
    from dyndbg.engine.debugger import Engine
    from dyndbg.dynamo.symbolic import SymbolicState
    from dyndbg.engine.stop import CompileStop, GraphStop


class CommandOutput(NamedTuple):
    """What a command line (or a stop's printing) wrote, as the prompt shows
    it, and the errors it gave, each as the prompt says it after `*** `. The
    editor's console shows the text; a request that fails says the errors,
    read from here, never from the text."""

    text: str
    errors: tuple[str, ...]


class Session(StopView):

    def __init__(self, out: TextIO | None, commands: list[str] | None = None,
                 no_color: bool = False, terminal_io: tuple | None = None) -> None:
        """out None: no output of its own (the editor's session, whose output is
        read through output_of). terminal_io: (input, output) for prompt-toolkit
        instead of the real terminal, as its test harness provides
        (create_pipe_input, DummyOutput)."""
        self.out: TextIO = out if out is not None else io.StringIO()
        self.sticky = False
        # The families, in help order; the session talks to the ones named here.
        self.running = RunningCommands(self)
        self.breaking = BreakpointCommands(self)
        self.dynamo = DynamoCommands(self)
        self.cache_commands = CacheCommands(self)
        self.looking = LookingCommands(self)
        self.history_commands = HistoryCommands(self)
        self.settings = SessionCommands(self)
        self.families: tuple[Family, ...] = (self.running, self.breaking, self.dynamo,
                                             self.cache_commands, self.looking,
                                             self.history_commands, self.settings)
        # At a stop while dynamo compiles, these take the place of those of the same name.
        self.compile_commands = CompileStopCommands(self)
        # At a stop inside a compiled graph, these (commands/graph_stops.py).
        self.graph_commands = GraphStopCommands(self)
        # The level of the compile stop looked at (the editor's selected frame);
        # None: its innermost.
        self.compile_level: SymbolicState | None = None
        self.printer = StopPrinter(self)
        self.color = False
        self.highlighter = Highlighter(False)
        self.reader: Reader
        self.use_output(no_color, terminal_io)
        self.pending: list[str] = list(commands or [])
        self.engine: "Engine"  # set by the caller once the engine exists
        self.last_command = ""
        self._greeted = False
        self._resumed = False
        self.frames: list[types.FrameType] = []
        self.selected = 0
        # The compiled graph the stop's instruction calls (`graph` shows it), and
        # the one the stop before called (this stop shows its outputs).
        self.graph_call: GraphCall | None = None
        self.graph_call_before: GraphCall | None = None
        self._locals: dict[int, dict] = {}
        self.past: PastView | None = None      # a recorded point in view (`back`)
        self._past_locals: tuple[int, dict] | None = None   # (seq, its locals)
        # (command name, word typed): raises CommandError to refuse it (an
        # editor's console refuses what moves the program).
        self.guard: Callable[[str, str], None] | None = None
        self._errors: list[str] | None = None   # output_of: the errors given meanwhile

    def use_output(self, no_color: bool = False, terminal_io: tuple | None = None) -> None:
        """Colour and where commands come from, for `self.out` as it is now: a
        notebook's front end (in a Jupyter kernel, plain), prompt-toolkit (a
        colour terminal), input() (a plain one), or stdin's lines."""
        terminal = terminal_io is not None or is_terminal(self.out)
        kernel = terminal_io is None and in_kernel()
        self.color = terminal and not kernel and (terminal_io is not None or
                                                  wants_color(self.out, no_color))
        self.highlighter = Highlighter(self.color)
        if kernel:
            self.reader = KernelReader(self.write)
        elif self.color:
            from dyndbg.ui.terminal.completion import DebuggerCompleter  # loads prompt-toolkit
            self.reader = PromptReader(self.write, DebuggerCompleter(self),
                                       self.printer.toolbar_text,
                                       *(terminal_io or line_terminal_io()))
        elif terminal:
            self.reader = TerminalReader(self.write)
        else:
            self.reader = ScriptedReader(sys.stdin, self.write)

    # -- output ---------------------------------------------------------------------
    def write(self, text: str = "") -> None:
        """Write one line of the debugger's output; never raises."""
        try:
            try:
                self.out.write(text + "\n")
            except UnicodeEncodeError:
                encoding = getattr(self.out, "encoding", None) or "utf-8"
                self.out.write((text + "\n").encode(encoding, "backslashreplace")
                               .decode(encoding))
            self.out.flush()
        except (OSError, ValueError):
            pass  # the output went away; the program must not notice

    def message(self, text: str) -> None:
        self.write(text)

    def instruction_traced(self, event: InstructionTraceEvent) -> None:
        """A line of `trace on`, written and flushed before the instruction
        runs: the last one shown names the culprit of a hard crash."""
        self.write(render.instruction_trace_line(event, render.renamer(event.frame)))

    def error(self, text: str) -> None:
        if self._errors is not None:
            self._errors.append(text)
        self.write(f"*** {text}")

    def output_of(self, action: Callable[[], None]) -> CommandOutput:
        """Run `action` (commands, a stop's printing) with what it writes, and
        the errors it gives, kept for the caller instead of written (the
        editor's console shows them)."""
        saved = self.out, self._errors
        kept: list[str] = []
        self.out, self._errors = io.StringIO(), kept
        try:
            action()
            return CommandOutput(self.out.getvalue().rstrip("\n"), tuple(kept))
        finally:
            self.out, self._errors = saved

    def run_line(self, line: str, guard: Callable[[str, str], None] | None = None
                 ) -> CommandOutput:
        """A line as the prompt takes it (`;;`, aliases), its output kept;
        `guard(name, word)` raises CommandError to refuse a command."""
        def run() -> None:
            self.onecmd(line)
            while self.pending:   # what followed `;;`, or an alias made of several
                self.onecmd(self.pending.pop(0))
        self.guard = guard
        try:
            return self.output_of(run)
        finally:
            self.guard = None

    # -- a stop -----------------------------------------------------------------------
    @property
    def stop(self) -> Stop | None:
        """The stop in generated code the program is at: the engine holds it."""
        return self.engine.held.generated

    @property
    def compile_stop(self) -> CompileStop | None:
        """The compile stop the program is at (the engine holds it), at the
        level looked at."""
        stop = self.engine.held.compile
        if stop is None or self.compile_level is None or self.compile_level is stop.state:
            return stop
        return stop._replace(state=self.compile_level)

    def step_into_graph_here(self) -> str | None:
        """At the call of a compiled graph (the stop's own instruction), step
        into it once the stop ends (`s` at the prompt, stepIn in the editor):
        "" when entered, else the one line saying why it is stepped over.
        None where the stop is at no graph's call (nothing is set)."""
        call, stop = self.graph_call, self.stop
        if call is None or stop is None or call.frame is not stop.frame or \
                call.index != stop.instr.index:
            return None
        from dyndbg.dynamo.graphs.views import graph_backend
        return self.engine.step_into_graph(call.frame, call.name, graph_backend(call.name))

    def enter(self, stop: Stop) -> None:
        """Look at `stop`, the one the engine holds (the editor front end
        shares this): its frames, the innermost selected."""
        self.graph_call_before, self.graph_call = self.graph_call, boundaries.graph_call_at(stop)
        self.frames = [f for f, _ in stop.frames] if stop.frames else \
            self._frame_list(stop.frame)
        self.selected = len(self.frames) - 1
        self._locals = {}
        self.past = None
        self.looking.new_stop()
        self._resumed = False

    def interact(self, stop: Stop) -> None:
        self.enter(stop)
        if not self._greeted:
            self._greeted = True
            self.write("dyndbg: stopped in dynamo-generated code. 'help' lists commands, "
                       "'c' continues.")
            if self.engine.traces_globally:
                self.write("dyndbg: no bytecode debugger callback in this torch (or "
                           "DYNDBG_NO_CALLBACK=1): tracing globally, slower")
        self._interruptible(lambda: self.print_stop(stop))
        self._command_loop()

    def interact_compile(self, stop: CompileStop) -> None:
        """A stop while dynamo compiles (commands/compile_stops.py)."""
        resumed, self._resumed = self._resumed, False
        self.compile_level = None
        try:
            if not self._greeted:
                self._greeted = True
                self.write("dyndbg: stopped while dynamo compiles. 'help' lists commands, "
                           "'c' continues.")
            self._interruptible(lambda: self.compile_commands.print_stop(stop))
            self._command_loop()
        finally:
            self._resumed = resumed

    def interact_graph(self, stop: GraphStop) -> None:
        """A stop inside a compiled graph, before one of its nodes
        (commands/graph_stops.py)."""
        resumed, self._resumed = self._resumed, False
        try:
            self._interruptible(lambda: self.graph_commands.print_stop(stop))
            self._command_loop()
        finally:
            self._resumed = resumed

    @property
    def prompt(self) -> str:
        if self.engine.held.graph is not None:
            return GRAPH_PROMPT
        return PROMPT if self.compile_stop is not None else "(dyndbg) "

    def _command_loop(self) -> None:
        while not self._resumed:
            if self.pending:
                line = self.pending.pop(0)
                self.write(self.prompt + printable(line))
            else:
                try:
                    read = self.reader.read(self.prompt)
                except KeyboardInterrupt:
                    self.write("")  # Ctrl-C at the prompt clears the line, as in pdb
                    continue
                if read is None:  # end of scripted input: run to completion
                    self.write(getattr(self.reader, "detach_line", None) or
                               "dyndbg: end of input, detaching; the program runs to completion")
                    self.engine.detach()
                    return
                line = read
            self._interruptible(lambda: self.onecmd(line))

    def _interruptible(self, action: Callable[[], None]) -> None:
        """Ctrl-C while a command runs, or while a stop is printed, ends that alone
        and the prompt comes back, as pdb's --KeyboardInterrupt-- does; it never
        reaches the program."""
        try:
            action()
        except KeyboardInterrupt:
            self.write("--KeyboardInterrupt--")

    def print_stop(self, stop: Stop) -> None:
        self.printer.print_stop(stop)

    def show_displays(self) -> None:
        self.looking.show_displays()

    def print_sticky(self, stop: Stop) -> None:
        self.printer.print_sticky(stop)

    def command_names(self) -> list[str]:
        """What the prompt completes: every command and alias of pdb's, and the user's."""
        return ([n[3:] for family in self.families for n in dir(family) if n.startswith("do_")]
                + list(SPELLINGS) + list(self.settings.aliases))

    # -- parsing ---------------------------------------------------------------------------
    def onecmd(self, line: str) -> None:
        if not line.strip():
            line = self.last_command
            if not line:
                return
        else:
            self.last_command = line
        line = self._split(line)
        try:
            line = expand_aliases(line, self.settings.aliases,
                                  lambda name: self.command(name) is not None, self._queue)
            self._dispatch(line.strip())
        except CommandError as error:
            self.error(str(error))
        except Exception as error:  # noqa: BLE001 - never a traceback of ours
            self.error(f"{type(error).__name__}: {error}")

    def _dispatch(self, line: str) -> None:
        command, word = self.parse_command(line)
        if command is None:
            self.run_python(line[1:] if line.startswith("!") else line)
            return
        name = command.__name__[3:]  # an alias is the same function: `c` is continue
        if self.guard is not None:
            self.guard(name, word)
        if self.past is not None and name in RUNNING_COMMANDS:
            self.past = None
            self.write(f"dyndbg: back at the present to {name} (from a recorded point)")
        if self.compile_stop is None and self.stop is not None and \
                self.stop.reason is StopReason.POST_MORTEM and \
                name in RUNNING_COMMANDS:
            if name not in ("continue", "quit"):
                raise CommandError("post mortem: the program has already failed; nothing "
                                   "runs any more ('c' or 'q' ends the session)")
            self.write("dyndbg: post-mortem session ends")
            self.resume()
            return
        command(line[len(word):].strip())

    def parse_command(self, line: str) -> tuple[Callable[[str], None] | None, str]:
        """The command a non-empty `line` runs and the word naming it; None
        where the line is Python (`!` forces it)."""
        if line.startswith("!"):
            return None, ""
        word = leading_word(line)
        if not word and line.split()[0] in SPELLINGS:
            word = line.split()[0]                 # `?`, as in pdb
        command = self.command(word)
        if command is None or (line != word and self._is_python(line, word)):
            return None, word
        return command, word

    def _is_python(self, line: str, word: str) -> bool:
        """`c = 3` and `n + 1` (n a variable) are Python; `c`, `b 12`, `p x` are commands."""
        if line == word:
            return False
        try:
            tree = ast.parse(line)
        except (SyntaxError, ValueError):
            return False
        if len(tree.body) == 1 and isinstance(tree.body[0], (ast.Assign, ast.AugAssign,
                                                             ast.AnnAssign)):
            return True
        return word in self.namespace() or word in self.frame_globals()

    def command(self, word: str) -> Callable[[str], None] | None:
        """The `do_` method WORD names (pdb's aliases included), or None."""
        name = SPELLINGS.get(word, word)
        if not name:
            return None
        if self.compile_stop is not None:
            return self.compile_commands.command(name, self.families)
        if self.engine.held.graph is not None:
            return self.graph_commands.command(name, self.families)
        for family in self.families:
            found = getattr(family, f"do_{name}", None)
            if found is not None:
                return found
        return None

    def _split(self, line: str) -> str:
        """The line up to its first ';;'; the rest is queued to run next."""
        line, rest = split_commands(line)
        if rest is not None:
            self._queue(rest)
        return line

    def _queue(self, line: str) -> None:
        """Run LINE next, before what was queued earlier."""
        self.pending.insert(0, line)

    def resume(self) -> None:
        self._resumed = True

