"""What the engine hands the front end: a stop, or a line of the
instruction trace.

One stop model for every kind of stop (StopKind): a stop in the code dynamo
generated (Stop), a stop while dynamo compiles (CompileStop), a stop inside a compiled graph
before one of its FX nodes runs (GraphStop). Each has its kind, its breakpoints
and its tag (what its lines start with). The engine holds the one stop the
program is at (HeldStop) from the moment it stops until it goes on; every
front end (the prompt, the editor, pytest, the notebook) reads it there and
keeps no copy."""
from __future__ import annotations

import contextlib
import enum
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Iterator, NamedTuple, Union

from dyndbg.cpython import is_return
from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.breakpoints import Breakpoint
from dyndbg.engine.codeinfo import CodeInfo, Instr

if TYPE_CHECKING:
    from dyndbg.dynamo.compiles import BreakReason
    from dyndbg.dynamo.graphs.stepping import SteppedGraph
    from dyndbg.dynamo.symbolic import CompilePoint, SymbolicState


class StopKind(enum.Enum):
    """Where the program is stopped."""

    GENERATED = "generated code"   # in the code dynamo generated (or a resume function)
    COMPILE = "compile"            # while dynamo compiles, in its symbolic execution
    GRAPH = "graph"                # inside a compiled graph, before one of its nodes runs


class StopReason(enum.Enum):
    STEP = "step"
    BREAKPOINT = "breakpoint"
    EXCEPTION = "exception"
    POST_MORTEM = "post-mortem"


@dataclass
class Stop:
    """A stop in the code dynamo generated."""

    kind: ClassVar[StopKind] = StopKind.GENERATED
    frame: types.FrameType
    entry: GeneratedCode
    info: CodeInfo
    instr: Instr
    reason: StopReason
    stack: list[object] | None                    # None when not readable
    stack_note: str = ""                          # why not readable, or how it was taken
    breakpoints: list[Breakpoint] = field(default_factory=list)
    exception: BaseException | None = None
    first_in_frame: bool = False                  # the first stop in this run of the frame
    entry_locals: dict | None = None              # its arguments and free variables at its start
    why: str = ""                                 # "after dyndbg.breakpoint()" and the like
    # post mortem: the traceback's frames, each with the instruction it was at
    frames: list[tuple[types.FrameType, int]] | None = None

    @property
    def tag(self) -> str:
        """What its location line starts with: `f [0/0]`."""
        return self.entry.label()


class CompileStop(NamedTuple):
    """A stop while dynamo compiles."""

    point: CompilePoint
    state: SymbolicState
    compile_id: str                        # "1/0"
    attempt: int                           # 0; 1 after a restart
    breakpoints: tuple[Breakpoint, ...] = ()
    reason: BreakReason | None = None      # GRAPH_BREAK: torch's reason; RESTART: why
    cause: str = ""                        # RESTART: the RestartAnalysis class dynamo raised

    @property
    def kind(self) -> StopKind:
        return StopKind.COMPILE

    @property
    def trace_id(self) -> str:
        """As TORCH_LOGS writes it: "0/0", then "0/0_1" for the attempt after a restart."""
        return self.compile_id + (f"_{self.attempt}" if self.attempt else "")

    @property
    def tag(self) -> str:
        """What each of its lines starts with: `[compile 0/0_1]`."""
        return f"[compile {self.trace_id}]"


@dataclass
class GraphStop:
    """A stop inside a compiled graph, before its FX node `node` runs: the
    graph's own code runs in `frame` (its locals are the values computed so
    far); `caller` is the generated frame whose call entered it."""

    kind: ClassVar[StopKind] = StopKind.GRAPH
    frame: types.FrameType
    graph: SteppedGraph
    node: object
    caller: types.FrameType | None
    reason: StopReason = StopReason.STEP
    breakpoints: list[Breakpoint] = field(default_factory=list)
    # `catch nan`: after `node` ran, what it found (engine/nan_catch.py's NanFound)
    found: object = None

    @property
    def tag(self) -> str:
        """What its location line starts with: `[graph 1 eager forward]`,
        `[backward of graph 1 aot_eager]`."""
        if self.graph.part == "backward":
            return f"[backward of graph {self.graph.number} {self.graph.backend}]"
        return f"[graph {self.graph.number} {self.graph.backend} {self.graph.part}]"


AnyStop = Union[Stop, CompileStop, GraphStop]


class HeldStop:
    """The stop the program is at, held once by the engine for every front
    end: from the moment it stops until it goes on. There is one at a time:
    a compile never stops while the program is stopped (compile_stepping.py
    says so in a line instead), nor generated code at a compile stop (the
    engine is busy); `holding` still restores what it found."""

    def __init__(self) -> None:
        self.current: AnyStop | None = None

    @contextlib.contextmanager
    def holding(self, stop: AnyStop) -> Iterator[None]:
        previous, self.current = self.current, stop
        try:
            yield
        finally:
            self.current = previous

    @property
    def generated(self) -> Stop | None:
        """The stop in generated code, if that is where the program is."""
        stop = self.current
        return stop if isinstance(stop, Stop) else None

    @property
    def compile(self) -> CompileStop | None:
        """The compile stop, if the program is stopped while dynamo compiles."""
        stop = self.current
        return stop if isinstance(stop, CompileStop) else None

    @property
    def graph(self) -> GraphStop | None:
        """The stop inside a compiled graph, if the program is at one."""
        stop = self.current
        return stop if isinstance(stop, GraphStop) else None


class InstructionTraceKind(enum.Enum):
    ENTER = "enter"              # a generated frame starts
    INSTRUCTION = "instruction"  # before it runs
    RETURN = "return"            # the frame returns `value`
    UNWIND = "unwind"            # the frame is left by an exception


class InstructionTraceEvent(NamedTuple):
    """One line of `trace on`'s output."""

    kind: InstructionTraceKind
    frame: types.FrameType
    entry: GeneratedCode
    info: CodeInfo
    instr: Instr | None          # INSTRUCTION only
    value: object = None         # RETURN only


def frame_event(kind: InstructionTraceKind, frame: types.FrameType, entry: GeneratedCode,
                info: CodeInfo, value: object = None) -> InstructionTraceEvent:
    """The trace line of a frame's start (ENTER) or end (RETURN): an end at
    an instruction that is no return is by an exception (UNWIND)."""
    if kind is InstructionTraceKind.RETURN:
        instr = info.containing(frame.f_lasti)
        if instr is None or not is_return(instr.opname):
            kind = InstructionTraceKind.UNWIND
    return InstructionTraceEvent(kind, frame, entry, info, None, value)
