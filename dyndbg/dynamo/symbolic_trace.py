"""Dynamo's symbolic trace, watched: the one module that reads the state of
dynamo's InstructionTranslator while it compiles.

Where dynamo does the work (torch/_dynamo/symbolic_convert.py and
output_graph.py; the same on torch 2.13, 2.14 and 2.15):

- `InstructionTranslatorBase.run(tx)` interprets one function: the frame being
  compiled (an `InstructionTranslator`, whose `parent` is None) or a call it
  inlines (an `InliningInstructionTranslator`, `parent` the caller's).
  `run` calls `self.step()` once per instruction, looked up on the instance
  each time: a watched translator gets a `step` of its own in its instance
  dict (trace_step below), which reports the instruction about to be
  interpreted, `tx.instructions[tx.instruction_pointer]`, then calls the
  class's step. A translator not watched runs dynamo's own step untouched.
- `OutputGraph.compile_subgraph(tx, reason, stack_pops)` is where dynamo
  compiles the graph so far: `reason.graph_break` True is a graph break it
  decided (the `GraphCompileReason` that `torch._dynamo.explain` reports), False
  the end of the function (`return_value`).
- A `RestartAnalysis` leaving `step` (or compile_subgraph) rolls the
  speculation back: dynamo traces the frame again from its first instruction,
  with a new InstructionTranslator, under the same compile id.

Nothing here changes what dynamo compiles: the state is read as
symbolic_values.py reads it, without realizing any lazy VariableTracker.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import os
import types
from typing import Any, Callable, Iterator, NamedTuple, Protocol

from dyndbg.dynamo import graphs
from dyndbg.dynamo.break_reasons import BreakReason
from dyndbg.dynamo.symbolic_values import (SymbolicValue, UserInstruction, describe, guard_kind,
                                           line_of, node_target, source_name, user_instruction,
                                           value_text)

_STEP = "step"       # the instance attribute a watched translator's `run` finds


class TracePoint(enum.Enum):
    """Where in dynamo's trace a stop is."""

    START = "start"                  # the frame's first instruction, before dynamo interprets it
    INSTRUCTION = "instruction"      # before dynamo interprets one of the user's instructions
    GRAPH_BREAK = "graph break"      # dynamo decided a graph break and compiles the graph so far
    RESTART = "restart"              # dynamo rolled the speculation back and traces again
    RETURN = "return"                # the frame's return: dynamo compiles its last graph
    CALLING = "calling"              # a caller's level, interpreting the call it inlines


class TranslatorFrame(NamedTuple):
    """One level of dynamo's inlining stack."""

    kind: str              # "InstructionTranslator", "InliningInstructionTranslator"
    function: str
    filename: str
    line: int | None


class NodeView(NamedTuple):
    """One FX node of the graph being built."""

    name: str
    op: str
    target: str
    value: str             # "f32[4]" of its example value
    place: str             # "sample.py:16" of the user's line that made it


class GuardView(NamedTuple):
    """One guard installed so far, with the user's line that installed it."""

    kind: str              # "TENSOR_MATCH"
    source: str            # "L['x']"
    place: str             # "sample.py:16", or "torch" where it has no user frame
    line: str              # that line's source text


