"""Dynamo's symbolic trace, watched: the state of dynamo's
InstructionTranslator at a stop while it compiles, read without changing it
(symbolic/values.py reads its VariableTrackers, nodes and guards;
symbolic/hooks.py is where dynamo is hooked to stop).

What is read (torch/_dynamo/symbolic_convert.py and output_graph.py; the
same on torch 2.13, 2.14 and 2.15, versions.py lists it): a translator's
`instructions`, `instruction_pointer` and `current_instruction`, its
`stack` and `symbolic_locals`, `parent` (None for the frame being compiled,
the caller's translator for a call dynamo inlines), and its OutputGraph's
`graph`, `guards` and `shape_env` (read by shapes/record.py). An expression run at a stop cannot realize a lazy
VariableTracker, add a guard or add a graph node (read_only).
"""
from __future__ import annotations

import contextlib
import enum
import os
import types
from typing import Any, Iterator, NamedTuple

from dyndbg.cpython.opcodes import PROLOGUE_OPNAMES
from dyndbg.dynamo import versions
from dyndbg.dynamo.graphs import lookup as graphs
from dyndbg.dynamo.compiles import guard_kind, place_of
from dyndbg.dynamo.shapes import record as shape_record
from dyndbg.dynamo.shapes.record import ShapeRecord
from dyndbg.dynamo.symbolic.values import (SymbolicValue, UserInstruction, describe, line_of,
                                           node_target, source_name, user_instruction, value_text)


