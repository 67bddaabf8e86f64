"""Views at graph boundaries: what goes into a compiled graph (each argument
next to the FX placeholder it feeds), what comes out (each output next to the
graph output it came from), and what a resume function receives (each value
next to its parameter name)."""
from __future__ import annotations

import types
from dataclasses import dataclass

from dyndbg.cpython import CallSite, call_site
from dyndbg.dynamo.compiles import why
from dyndbg.dynamo.compiles import BreakReason
from dyndbg.dynamo.graphs import graph_info
from dyndbg.dynamo.names import GRAPH_NAME, graph_number, is_resume_name
from dyndbg.engine.stop import Stop
from dyndbg.ui.text.values import summarize


@dataclass
class GraphCall:
    """A compiled-graph call the user stopped at, to show its outputs later."""

    frame: types.FrameType
    index: int
    name: str


def _graph_name(function: object, frame: types.FrameType) -> str | None:
    """The `__compiled_fn_*` global of `frame` that holds `function`, if any."""
    for name in frame.f_code.co_names:
        if GRAPH_NAME.fullmatch(name) and frame.f_globals.get(name) is function:
            return name
    return None


def graph_call_at(stop: Stop) -> GraphCall | None:
    """The compiled graph the instruction at the stop calls, if it calls one."""
    if stop.stack is None or stop.exception is not None:
        return None
    site = call_site(stop.instr.opname, stop.instr.arg, stop.stack)
    name = _graph_name(site.function, stop.frame) if site is not None else None
    return GraphCall(stop.frame, stop.instr.index, name) if name is not None else None


def call_lines(stop: Stop) -> list[str]:
    """Lines describing the call at the current instruction, if it crosses a
    graph boundary: a graph's inputs, or a resume function's and the break."""
    if stop.stack is None or stop.exception is not None:
        return []
    site = call_site(stop.instr.opname, stop.instr.arg, stop.stack)
    if site is None:
        return []
    name = _graph_name(site.function, stop.frame)
    if name is not None:
        return _graph_inputs(stop, name, site)
    code = getattr(site.function, "__code__", None)
    if code is not None and is_resume_name(code.co_name):
        reason = break_at(stop)
        breaks = why.break_lines(reason) if reason is not None else []
        return [*breaks, *_resume_inputs(code, site)]
    return []


def break_at(stop: Stop) -> BreakReason | None:
    """Torch's reason for the graph break, where the instruction at the stop
    calls the code's resume function (the stop `catch graph-break` makes)."""
    if stop.stack is None or stop.exception is not None or not stop.entry.breaks:
        return None
    site = call_site(stop.instr.opname, stop.instr.arg, stop.stack)
    code = getattr(site.function, "__code__", None) if site is not None else None
    if code is None or not is_resume_name(code.co_name):
        return None
    return stop.entry.breaks[-1]


def _graph_inputs(stop: Stop, name: str, site: CallSite) -> list[str]:
    info = graph_info(name, site.function)
    lines = [f"graph {graph_number(name)} ({name}) called from {stop.entry.label()} "
             f"with {len(site.args)} input{'s' if len(site.args) != 1 else ''}:"]
    placeholders = info.placeholders if info is not None else []
    for i, value in enumerate(site.args):
        feeds = f"{placeholders[i].name}: {placeholders[i].describe()}" \
            if i < len(placeholders) else "?"
        lines.append(f"  in {i:<3} {feeds:<28} {summarize(value, 60)}")
    if info is None or info.note:
        lines.append(f"  ({info.note if info else 'the FX graph is not available'})")
    return lines


def graph_outputs(call: GraphCall, stop: Stop) -> list[str]:
    """After stepping over a graph call: its result, next to the graph outputs."""
    if stop.frame is not call.frame or stop.stack is None or not stop.stack \
            or stop.instr.index <= call.index:
        return []
    result = stop.stack[-1]
    info = graph_info(call.name, stop.frame.f_globals.get(call.name))
    outputs = info.outputs if info is not None else []
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    lines = [f"graph {graph_number(call.name)} returned {len(values)} "
             f"output{'s' if len(values) != 1 else ''}:"]
    for i, value in enumerate(values):
        source = outputs[i] if i < len(outputs) else "?"
        lines.append(f"  out {i:<3} {source:<27} {summarize(value, 60)}")
    return lines


def _resume_inputs(code: types.CodeType, site: CallSite) -> list[str]:
    params = code.co_varnames[:code.co_argcount]
    lines = [f"resume function {code.co_name} called with:"]
    for i, value in enumerate(site.args):
        param = params[i] if i < len(params) else f"arg {i}"
        lines.append(f"  {param:<30} {summarize(value, 60)}")
    return lines
