"""The commands that run the program: step, next, nextline, stepline, return,
until, continue, quit."""
from __future__ import annotations

import types

from dyndbg.ui.commands.host import Host
from dyndbg.ui.text.parsing import CommandError, parse_count, parse_int


class RunningCommands:
    title = "running"

    def __init__(self, host: Host) -> None:
        self.host = host

    def do_step(self, arg: str) -> None:
        """s(tep) [N]
        Run the next instruction (N instructions), stopping in any dynamo-generated
        frame, including one that the current instruction calls; stepline steps
        by source line. At the call of a compiled graph (eager, aot_eager's
        forward, a backend returning a GraphModule's forward), s enters it: a
        stop before each of its FX nodes (n and si step over it); for an
        inductor graph, before each step of its output code's call (kernels,
        allocations, reinterprets)."""
        count = parse_count(arg, "step count")
        note = self.host.step_into_graph_here() if count == 1 else None
        if note is not None:
            if note:
                self.host.write(f"dyndbg: {note}")
            self.host.resume()
            return
        self.host.engine.set_step(count)
        self.host.resume()

    do_s = do_step

    def do_stepi(self, arg: str) -> None:
        """si | stepi [N]
        Run the next instruction (N instructions), stopping in any dynamo-generated
        frame, including one that the current instruction calls; a compiled
        graph's call runs as one instruction. By instruction, as gdb's stepi."""
        self.host.engine.set_step(parse_count(arg, "step count"))
        self.host.resume()

    do_si = do_stepi

    def do_next(self, arg: str) -> None:
        """n(ext) | ni | nexti [N]
        Run to the next instruction of the selected frame (N instructions), as
        pdb does after `up`; calls run through. When the frame returns, stop at
        the next generated instruction. By instruction, as gdb's nexti;
        nextline steps by source line."""
        count = parse_count(arg, "step count")
        self.host.engine.set_next(self._selected_frame("next"), count)
        self.host.resume()

    do_n = do_ni = do_nexti = do_next

    def do_nextline(self, arg: str) -> None:
        """nextline | nl [N]
        Run to the next of your source lines in the selected frame's generated
        code (N lines), as gdb's next: calls run through, and a jump back to
        the same line (a loop) is a new line. A resume function the frame
        calls (the rest of your function after a graph break) goes on as the
        same frame. When the frame returns, stop at the next generated
        instruction."""
        count = parse_count(arg, "line count")
        self.host.engine.set_next_line(self._selected_frame("nextline"), count)
        self.host.resume()

    do_nl = do_nextline

    def do_stepline(self, arg: str) -> None:
        """stepline | sl [N]
        As nextline, but also stop at the first instruction of any other
        dynamo-generated frame that runs meanwhile (a resume function the
        frame calls), as gdb's step."""
        count = parse_count(arg, "line count")
        self.host.engine.set_step_line(self._selected_frame("stepline"), count)
        self.host.resume()

    do_sl = do_stepline

    def do_return(self, arg: str) -> None:
        """r(eturn)
        Run until the selected frame's return instruction; step again to stop
        in the caller."""
        self.host.engine.set_return(self._selected_frame("return"))
        self.host.resume()

    do_r = do_return

    def do_until(self, arg: str) -> None:
        """unt(il) [INDEX]
        Run until an instruction of the selected frame with an index greater
        than its current one (past a loop), or at least INDEX; or until the
        frame returns."""
        frame = self._selected_frame("until")
        engine = self.host.engine
        info = engine.info_for(engine.entry_for(frame.f_code))  # type: ignore[arg-type]  # the frame is generated code
        current = info.containing(frame.f_lasti)
        index = (current.index if current is not None else 0) + 1
        if arg:
            index = parse_int(arg, "instruction index")
            if not 0 <= index < len(info):
                raise CommandError(f"instruction index out of range (0..{len(info) - 1})")
        engine.set_until(frame, index)
        self.host.resume()

    do_unt = do_until

    def do_continue(self, arg: str) -> None:
        """c(ont(inue))
        Run until a breakpoint or an exception in generated code."""
        self.host.engine.set_continue()
        self.host.resume()

    do_c = do_cont = do_continue

    def do_quit(self, arg: str) -> None:
        """q(uit)
        End the program, as pdb does."""
        self.host.write("dyndbg: quitting")
        self.host.engine.quit()

    do_q = do_exit = do_quit

    def _selected_frame(self, command: str) -> types.FrameType:
        """The selected frame, which must be generated code: no other frame is
        traced, so none other can stop."""
        frame = self.host.frame
        if self.host.engine.entry_for(frame.f_code) is None:
            raise CommandError(f"{command}: the selected frame ({frame.f_code.co_name}) is not "
                               "dynamo-generated code and cannot stop; select a generated "
                               "frame, or use s or c")
        return frame