class CompilePoint(enum.Enum):
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
    line: int              # the function's first line (its `def`) where before_body
    before_body: bool = False   # at an instruction with no line (COPY_FREE_VARS, MAKE_CELL)

    def place(self) -> str:
        """`prog.py:4`."""
        return f"{os.path.basename(self.filename)}:{self.line}"

    def shown_place(self) -> str:
        """`prog.py:4`, before the body `prog.py:4 (before its first line)`."""
        return self.place() + (" (before its first line)" if self.before_body else "")


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

    def __init__(self, tx: Any, point: CompilePoint) -> None:
        self.tx = tx
        self.point = point

    # -- where ---------------------------------------------------------------------
    @property
    def code(self) -> types.CodeType:
        return self.tx.f_code

    @property
    def depth(self) -> int:
        """0 for the frame being compiled, 1 for a call it inlines, ..."""
        return len(_chain(self.tx)) - 1

    @property
    def root(self) -> Any:
        return _chain(self.tx)[-1]

    @property
    def is_root(self) -> bool:
        return parent(self.tx) is None

    def _instruction(self) -> Any:
        """Dynamo's Instruction this stop is at: the one it interprets next
        (START, INSTRUCTION), else the one it is interpreting."""
        if self.point in (CompilePoint.START, CompilePoint.INSTRUCTION):
            return _next_instruction(self.tx)
        return getattr(self.tx, "current_instruction", None)

    def instruction(self) -> UserInstruction | None:
        inst = self._instruction()
        return None if inst is None else user_instruction(inst)

    @property
    def line(self) -> int | None:
        instr = self.instruction()
        if instr is not None and instr.line is not None:
            return instr.line
        lineno = getattr(self.tx, "lineno", None)   # -1 before dynamo's first line
        return lineno if isinstance(lineno, int) and lineno > 0 else None

    @property
    def root_function(self) -> str:
        """The name of the function being compiled (the outermost level's)."""
        return str(self.root.f_code.co_name)

    def stack_size(self) -> int:
        return len(self.tx.stack)

    def starts_line(self) -> bool:
        """The next instruction is the first of its line (the one before it has another)."""
        ip = self.tx.instruction_pointer
        if ip is None:
            return False
        this = line_of(self.tx.instructions[ip])
        return this is not None and (ip == 0 or line_of(self.tx.instructions[ip - 1]) != this)

    def in_prologue(self) -> bool:
        """The instruction is one of a function's first, before its body."""
        instr = self.instruction()
        return instr is not None and instr.opname in PROLOGUE_OPNAMES

    @property
    def prologue(self) -> bool:
        """Dynamo is interpreting a resume function's prologue (it restores the stack)."""
        return bool(getattr(self.tx, "is_tracing_resume_prologue", False))

    def levels(self) -> list[SymbolicState]:
        """One state per level of the inlining stack, the frame being compiled
        first, matching translators(): this one innermost, the callers each
        at the instruction they are interpreting (their inlined call)."""
        return [self if tx is self.tx else SymbolicState(tx, CompilePoint.CALLING)
                for tx in reversed(_chain(self.tx))]

    def translators(self) -> list[TranslatorFrame]:
        """The inlining stack, the frame being compiled first."""
        return [TranslatorFrame(type(level.tx).__name__, level.code.co_name,
                                level.code.co_filename, level.line or level.code.co_firstlineno,
                                level.line is None) for level in self.levels()]

    # -- what dynamo knows ---------------------------------------------------------
    def stack(self) -> list[SymbolicValue]:
        """The symbolic stack, bottom to top."""
        return [self.describe(value) for value in list(self.tx.stack)]

    def locals(self) -> list[tuple[str, SymbolicValue]]:
        return [(name, self.describe(value))
                for name, value in list(self.tx.symbolic_locals.items())]

    def describe(self, value: Any) -> SymbolicValue:
        """A VariableTracker as shown at this stop, a cell with what it holds now."""
        return describe(value, cell_contents=self.cell_contents)

    def cell_contents(self, cell: Any) -> Any:
        """What this trace has stored in a cell VariableTracker (its SideEffects'
        pending `cell_contents`), or None where it stored nothing. Read from
        the dict, by identity: SideEffects.load_cell records a traced source."""
        mutations = self.tx.output.side_effects.store_attr_mutations
        for item, attrs in list(mutations.items()):
            if item is cell:
                return attrs.get("cell_contents")
        return None

    def graph_nodes(self) -> list[NodeView]:
        """The FX graph built so far, in order."""
        graph = self.tx.output.graph
        return [NodeView(node.name, node.op, node_target(node),
                         value_text(node.meta.get("example_value")), graphs.node_place(node))
                for node in graph.nodes]

    def graph_id(self) -> int:
        """Which FX graph is being built (a restart's attempt builds a new one)."""
        return id(self.tx.output.graph)

    def guards(self) -> list[GuardView]:
        """The guards installed so far, by line then source."""
        out = []
        for guard in list(self.tx.output.guards):
            stack = getattr(guard, "user_stack", None)
            frame = stack[-1] if stack else None
            place = place_of(frame) if frame else "torch"
            out.append(GuardView(guard_kind(guard) or "?",
                                 source_name(guard.originating_source),
                                 place, (frame.line or "").strip() if frame else ""))
        return sorted(out, key=lambda g: (g.place == "torch", g.place, g.source, g.kind))

    def shapes(self) -> ShapeRecord | None:
        """The symbols, replacements and shape guards torch's ShapeEnv holds so
        far (shapes/record.py, read live)."""
        return shape_record.read(self.tx.output, live=True)

    def inputs(self) -> dict[str, object]:
        """The frame being compiled's locals as it was called (what `L[...]` reads)."""
        return dict(getattr(self.root, "f_locals", None) or {})

    def listing(self, around: int = 5) -> list[tuple[int, UserInstruction, bool]]:
        """(index, instruction, is the one at this stop) for the instructions
        of the user's code around the current one."""
        instructions = self.tx.instructions
        current = self._instruction()
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
        """While an expression at this stop runs, what would change what
        dynamo compiles raises WouldChangeTrace instead: realizing a lazy
        VariableTracker, adding a guard (a lazy constant's type check adds
        one without realizing), adding a node to an FX graph. These are
        class attributes, so other threads' compiles are refused too while
        it runs; what else an expression does through `__tx__` is the user's."""
        import torch.fx
        from torch._guards import GuardsSet

        def refuse(*args: object, **kwargs: object) -> None:
            raise WouldChangeTrace("this would change what dynamo compiles (it realizes a "
                                   "value dynamo has not, adds a guard or a graph node); "
                                   "`stack` and `locals` show values as they are")
        patched = [(cache, "realize") for cache in versions.lazy_caches()] + \
            [(GuardsSet, "add"), (torch.fx.Graph, "create_node")]
        saved = [(owner, name, vars(owner)[name]) for owner, name in patched]
        for owner, name in patched:
            setattr(owner, name, refuse)
        try:
            yield
        finally:
            for owner, name, original in saved:
                setattr(owner, name, original)

    def namespace(self) -> dict[str, object]:
        """What an expression at this stop sees: the symbolic locals (dynamo's
        VariableTrackers), `__stack__`, `__graph__` (the FX graph being
        built) and `__tx__` (the translator)."""
        names: dict[str, object] = dict(self.tx.symbolic_locals)
        names.update(__stack__=list(self.tx.stack), __graph__=self.tx.output.graph,
                     __tx__=self.tx)
        return names


class WouldChangeTrace(Exception):
    """An expression at a compile stop would change what dynamo compiles."""


def parent(tx: Any) -> Any:
    """The translator `tx` is inlined in; None for the frame being compiled."""
    return tx.__dict__.get("parent")


def _chain(tx: Any) -> list[Any]:
    """`tx`, the translator it is inlined in, and so on to the frame compiled."""
    chain = []
    while tx is not None:
        chain.append(tx)
        tx = parent(tx)
    return chain


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