class SymbolicState:
    """Dynamo's state at a trace point, read on demand; `tx` is the translator."""

    def __init__(self, tx: Any, point: TracePoint) -> None:
        self.tx = tx
        self.point = point

    # -- where ---------------------------------------------------------------------
    @property
    def code(self) -> types.CodeType:
        return self.tx.f_code

    @property
    def depth(self) -> int:
        """0 for the frame being compiled, 1 for a call it inlines, ..."""
        return len(self.translators()) - 1

    @property
    def root(self) -> Any:
        tx = self.tx
        while _parent(tx) is not None:
            tx = _parent(tx)
        return tx

    @property
    def is_root(self) -> bool:
        return _parent(self.tx) is None

    def instruction(self) -> UserInstruction | None:
        """The instruction dynamo interprets next (at a graph break or a
        return, the one it is interpreting)."""
        inst = _next_instruction(self.tx) if self.point in (TracePoint.START,
                                                            TracePoint.INSTRUCTION) \
            else getattr(self.tx, "current_instruction", None)
        if inst is None:
            return None
        return user_instruction(inst)

    @property
    def line(self) -> int | None:
        instr = self.instruction()
        if instr is not None and instr.line is not None:
            return instr.line
        return getattr(self.tx, "lineno", None)

    def starts_line(self) -> bool:
        """The next instruction is the first of its line (the one before it has another)."""
        ip = self.tx.instruction_pointer
        if ip is None:
            return False
        this = line_of(self.tx.instructions[ip])
        return this is not None and (ip == 0 or line_of(self.tx.instructions[ip - 1]) != this)

    @property
    def prologue(self) -> bool:
        """Dynamo is interpreting a resume function's prologue (it restores the stack)."""
        return bool(getattr(self.tx, "is_tracing_resume_prologue", False))

    def levels(self) -> list[SymbolicState]:
        """One state per level of the inlining stack, the frame being compiled
        first, matching translators(): this one innermost, the callers each
        at the instruction they are interpreting (their inlined call)."""
        chain = []
        tx = self.tx
        while tx is not None:
            chain.append(tx)
            tx = _parent(tx)
        return [self if tx is self.tx else SymbolicState(tx, TracePoint.CALLING)
                for tx in reversed(chain)]

    def translators(self) -> list[TranslatorFrame]:
        """The inlining stack, the frame being compiled first."""
        frames = []
        tx = self.tx
        while tx is not None:
            frames.append(tx)
            tx = _parent(tx)
        out = []
        for i, tx in enumerate(reversed(frames)):
            inst = _next_instruction(tx) if tx is self.tx and self.point in (
                TracePoint.START, TracePoint.INSTRUCTION) else getattr(tx, "current_instruction",
                                                                       None)
            line = (line_of(inst) if inst is not None else None) or getattr(tx, "lineno", None)
            out.append(TranslatorFrame(type(tx).__name__, tx.f_code.co_name,
                                       tx.f_code.co_filename, line))
        return out

    # -- what dynamo knows ---------------------------------------------------------
    def stack(self) -> list[SymbolicValue]:
        """The symbolic stack, bottom to top."""
        return [describe(value) for value in list(self.tx.stack)]

    def locals(self) -> list[tuple[str, SymbolicValue]]:
        return [(name, describe(value))
                for name, value in list(self.tx.symbolic_locals.items())]

    def graph_nodes(self) -> list[NodeView]:
        """The FX graph built so far, in order."""
        graph = self.tx.output.graph
        return [NodeView(node.name, node.op, node_target(node),
                         value_text(node.meta.get("example_value")), graphs.node_place(node))
                for node in graph.nodes]

    def guards(self) -> list[GuardView]:
        """The guards installed so far, by line then source."""
        out = []
        for guard in list(self.tx.output.guards):
            stack = getattr(guard, "user_stack", None)
            frame = stack[-1] if stack else None
            place = f"{os.path.basename(frame.filename)}:{frame.lineno}" if frame else "torch"
            out.append(GuardView(guard_kind(guard), str(source_name(guard.originating_source)),
                                 place, (frame.line or "").strip() if frame else ""))
        return sorted(out, key=lambda g: (g.place == "torch", g.place, g.source, g.kind))

    def listing(self, around: int = 5) -> list[tuple[int, UserInstruction, bool]]:
        """(index, instruction, is the one at this stop) for the instructions
        of the user's code around the current one."""
        instructions = self.tx.instructions
        if self.point in (TracePoint.START, TracePoint.INSTRUCTION):
            here = self.tx.instruction_pointer
        else:
            current = getattr(self.tx, "current_instruction", None)
            here = next((i for i, inst in enumerate(instructions) if inst is current), None)
        if here is None:
            return []
        first = max(0, here - around)
        return [(i, user_instruction(inst),
                 i == here) for i, inst in enumerate(instructions[first:here + around + 1], first)]

    def globals(self) -> dict[str, object]:
        """The traced function's module globals."""
        return self.tx.f_globals

    @contextlib.contextmanager
    def read_only(self) -> Iterator[None]:
        """While an expression at this stop runs: realizing a lazy
        VariableTracker (which installs guards, and so changes what dynamo
        compiles) raises WouldChangeTrace instead. Other changes an
        expression may make through `__tx__` are the user's to avoid."""
        from torch._dynamo.variables import lazy
        caches = [c for c in (getattr(lazy, "LazyCache", None),
                              getattr(lazy, "ComputedLazyCache", None))
                  if c is not None and "realize" in vars(c)]
        saved = [vars(c)["realize"] for c in caches]

        def refuse(cache: object) -> None:
            raise WouldChangeTrace("this reads a value dynamo has not realized yet; realizing "
                                   "it would install guards and change what dynamo compiles "
                                   "(`stack` and `locals` show it as it is)")
        for cache in caches:
            setattr(cache, "realize", refuse)
        try:
            yield
        finally:
            for cache, realize in zip(caches, saved):
                setattr(cache, "realize", realize)

    def namespace(self) -> dict[str, object]:
        """What an expression at this stop sees: the symbolic locals (dynamo's
        VariableTrackers), `__stack__`, `__graph__` (the FX graph being
        built) and `__tx__` (the translator)."""
        names: dict[str, object] = dict(self.tx.symbolic_locals)
        names.update(__stack__=list(self.tx.stack), __graph__=self.tx.output.graph,
                     __tx__=self.tx)
        return names


