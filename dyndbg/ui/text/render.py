"""Text for stops, instructions, stacks and frames (no I/O here)."""
from __future__ import annotations

import os
import types
from typing import TYPE_CHECKING, Callable

from dyndbg.cpython import call_site, returned_value
from dyndbg.dynamo.names import readable
from dyndbg.engine.codeinfo import CodeInfo, Instr
from dyndbg.dynamo.symbolic import CompilePoint
from dyndbg.engine.stop import CompileStop, InstructionTraceEvent, InstructionTraceKind, Stop
from dyndbg.engine.threads import thread_name
from dyndbg.ui.text.values import cut, summarize, type_name

if TYPE_CHECKING:
    from dyndbg.dynamo.symbolic import SymbolicState


def short_path(filename: str) -> str:
    return os.path.basename(filename)


Rename = Callable[[str], str]


def _same(text: str) -> str:
    return text


def renamer(frame: types.FrameType) -> Rename:
    """Names dynamo's globals by what they are (graph 2, torch.nn, ...)."""
    return renamer_for(frame.f_globals)


def renamer_for(module_globals: dict) -> Rename:
    return lambda text: readable(text, module_globals)


def instruction_text(instr: Instr, rename: Rename = _same) -> str:
    """`LOAD_GLOBAL          NULL + graph 2`: opname and its argument, renamed."""
    argument = cut(rename(instr.argrepr), 60) if instr.argrepr else \
        ("" if instr.arg is None else str(instr.arg))
    return f"{instr.opname:<20} {argument}".rstrip()


def location(stop: Stop, rename: Rename = _same, highlight: Rename = _same) -> str:
    """`> f [0/0]  instr 14 @30  LOAD_FAST x   graph_break.py:9  a = x.sin() + y`;
    `> f [0/0] in thread "worker"  instr ...` outside the main thread (shown
    in the stopping thread)."""
    thread = thread_name()
    label = stop.entry.label() if thread is None else f'{stop.entry.label()} in thread "{thread}"'
    return location_line(label, stop.info, stop.instr, rename, highlight)


def location_line(label: str, info: CodeInfo, instr: Instr, rename: Rename = _same,
                  highlight: Rename = _same) -> str:
    """location(), for a stop or for a recorded instruction."""
    source = info.source_line(instr.line)
    where = f"{short_path(info.code.co_filename)}:{instr.line}" if instr.line else ""
    return (f"> {label}  instr {instr.index}/{len(info)} @{instr.offset}  "
            f"{instruction_text(instr, rename):<34} {where}  {highlight(source)}").rstrip()


def instruction_trace_line(event: InstructionTraceEvent, rename: Rename = _same) -> str:
    """`trace f [0/0]  instr 17/111 @106  CALL 2`: one line of `trace on`."""
    head = f"trace {event.entry.label()}"
    if event.kind is InstructionTraceKind.INSTRUCTION and event.instr is not None:
        instr = event.instr
        return f"{head}  instr {instr.index}/{len(event.info)} @{instr.offset}  " \
            f"{instruction_text(instr, rename)}"
    if event.kind is InstructionTraceKind.ENTER:
        return f"{head}  starts"
    if event.kind is InstructionTraceKind.RETURN:
        return f"{head}  returns {summarize(event.value, 60)}"
    return f"{head}  left by an exception"


def effect(stop: Stop) -> str | None:
    """What the current instruction is about to do, where the stack tells."""
    return effect_of(stop.instr, stop.stack)


def effect_of(instr: Instr, stack: list[object] | None) -> str | None:
    if stack is None:
        return None
    op = instr.opname
    site = call_site(op, instr.arg, stack)
    if site is not None:
        function, n = site.function, len(site.args)
        name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None) \
            or type(function).__name__
        return f"calls {name} with {n} argument{'s' if n != 1 else ''}"
    returns, value = returned_value(op, instr.argval, stack)
    if returns:
        return f"returns {summarize(value, 60)}"
    if op.startswith("STORE_") and stack and instr.argrepr:
        return f"stores {summarize(stack[-1], 60)} into {instr.argrepr}"
    return None


