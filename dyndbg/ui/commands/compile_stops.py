"""The commands at a stop while dynamo compiles (`catch trace`, `b --trace`):
the user's code as dynamo interprets it, its symbolic stack and locals, the
graph and guards so far, and stepping dynamo one instruction at a time.

At such a stop these take the place of the commands of the same name;
the breakpoint commands, p/pp, help, alias and quit work as anywhere;
the others (they look at a running generated frame) say there is none.
"""
from __future__ import annotations

import linecache
from typing import TYPE_CHECKING, Callable, Sequence

from dyndbg.dynamo.compiles import why
from dyndbg.dynamo.symbolic import CompilePoint
from dyndbg.dynamo.symbolic import compile_id as compile_id_of
from dyndbg.dynamo.symbolic import SymbolicValue, is_variable_tracker
from dyndbg.engine.compile_stepping import CompileStep
from dyndbg.engine.stop import CompileStop
from dyndbg.ui.text.breakpoint_text import deleted_at_stop
from dyndbg.ui.commands.host import Family, Host, commands_of, usage
from dyndbg.ui.text import render
from dyndbg.ui.text.parsing import CommandError
from dyndbg.ui.text.values import cut, safe_repr, summarize

if TYPE_CHECKING:
    from dyndbg.dynamo.symbolic import SymbolicState

# What works at a compile stop as it does anywhere (by command name).
ANYWHERE = {"break", "tbreak", "catch", "clear", "disable", "enable", "condition", "ignore",
            "info", "help", "alias", "unalias", "quit", "set"}
PROMPT = "(dyndbg compile) "