class WouldChangeTrace(Exception):
    """An expression at a trace stop would change what dynamo compiles."""


def _parent(tx: Any) -> Any:
    return tx.__dict__.get("parent")


def _next_instruction(tx: Any) -> Any:
    ip = tx.instruction_pointer
    return None if ip is None or ip >= len(tx.instructions) else tx.instructions[ip]


def compile_id() -> tuple[str, int]:
    """The compile id being traced ("1/0") and the attempt (0, then 1 after a restart)."""
    from torch._guards import CompileContext
    trace = CompileContext.current_trace_id()
    if trace is None:
        return "", 0
    return str(trace.compile_id), int(getattr(trace, "attempt", 0) or 0)


# -- the hooks -------------------------------------------------------------------------
class TraceListener(Protocol):
    """What the engine answers (engine/trace_stepping.py)."""

    def watches(self, state: SymbolicState) -> bool: ...
    def at(self, state: SymbolicState, reason: BreakReason | None) -> None: ...


class TraceHooks:
    """dynamo's run and compile_subgraph, wrapped while installed."""

    def __init__(self, listener: TraceListener,
                 report_error: Callable[[str, BaseException], None],
                 passes: tuple[type[BaseException], ...]) -> None:
        self.listener = listener
        self._report_error = report_error
        self._passes = passes                  # exceptions a stop may raise into dynamo (quit)
        self.installed = False
        self._saved: dict[str, Callable[..., Any]] = {}
        self._restart_seen: int | None = None  # id() of the restart already reported

    def missing(self) -> str | None:
        """What this torch lacks of what the hooks use (versions.py), or None."""
        from torch._dynamo import exc, output_graph, symbolic_convert
        from torch._guards import CompileContext
        needed = ((symbolic_convert, "InstructionTranslatorBase"), (exc, "RestartAnalysis"),
                  (getattr(symbolic_convert, "InstructionTranslatorBase", None), "run"),
                  (getattr(symbolic_convert, "InstructionTranslatorBase", None), "step"),
                  (output_graph.OutputGraph, "compile_subgraph"),
                  (CompileContext, "current_trace_id"))
        for owner, name in needed:
            if not hasattr(owner, name):
                return f"{getattr(owner, '__name__', owner)}.{name}"
        return None

    def install(self) -> None:
        if self.installed or self.missing() is not None:
            return
        from torch._dynamo import output_graph, symbolic_convert
        base = symbolic_convert.InstructionTranslatorBase
        self._saved = {"run": base.run, "compile_subgraph": output_graph.OutputGraph.compile_subgraph}
        hooks = self
        run, compile_subgraph = self._saved["run"], self._saved["compile_subgraph"]

        @functools.wraps(run)
        def traced_run(tx: Any) -> None:
            hooks.starting(tx)
            try:
                return run(tx)
            except BaseException as error:
                hooks.leaving(tx, error)   # a restart: reported, then dynamo's to handle
                raise
            finally:
                tx.__dict__.pop(_STEP, None)

        @functools.wraps(compile_subgraph)
        def traced_compile_subgraph(output: Any, tx: Any, *args: Any, **kwargs: Any) -> Any:
            hooks.compiling(tx, kwargs["reason"] if "reason" in kwargs else
                            (args[0] if args else None))
            return compile_subgraph(output, tx, *args, **kwargs)

        setattr(base, "run", traced_run)
        setattr(output_graph.OutputGraph, "compile_subgraph", traced_compile_subgraph)
        self.installed = True

    def uninstall(self) -> None:
        if not self.installed:
            return
        from torch._dynamo import output_graph, symbolic_convert
        setattr(symbolic_convert.InstructionTranslatorBase, "run", self._saved["run"])
        setattr(output_graph.OutputGraph, "compile_subgraph", self._saved["compile_subgraph"])
        self.installed = False

    def watch(self, tx: Any) -> None:
        """Report each instruction `tx` interprets from now on."""
        if _STEP not in tx.__dict__:
            tx.__dict__[_STEP] = functools.partial(self.trace_step, tx)

    def watch_chain(self, tx: Any) -> None:
        """`tx` and every translator it is inlined in."""
        while tx is not None:
            self.watch(tx)
            tx = _parent(tx)

    # -- called by dynamo, through the wrappers: never raise into it, but quit --------
    def starting(self, tx: Any) -> None:
        try:
            if self.installed and self.listener.watches(SymbolicState(tx, TracePoint.START)):
                self.watch(tx)
        except self._passes:
            raise
        except BaseException as error:  # noqa: BLE001 - dynamo's compile must go on
            self._report_error("trace start", error)

    def trace_step(self, tx: Any) -> bool:
        if self.installed:
            self._deliver(SymbolicState(tx, TracePoint.INSTRUCTION), None)
        return type(tx).step(tx)

    def leaving(self, tx: Any, error: BaseException) -> None:
        """An exception leaves `tx`'s run: a restart is reported once, by the
        innermost watched translator it leaves."""
        try:
            from torch._dynamo.exc import RestartAnalysis
            if not isinstance(error, RestartAnalysis) or id(error) == self._restart_seen or \
                    _STEP not in tx.__dict__ or not self.installed:
                return
            self._restart_seen = id(error)
            text = str(getattr(error, "restart_reason", "") or "") or type(error).__name__
        except BaseException as failure:  # noqa: BLE001 - dynamo's compile must go on
            self._report_error("trace restart", failure)
            return
        self._deliver(SymbolicState(tx, TracePoint.RESTART), BreakReason(text, ()))

    def compiling(self, tx: Any, reason: Any) -> None:
        if not self.installed or reason is None:
            return
        if getattr(reason, "graph_break", True):
            self._deliver(SymbolicState(tx, TracePoint.GRAPH_BREAK),
                          BreakReason(str(getattr(reason, "reason", "")),
                                      tuple(getattr(reason, "user_stack", ()) or ())))
        else:
            self._deliver(SymbolicState(tx, TracePoint.RETURN), None)

    def _deliver(self, state: SymbolicState, reason: BreakReason | None) -> None:
        try:
            self.listener.at(state, reason)
        except self._passes:
            raise
        except BaseException as error:  # noqa: BLE001 - dynamo's compile must go on
            self._report_error("trace stop", error)