def disassembly_line(info: CodeInfo, instr: Instr, current: int | None,
                     breakpoint_offsets: dict[int, list], rename: Rename = _same,
                     changed: frozenset[int] = frozenset()) -> str:
    marker = "->" if instr.index == current else "  "
    marker += "*" if instr.index in changed else ""   # a cache edit changed it
    bps = breakpoint_offsets.get(instr.offset, [])
    bp = ""
    if bps:
        bp = ("B" if any(b.enabled for b in bps) else "b") + str(bps[0].number)
        if all(b.target.checked_when_reached for b in bps):
            bp += "?"  # a candidate call: the callee is checked when reached
    target = ">>" if instr.is_jump_target else "  "
    return (f"{marker:<3}{instr.index:>4} @{instr.offset:<5} {bp:<4}{target} "
            f"{instruction_text(instr, rename)}")


def disassembly(info: CodeInfo, first: int, last: int, current: int | None,
                breakpoint_offsets: dict[int, list], rename: Rename = _same,
                changed: frozenset[int] = frozenset()) -> list[str]:
    """Instructions first..last, with a source header where the line changes."""
    lines: list[str] = []
    previous_line: int | None = -1
    for instr in info.instructions[max(0, first):last + 1]:
        if instr.line != previous_line:
            previous_line = instr.line
            if instr.line is not None:
                lines.append(f"   {short_path(info.code.co_filename)}:{instr.line}  "
                             f"{info.source_line(instr.line)}")
        lines.append(disassembly_line(info, instr, current, breakpoint_offsets, rename, changed))
    return lines


def stack_lines(stack: list[object] | None, note: str) -> list[str]:
    if stack is None:
        return [f"value stack: {note}"]
    header = f"value stack, depth {len(stack)}, bottom to top"
    if note:
        header += f" ({note})"
    lines = [header + (":" if stack else ": empty")]
    for i, value in enumerate(stack):
        lines.append(f"  {i:>3}  {type_name(value):<14} {summarize(value)}")
    return lines


def stack_brief(stack: list[object] | None, note: str, shown: int = 3) -> str:
    """One line: depth and the top few values (top last)."""
    if stack is None:
        return f"stack: {note}"
    if not stack:
        return "stack: empty"
    items = [summarize(v, 44) for v in stack[-shown:]]
    more = "… | " if len(stack) > shown else ""
    label = f"stack[{len(stack)}]" + (f" ({note})" if note else "")
    return f"{label}: {more}{' | '.join(items)}"


def frame_line(frame: types.FrameType, generated: tuple[str, CodeInfo] | None,
               lasti: int | None = None) -> str:
    """One line of `where`: generated frames show their label and instruction.
    `lasti`: the instruction to show instead of the frame's current one (a
    traceback's, post mortem)."""
    code = frame.f_code
    line = frame.f_lineno if lasti is None else _line_at(code, lasti)
    lasti = frame.f_lasti if lasti is None else lasti
    text = f"{code.co_filename}:{line} {code.co_name}"
    if generated is not None:
        label, info = generated
        text = f"{label}  instr {info.index_of(lasti)} @{lasti}  {text}"
    return text


def _line_at(code: types.CodeType, offset: int) -> int | None:
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return None


def compile_stop_event(stop: CompileStop, caught: str = "") -> str:
    """What happened at a stop that is not a plain instruction ("" at one):
    the first line the prompt prints after the compile id, the editor's
    stop description."""
    state = stop.state
    function = state.translators()[-1].function
    if stop.point is CompilePoint.START:
        return f"dynamo starts tracing {function}{caught}"
    if stop.point is CompilePoint.GRAPH_BREAK:
        return (f"graph break in {function}: dynamo compiles the graph so far "
                f"({_nodes(state)})")
    if stop.point is CompilePoint.RESTART:
        return (f"restart ({stop.cause}): dynamo drops this attempt at tracing "
                f"{state.root_function} and traces it again from its first instruction "
                "(unless it has restarted too often)")
    if stop.point is CompilePoint.RETURN:
        return (f"return: dynamo reached the end of {function} and compiles its graph "
                f"({_nodes(state)})")
    return ""


def _nodes(state: SymbolicState) -> str:
    count = len(state.graph_nodes())
    return f"{count} node{'s' if count != 1 else ''} as built, inputs included"