class CompileStopCommands:
    title = "compile time"

    def __init__(self, host: Host) -> None:
        self.host = host
        # the graph at the last stop: which one, and its nodes' names
        self._seen: tuple[tuple[str, int] | None, set[str]] = (None, set())

    @property
    def stop(self) -> CompileStop:
        stop = self.host.compile_stop
        if stop is None:
            raise CommandError("not stopped while dynamo compiles")
        return stop

    @property
    def state(self) -> SymbolicState:
        return self.stop.state

    def command(self, name: str, families: Sequence[Family]) -> Callable[[str], None] | None:
        """What NAME runs at this stop: the compile-time command, one that
        works anywhere, or one that says it has nothing to look at; None
        where no family has it (the line is Python)."""
        found = getattr(self, f"do_{name}", None)
        if found is not None:
            return found
        for family in families:
            found = getattr(family, f"do_{name}", None)
            if found is not None:
                break
        else:
            return None
        if found.__name__[3:] in ANYWHERE:
            return found

        def refuse(arg: str) -> None:
            raise CommandError(f"{name}: dynamo is compiling; no generated code runs yet "
                               f"(at this stop: {self.commands_here()})")
        refuse.__name__ = found.__name__
        refuse.__doc__ = found.__doc__
        return refuse

    def commands_here(self) -> str:
        """The commands of such a stop, as `help` there lists them: the
        compile-time ones, then those that work as anywhere."""
        return (", ".join(usage(c) for c in commands_of(self))
                + "; as anywhere: " + ", ".join(sorted(ANYWHERE)))

    # -- the stop ------------------------------------------------------------------------
    def print_stop(self, stop: CompileStop) -> None:
        write = self.host.write
        state = stop.state
        where = state.translators()[-1]
        place = where.place()
        depth = f" (inlined, depth {state.depth})" if state.depth else ""
        prologue = " (resume prologue)" if state.prologue else ""
        tag = stop.tag
        caught = ", ".join(f"{'catchpoint' if bp.kind == 'catch' else 'breakpoint'} "
                           f"{bp.number}" for bp in stop.breakpoints)
        caught = f" ({caught})" if caught else ""
        for line in deleted_at_stop(stop.breakpoints, self.host.engine.breakpoints):
            write(line)
        event = render.compile_stop_event(stop, caught)
        if event:
            write(f"{tag} {event}")
        if stop.reason is not None:
            write("  reason: " + stop.reason.summary)
            for line in stop.reason.details:
                write("    " + line)
            if stop.reason.user_stack and stop.reason.where != place:
                # decided in a call dynamo inlined: the stop is at the frame's call of it
                write(f"  in {stop.reason.user_stack[-1].name} at {stop.reason.where}: "
                      f"{stop.reason.source}")
        write(f"{'  ' if event else tag + ' '}{where.shown_place()} in {where.function}{depth}{prologue}"
              f"{'' if event else caught}")
        source = linecache.getline(where.filename, where.line).rstrip()
        if source:
            write(f"  {where.line:<6}{self.host.highlighter.python(source.strip())}")
        instr = state.instruction()
        if instr is not None:
            at = f"  @{instr.offset}" if instr.offset is not None else ""
            verb = "->" if stop.point in (CompilePoint.START, CompilePoint.INSTRUCTION) else "at"
            write(f"{verb} {instr.opname} {instr.argval}".rstrip() + at)

    def new_stop(self) -> None:
        """Remember the graph as it was, so `graph` marks what the next stop added."""
        try:
            self._seen = (self._graph_key(), {n.name for n in self.state.graph_nodes()})
        except Exception:  # noqa: BLE001 - the marks only: dynamo steps on all the same
            self._seen = (None, set())

    def _graph_key(self) -> tuple[str, int]:
        """Which graph: a restart's attempt or another compile builds a new
        one, whose node names repeat the old one's."""
        return self.stop.trace_id, self.state.graph_id()

    # -- running dynamo --------------------------------------------------------------------
    def step_on(self, kind: CompileStep) -> None:
        """Let dynamo go on in mode `kind` once this stop ends (the prompt's
        commands below, the editor's requests)."""
        self.new_stop()
        self.host.engine.compile_stops.set_mode(kind, self.stop)

    def _resume(self, kind: CompileStep) -> None:
        self.step_on(kind)
        self.host.resume()

    def do_step(self, arg: str) -> None:
        """s(tep)
        Let dynamo interpret one instruction, stopping at the next it
        interprets: in a call it inlines, in a resume function's prologue too."""
        self._resume(CompileStep.STEP)

    do_s = do_si = do_stepi = do_step

    def do_next(self, arg: str) -> None:
        """n(ext)
        Let dynamo interpret one instruction of this function: a call it
        inlines is traced through, without stopping in it."""
        self._resume(CompileStep.NEXT)

    do_n = do_ni = do_nexti = do_next

    def do_nextline(self, arg: str) -> None:
        """nextline | nl
        Let dynamo interpret up to the next of your lines in this function
        (or its caller's, once it returns); calls it inlines are traced
        through."""
        self._resume(CompileStep.NEXT_LINE)

    do_nl = do_nextline

    def do_stepline(self, arg: str) -> None:
        """stepline | sl
        As nextline, also stopping at the first line of a call dynamo inlines."""
        self._resume(CompileStep.STEP_LINE)

    do_sl = do_stepline

    def do_return(self, arg: str) -> None:
        """r(eturn)
        Let dynamo trace to the end of the function being traced or inlined:
        the caller's next instruction, or the compile of the frame's last graph."""
        self._resume(CompileStep.RETURN)

    do_r = do_return

    def do_continue(self, arg: str) -> None:
        """c(ont(inue))
        Let dynamo go on compiling, up to the next compile stop (a graph
        break it decides, a restart, a `b --trace` line, another traced
        function); then the program runs on."""
        self._resume(CompileStep.CONTINUE)

    do_c = do_cont = do_continue

    # -- looking -----------------------------------------------------------------------------
    def do_stack(self, arg: str) -> None:
        """stack
        Dynamo's symbolic stack, bottom to top: each VariableTracker's kind,
        what dynamo knows of it (a fake tensor's dtype and shape, symbolic
        sizes, a constant's value), its FX node and its source.
        In expressions it is __stack__ (the VariableTrackers themselves)."""
        values = self.state.stack()
        if not values:
            self.host.write("symbolic stack: empty")
            return
        self.host.write(f"symbolic stack, {len(values)} entr{'ies' if len(values) != 1 else 'y'}"
                        " (bottom to top):")
        for index, value in enumerate(values):
            self.host.write(f"  [{index}] {_value_line(value)}")

    def do_locals(self, arg: str) -> None:
        """locals
        The symbolic locals: each name's VariableTracker, as `stack` shows them.
        In expressions each name is its VariableTracker."""
        names = self.state.locals()
        if not names:
            self.host.write("no symbolic locals")
            return
        width = min(30, max(len(name) for name, _ in names))
        for name, value in names:
            self.host.write(f"  {name:<{width}} {_value_line(value)}")

    def do_graph(self, arg: str) -> None:
        """graph
        The FX graph dynamo has built so far: each node with its op, target,
        example value and the user's line that made it; `+` marks the nodes
        added since the last stop. In expressions it is __graph__."""
        if arg.strip():
            raise CommandError("at a compile stop, `graph` shows the graph being built "
                               "(graph N once it is compiled)")
        nodes = self.state.graph_nodes()
        key, names = self._seen
        seen = names if key == self._graph_key() else set()
        added = [n for n in nodes if n.name not in seen]
        self.host.write(f"graph so far, {len(nodes)} node{'s' if len(nodes) != 1 else ''}"
                        f" ({len(added)} added since the last stop):")
        width = max((len(n.name) for n in nodes), default=0)
        for node in nodes:
            mark = "+" if node.name not in seen else " "
            self.host.write(f"  {mark} {node.name:<{width}}  {node.op:<13} {node.target}"
                            + (f"  {node.value}" if node.value else "")
                            + (f"  {node.place}" if node.place else ""))

    def do_guards(self, arg: str) -> None:
        """guards
        The guards dynamo has installed so far, each with the line of your
        code that installed it (torch: none of yours)."""
        guards = self.state.guards()
        self.host.write(f"guards so far: {len(guards)} (dynamo's; the symbolic-shape guards are "
                        "made at the end of the compile)")
        kind = max((len(g.kind) for g in guards), default=0)
        source = max((len(g.source) for g in guards), default=0)
        for guard in guards:
            self.host.write(f"  {guard.kind:<{kind}}  {guard.source:<{source}}  {guard.place}"
                            + (f"  {guard.line}" if guard.line else ""))

    def do_why(self, arg: str) -> None:
        """why shapes
        The symbols torch's ShapeEnv has made so far in this compile, each with
        its source, its value at this call, its range, why it is symbolic and
        its line, what torch replaced it by, and the shape guards added so far."""
        if arg.split() != ["shapes"]:
            raise CommandError("usage: why shapes (while dynamo compiles, the rest of `why` "
                               "is about code not made yet)")
        state = self.state
        function = state.root_function
        compile_id, _ = compile_id_of()
        shown = why.shapes_of(f"{function} [{compile_id}] (compiling)", state.shapes(),
                              state.inputs(), [], None,
                              show=lambda value: cut(summarize(value), 60))
        for line in shown.lines():
            self.host.write(line)

    def do_p(self, arg: str) -> None:
        """p EXPR | pp EXPR
        Print EXPR's value; a VariableTracker as `stack` shows it (kind,
        value, node, source), never realized. Names are the symbolic locals."""
        if not arg.strip():
            raise CommandError("usage: p EXPR")
        value = self.host.evaluate(arg)
        self.host.write(self.state.describe(value).line() if is_variable_tracker(value)
                        else safe_repr(value))

    do_pp = do_p

    def do_where(self, arg: str) -> None:
        """w(here) | bt
        Dynamo's inlining stack: the frame being compiled (an
        InstructionTranslator), then each call it is inlining, innermost last."""
        frames = self.state.translators()
        for depth, frame in enumerate(frames):
            mark = ">" if depth == len(frames) - 1 else " "
            self.host.write(f"{mark} {frame.function} at {frame.shown_place()}  ({frame.kind})")

    do_w = do_bt = do_where

    def do_list(self, arg: str) -> None:
        """l(ist)
        The user's instructions around the one dynamo interprets next, as
        dynamo reads them (the function's own bytecode, not generated code)."""
        listing = self.state.listing()
        for index, instr, current in listing:
            mark = "->" if current else "  "
            line = f"{instr.line:>5}" if instr.line is not None else "     "
            self.host.write(f"{mark} {line} {index:>4} {instr.opname:<24} {instr.argval}".rstrip())

    do_l = do_ll = do_dis = do_longlist = do_list


def _value_line(value: SymbolicValue) -> str:
    return value.line()
