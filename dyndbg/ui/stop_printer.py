"""What the prompt prints at a stop (the editor's debug console shows the
same): breakpoint and exception lines, the location and the stack in brief,
the graph boundary views, displays; sticky mode's screen; the toolbar."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TextIO

from dyndbg.dynamo.compiles import why
from dyndbg.dynamo.graphs.inductor_steps import OutputCodeGraph
from dyndbg.dynamo.graphs.stepping import node_step
from dyndbg.ui.commands import kernel_stops
from dyndbg.engine.stop import Stop, StopReason
from dyndbg.ui.text import boundaries, graph_steps, render
from dyndbg.ui.text.breakpoint_text import deleted_at_stop
from dyndbg.ui.text import nan_text
from dyndbg.ui.commands.host import Host
from dyndbg.ui.text.values import exception_text

if TYPE_CHECKING:
    from dyndbg.ui.commands.breakpoints import BreakpointCommands
    from dyndbg.ui.commands.edits import CacheCommands
    from dyndbg.ui.commands.compiled import DynamoCommands
    from dyndbg.ui.commands.looking import LookingCommands
    from dyndbg.ui.text.boundaries import GraphCall


class Printing(Host, Protocol):
    """What the printer reads of the session (ui/session.py): what the
    command families read (Host), and the families it prints for."""

    graph_call_before: GraphCall | None   # the graph the stop before called: its outputs
    out: TextIO
    breaking: BreakpointCommands
    dynamo: DynamoCommands
    cache_commands: CacheCommands
    looking: LookingCommands


class StopPrinter:
    def __init__(self, session: Printing) -> None:
        self.session = session

    def print_stop(self, stop: Stop) -> None:
        session = self.session
        for bp in stop.breakpoints:
            if bp.kind == "catch":
                event = bp.target.event  # type: ignore[attr-defined]  # a CatchTarget
                session.write(f"Catchpoint {bp.number} ({event}), hit {bp.hits}")
                found = getattr(bp.target, "found", None)
                if event == "nan" and found is not None:   # a graph with no way in: its outputs
                    for line in nan_text.output_lines(*found):
                        session.write(line)
            else:
                session.write(f"Breakpoint {bp.number} at {bp.target.describe()}, hit {bp.hits}")
        for line in deleted_at_stop(stop.breakpoints, session.engine.breakpoints):
            session.write(line)
        if stop.why:
            session.write(f"Stopped {stop.why}")
        if stop.exception is not None:
            exc = stop.exception
            session.write(f"!! {type(exc).__name__}: {exception_text(exc)}")
            ending = "'c' or 'q' ends the post-mortem session" \
                if stop.reason is StopReason.POST_MORTEM else "'c' lets it propagate"
            session.write(f"!! raised at instr {stop.instr.index} @{stop.instr.offset} "
                          f"{stop.instr.opname} in {stop.entry.label()}; {ending}")
        notice = session.cache_commands.notice()
        if notice:
            session.write(notice)
        if session.sticky:
            self.print_sticky(stop)
        session.write(render.location(stop, render.renamer(stop.frame),
                                      session.highlighter.python))
        session.write("  " + render.stack_brief(stop.stack, stop.stack_note))
        if stop.first_in_frame and stop.exception is None:
            explanation = session.dynamo.entry_explanation()
            if explanation:
                session.write(f"  {explanation}")
            origin = why.made_by(stop.entry, stop.frame.f_globals, session.engine.registry)
            if origin is not None and origin.reason is not None:
                session.write(f"  made by the {origin.reason.one_line()} ('why' says more)")
        if session.graph_call_before is not None:
            for line in boundaries.graph_outputs(session.graph_call_before, stop):
                session.write(line)
        lines = boundaries.call_lines(stop)
        what = render.effect(stop)
        if what and not lines:
            # At an exception stop the instruction has already run (and failed).
            session.write(f"  {'failed' if stop.exception is not None else 'next'}: {what}")
        for line in lines:
            session.write(line)
        session.show_displays()

    def print_sticky(self, stop: Stop) -> None:
        """pdb++'s sticky mode: the code, the stack, the locals and the source together."""
        session = self.session
        if session.color:
            session.out.write("\x1b[2J\x1b[H")  # a fresh screen at every stop
        current = stop.instr.index
        offsets = session.engine.breakpoints.at_code(stop.entry, stop.info)
        for line in render.disassembly(stop.info, current - 6, current + 6, current, offsets,
                                       render.renamer(stop.frame)):
            session.write(session.highlighter.disassembly_line(line))
        for line in render.stack_lines(stop.stack, stop.stack_note):
            session.write(line)
        session.looking.do_locals("")
        session.write("-" * 40)

    def toolbar_text(self) -> str:
        """function [compile id] | instr i/N | stack depth | breakpoints | mode;
        inside a graph: graph N backend part | node i/N name | breakpoints | graph"""
        session = self.session
        compile_stop = session.compile_stop
        if compile_stop is not None:
            state = compile_stop.state
            where = state.translators()[-1]
            line = f"before line {where.line}" if where.before_body else f"line {where.line}"
            return (f" compile {compile_stop.trace_id} | {where.function} {line} | "
                    f"depth {state.depth} | symbolic stack {state.stack_size()} | compile time ")
        count = len(session.breaking.visible_breakpoints())
        breakpoints = f"{count} breakpoint{'s' if count != 1 else ''}"
        graph_stop = session.engine.held.graph
        if graph_stop is not None:     # inside a compiled graph (issue 50)
            if isinstance(graph_stop.graph, OutputCodeGraph):
                place = kernel_stops.toolbar(graph_stop, graph_stop.graph)
                return f" {place} | {breakpoints} | graph "
            step = node_step(graph_stop.graph, graph_stop.node, graph_stop.frame.f_locals)
            return f" {graph_steps.toolbar_text(graph_stop.tag, step)} | {breakpoints} | graph "
        stop = session.stop
        if stop is None:
            return ""
        depth = "?" if stop.stack is None else str(len(stop.stack))
        past = f" | recorded -{session.past.before_now}" if session.past is not None else ""
        return (f" {stop.entry.label()} | instr {stop.instr.index}/{len(stop.info)} | "
                f"stack {depth} | {breakpoints} | "
                f"{session.engine.mode.kind.value}{' | sticky' if session.sticky else ''}{past} ")
