"""The breakpoint commands: break, tbreak, catch, clear, disable, enable,
condition, ignore; and the completion of their locations."""
from __future__ import annotations

import os

from dyndbg.dynamo.names import GRAPH_NAME, graph_number
from dyndbg.engine.breakpoints import Breakpoint, Location
from dyndbg.engine.targets import (BackwardCatchTarget, CatchTarget, InstructionTarget,
                                  LineTarget, Target)
from dyndbg.engine.nan_catch import NanCatchTarget
from dyndbg.engine.compile_stepping import compile_line_target
from dyndbg.ui.commands.host import Host
from dyndbg.ui.text.breakpoint_text import location_line, main_module_note
from dyndbg.ui.text.parsing import (CommandError, InstructionSpec, Place, check_condition,
                               parse_breakpoint_refs, parse_int, parse_location, parse_numbers,
                               split_condition)

CATCH_EVENTS = ("compile", "recompile", "graph-break", "exception", "trace", "backward", "nan")


class BreakpointCommands:
    title = "breakpoints"

    def __init__(self, host: Host) -> None:
        self.host = host

    # -- locations ------------------------------------------------------------------------
    def _target(self, spec: str) -> Target:
        """A location, with INDEX and @OFFSET resolved in the selected frame's code
        (the stopped frame's unless another generated frame is selected)."""
        host = self.host
        stop = host.stop
        location = parse_location(spec)
        if not isinstance(location, InstructionSpec):
            return location
        if stop is None:    # inside a compiled graph, or while dynamo compiles
            raise CommandError("INDEX and @OFFSET name an instruction of the generated code "
                               "stopped at: the program is not stopped in generated code")
        info, entry = stop.info, stop.entry
        selected = host.frame
        if selected is not stop.frame and host.engine.registry.is_generated(selected.f_code):
            entry = host.engine.entry_for(selected.f_code)  # type: ignore[assignment]  # is_generated: it has one
            info = host.engine.info_for(entry)
        if location.place is Place.OFFSET:
            offset = location.number
            instr = info.at_offset(offset)
            if instr is None:
                raise CommandError(f"no instruction starts at offset {offset} in {entry.label()}")
            if instr.silent:
                raise CommandError(f"@{offset} ({instr.opname}) runs before tracing starts")
            return InstructionTarget(entry.code, offset, instr.index, entry.label())
        index = location.number
        if not 0 <= index < len(info):
            raise CommandError(f"instruction index out of range (0..{len(info) - 1})")
        instr = info.instructions[index]
        if instr.silent:
            later = next((i.index for i in info.instructions[index:] if not i.silent), None)
            raise CommandError(f"instruction {index} ({instr.opname}) runs before tracing "
                               "starts" + ("" if later is None else f"; use {later}"))
        return InstructionTarget(entry.code, instr.offset, index, entry.label())

    def _compile_stop_target(self, spec: str) -> Target:
        """`--trace FILE:LINE`: a line of your code, stopped at while dynamo traces it."""
        target = compile_line_target(spec.split(None, 1)[1] if len(spec.split()) > 1 else "")
        if target is None:
            raise CommandError("usage: break --trace FILE:LINE")
        if not os.path.exists(target.filename) and not os.path.isabs(target.filename) \
                and not any(target.file_matches(e.code.co_filename)
                            for e in self.host.engine.registry.entries()):
            self.host.write(f"dyndbg: no file {target.filename} here yet; the breakpoint "
                            "waits for a traced file whose path ends with it")
        unavailable = self.host.engine.compile_stops.arm()
        if unavailable:
            self.host.write(unavailable)
        return target

    def resolution(self, bp: Breakpoint) -> str:
        """`resolved: ...` or `pending: ...`, from the generated code seen so far."""
        engine = self.host.engine
        target = bp.target
        if isinstance(target, (InstructionTarget, NanCatchTarget)) or target.compile_time:
            return ""
        if isinstance(target, BackwardCatchTarget):
            from dyndbg.dynamo.names import find_graph_global
            if target.graph is None or find_graph_global(str(target.graph)) is not None:
                return ""
            return f"pending: no graph {target.graph} yet"
        labels = [entry.label() for entry in engine.registry.entries()
                  if target.offsets(entry, engine.info_for(entry))]
        labels += [loc.where for loc in bp.locations if loc.code is None]  # graphs holding it
        if labels:
            more = f" (+{len(labels) - 3} more)" if len(labels) > 3 else ""
            return "resolved: in " + ", ".join(labels[:3]) + more
        if isinstance(target, LineTarget):
            if not os.path.exists(target.filename) and not any(
                    target.file_matches(e.code.co_filename) for e in engine.registry.entries()):
                return "pending: no such file seen yet"
            return ("pending: no generated instruction, compiled graph node nor inductor "
                    "kernel for that line yet")
        return "pending: no matching code compiled yet"

    def visible_breakpoints(self) -> list[Breakpoint]:
        """The user's, and breakpoint 0 (torch's markers) once code has markers."""
        engine = self.host.engine
        has_markers = engine.registry.has_markers
        return [bp for bp in engine.breakpoints if bp.number or has_markers]

    def _list_breakpoints(self) -> None:
        shown = self.visible_breakpoints()
        if not shown:
            self.host.write("No breakpoints.")
            return
        self.host.write("Num  Type   State     Where")
        for bp in shown:
            self.host.write(bp.describe(self.resolution(bp)))
            # gdb's N.M, where one breakpoint stands for several places (or one is off)
            if len(bp.locations) > 1 or any(not loc.enabled for loc in bp.locations):
                for loc in bp.locations:
                    self.host.write(location_line(bp, loc))

    def _add_breakpoint(self, arg: str, temporary: bool) -> None:
        if not arg.strip():
            self._list_breakpoints()
            return
        spec, condition = split_condition(arg)
        target = self._compile_stop_target(spec) if spec.split()[0] == "--trace" else \
            self._target(spec)
        bp = self.host.engine.breakpoints.add(target, temporary, condition)
        self.host.engine.graph_lines.resolve()     # the graphs holding a FILE:LINE
        kind = "Temporary breakpoint" if temporary else "Breakpoint"
        resolution = self.resolution(bp)
        self.host.write(f"{kind} {bp.number} at {target.describe()}"
                        + (f" ({resolution})" if resolution else ""))
        self._say_main_module(target)

    def _say_main_module(self, target: Target) -> None:
        note = main_module_note(target)
        if note is not None:
            self.host.write(note)

    def _breakpoints_named(self, arg: str) -> list[Breakpoint]:
        return [self._breakpoint(number) for number in parse_numbers(arg)]

    def _breakpoint(self, number: int) -> Breakpoint:
        bp = self.host.engine.breakpoints.get(number)
        if bp is None:
            raise CommandError(f"no breakpoint number {number}")
        return bp

    # -- the commands -------------------------------------------------------------------
    def do_break(self, arg: str) -> None:
        """b(reak) [LOCATION] [, CONDITION]
        LOCATION is one of:
          INDEX, @OFFSET        an instruction of the current code object
          FILE:LINE             where generated code enters that source line,
                                and in each compiled graph (forward, backward)
                                with nodes from it: before its first node (an
                                inductor graph: before the first kernel
                                computing its work; a backward's, by the
                                kernels inductor's comments or line map
                                record for the line, known at its first
                                backward())
          graph N, __compiled_fn_N[_uuid], __compiled_fn_*
                                the call of a compiled graph, from any frame
          resume, torch_dynamo_resume_in_f*, __resume_at_*
                                entry to resume functions
          FUNC, Class.method, module.FUNC
                                entry to the transformed code of a function
                                (the script's module: __main__, or its file's
                                name, prog for prog.py)
          --trace FILE:LINE     while dynamo compiles: where it reaches that
                                line of your code, inlined calls included
        Names may be globs and may name code not compiled yet: the breakpoint
        stays pending until dynamo compiles it. With no argument, list
        breakpoints with their state, condition and hit count."""
        self._add_breakpoint(arg, temporary=False)

    do_b = do_break

    def complete_break(self, text: str) -> list[str] | None:
        """The names `break` accepts, from the code dynamo has generated so far;
        None where TEXT is a file name (the completer completes paths)."""
        if "/" in text or text.endswith(".py") or text.startswith("."):
            return None
        targets: set[str] = {"resume"}
        for entry in self.host.engine.registry.entries():
            targets.add(entry.function)
            if entry.qualname != entry.function:
                targets.add(entry.qualname)
            for name in entry.code.co_names:
                if GRAPH_NAME.fullmatch(name):
                    targets.add(f"graph {graph_number(name)}")
                    targets.add(name)
        return sorted(targets)

    # as pdb: the commands that take a location complete one
    complete_b = complete_tbreak = complete_cl = complete_clear = complete_break

    def do_info(self, arg: str) -> None:
        """info breakpoints | info record
        List breakpoints, as `break` with no argument does (gdb's spelling;
        `info b` too); what the recorded history holds, as `record` does."""
        what = arg.strip()
        if what in ("record", "rec"):
            record = self.host.command("record")
            assert record is not None
            record("")
            return
        if what not in ("breakpoints", "break", "b"):
            raise CommandError("usage: info breakpoints | info record")
        self._list_breakpoints()

    def do_tbreak(self, arg: str) -> None:
        """tbreak [LOCATION] [, CONDITION]
        A breakpoint deleted after its first stop (locations as for break,
        --trace FILE:LINE too); that stop says so, as pdb does."""
        self._add_breakpoint(arg, temporary=True)

    def do_catch(self, arg: str) -> None:
        """catch compile | recompile | graph-break | exception | trace [FUNC] | backward [N] | nan
        Stop at the first run of each newly compiled code object (compile),
        of each recompilation, with the guard failures that caused it, and,
        when dynamo gives up on a function (config.recompile_limit), at the
        next generated code to run after it (recompile); where a frame
        leaves its graph for a resume function, and, when dynamo skips a
        function at a graph break it cannot resume from (one in a loop), at
        the next generated code to run after it (graph-break); or at every
        exception raised in generated code
        (exception; without it, exceptions stop only in frames being stepped
        or holding a breakpoint). trace: while dynamo compiles, when it starts
        tracing a function FUNC names (a glob, as `b` takes it; none: every
        one): a first compile, a recompile, a resume function; then s, n, nl,
        sl, r, stack, locals, graph, guards and where step and show dynamo's
        trace. backward: when AOT autograd's compiled backward of graph N (of
        any graph) starts inside loss.backward(), a stop before its first
        FX node (aot_eager) or output-code step (inductor), each node or
        kernel with the forward line it is the gradient of; s and n step its
        nodes or kernels, r and c run on. A graph N not compiled yet leaves it pending until it is.
        nan: right after the first node of a compiled graph whose output
        holds a NaN or an Inf (once a run of the graph): the node, its user
        line, its inputs as they were before it ran, its output and which
        elements are bad; s steps on from the next node. Eager and
        aot_eager forward graphs node by node; inductor graphs kernel by
        kernel: after each kernel, the buffers it wrote (a fused kernel is
        named with the nodes inductor records for it); aot_eager's compiled
        backwards node by node, inductor's kernel by kernel (through catch
        backward's watch); a graph
        whose backend gives no way in at its outputs (one line says so): a
        stop at the generated instruction after its call, naming the
        output; graphs compiled so far and later.
        Nothing is checked while it is unset or disabled; set, one check
        per node or kernel output. Listed, disabled and cleared like
        breakpoints."""
        event, _, rest = arg.strip().partition(" ")
        rest = rest.strip()
        if event not in CATCH_EVENTS or (rest and event not in ("trace", "backward")) \
                or len(rest.split()) > 1:
            raise CommandError("usage: catch compile | recompile | graph-break | exception | "
                               "trace [FUNC] | backward [N] | nan")
        engine = self.host.engine
        if event == "backward":
            self._catch_backward(rest)
            return
        if event == "nan":
            bp = engine.breakpoints.add(NanCatchTarget())
            self.host.write(f"Catchpoint {bp.number} (nan)")
            return
        if event == "trace":
            bp = engine.compile_stops.catch(rest or "*")
            self.host.write(f"Catchpoint {bp.number} ({bp.target.describe()})")
            self._say_main_module(bp.target)
            return
        bp = engine.breakpoints.add(CatchTarget(event, since=engine.registry.count()))
        self.host.write(f"Catchpoint {bp.number} ({event})")

    def _catch_backward(self, spec: str) -> None:
        """`catch backward [N]`: one line, and one more where graph N has no
        compiled backward now (not compiled yet: pending; eager: none)."""
        from dyndbg.dynamo.graphs.backward import has_backward
        from dyndbg.dynamo.names import find_graph_global

        number = parse_int(spec, "graph number") if spec else None
        if number is not None and number < 1:
            raise CommandError(f"no graph {number}: graphs are numbered from 1")
        bp = self.host.engine.breakpoints.add(BackwardCatchTarget(graph=number))
        # as the other catchpoints' lines and its stops' say it: `Catchpoint 2 (backward 1)`
        self.host.write(f"Catchpoint {bp.number} (backward{'' if number is None else f' {number}'})")
        if number is None:
            return
        found = find_graph_global(str(number))
        if found is None:
            self.host.write(f"dyndbg: no graph {number} yet; catchpoint {bp.number} is "
                            "pending until dynamo compiles it")
        elif not has_backward(found[0].get(found[1])):
            self.host.write(f"dyndbg: graph {number} has no compiled backward (its backend "
                            "is no AOT autograd one, or it needs no gradient): "
                            f"catchpoint {bp.number} stops in none of its runs")

    def do_clear(self, arg: str) -> None:
        """cl(ear) [N ... | FILE:LINE]
        Delete the numbered breakpoints, those at FILE:LINE, or all of them."""
        table = self.host.engine.breakpoints
        if not arg.strip():
            numbers = [bp.number for bp in self.visible_breakpoints()]
        elif ":" in arg:
            target = self._target(arg)
            numbers = [bp.number for bp in table if isinstance(bp.target, LineTarget)
                       and bp.target.describe() == target.describe()]
            if not numbers:
                raise CommandError(f"no breakpoint at {arg.strip()}")
        else:
            numbers = [bp.number for bp in self._breakpoints_named(arg)]
        for number in numbers:
            table.delete(number)
            self.host.write(f"Deleted breakpoint {number}")
        if not numbers:
            self.host.write("No breakpoints.")

    do_cl = do_clear

    def _set_enabled(self, arg: str, enabled: bool) -> None:
        if not arg.strip():
            raise CommandError("usage: enable|disable N[.M] [N[.M] ...]")
        changes: list[tuple[Breakpoint | Location, str]] = []
        for ref in parse_breakpoint_refs(arg):     # all checked before any changes
            bp = self._breakpoint(ref.number)
            if ref.location is None:
                changes.append((bp, f"breakpoint {bp.number}"))
                continue
            locations = bp.locations
            if not 1 <= ref.location <= len(locations):
                raise CommandError(f"breakpoint {bp.number} has no location {ref.number}."
                                   f"{ref.location} (it has {len(locations)})")
            changes.append((locations[ref.location - 1],
                            f"location {ref.number}.{ref.location}"))
        for item, name in changes:
            item.enabled = enabled
            self.host.write(f"{'Enabled' if enabled else 'Disabled'} {name}")
        self.host.engine.breakpoints.changed()

    def do_disable(self, arg: str) -> None:
        """disable N[.M] [N[.M] ...]
        Disable breakpoints (kept, but they do not stop); N.M one location of
        breakpoint N (each place it resolved to, as `b` lists them)."""
        self._set_enabled(arg, False)

    def do_enable(self, arg: str) -> None:
        """enable N[.M] [N[.M] ...]
        Enable breakpoints, or one location N.M."""
        self._set_enabled(arg, True)

    def do_condition(self, arg: str) -> None:
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
            self.host.write(f"New condition set for breakpoint {bp.number}.")
        else:
            bp.condition = None
            self.host.write(f"Breakpoint {bp.number} is now unconditional.")

    def do_ignore(self, arg: str) -> None:
        """ignore N COUNT
        Pass breakpoint N the next COUNT times it is reached."""
        parts = arg.split()
        if len(parts) != 2:
            raise CommandError("usage: ignore N COUNT")
        bp = self._breakpoints_named(parts[0])[0]
        bp.ignore = max(0, parse_int(parts[1], "count"))
        self.host.write(f"Will ignore next {bp.ignore} crossings of breakpoint {bp.number}.")
