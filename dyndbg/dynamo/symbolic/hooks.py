"""Where dynamo is hooked to stop while it compiles (compile_stepping.py in
the engine decides whether to; symbolic/state.py reads the state).

- `InstructionTranslatorBase.run(tx)` interprets one function: the frame being
  compiled (an `InstructionTranslator`, whose `parent` is None) or a call it
  inlines (an `InliningInstructionTranslator`, `parent` the caller's).
  `run` calls `self.step()` once per instruction, looked up on the instance
  each time: a watched translator gets a `step` of its own in its instance
  dict (trace_step below), which reports the instruction about to be
  interpreted, then calls the class's step. A translator not watched runs
  dynamo's own step untouched; with no hook installed (no trace catchpoint
  or breakpoint set), dynamo runs as without dyndbg.
- `OutputGraph.compile_subgraph(tx, reason, stack_pops)` is where dynamo
  compiles the graph so far: `reason.graph_break` True is a graph break it
  decided (the `GraphCompileReason` that `torch._dynamo.explain` reports), False
  the end of the function (`return_value`).
- A `RestartAnalysis` leaving a translator's run rolls the attempt back:
  dynamo traces the frame again from its first instruction, with a new
  InstructionTranslator, under the same compile id (up to its limit).

Every hook catches everything but the debugger's own quit: dynamo's compile
goes on whatever happens in dyndbg.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Protocol

from dyndbg.dynamo.compiles import BreakReason
from dyndbg.dynamo.symbolic.state import SymbolicState, CompilePoint, parent

_STEP = "step"       # the instance attribute a watched translator's `run` finds


class CompileStopListener(Protocol):
    """What the engine answers (engine/compile_stepping.py)."""

    def watches(self, state: SymbolicState) -> bool: ...
    def at(self, state: SymbolicState, reason: BreakReason | None, cause: str = "") -> None: ...


class CompileStopHooks:
    """dynamo's run and compile_subgraph, wrapped while installed."""

    def __init__(self, listener: CompileStopListener,
                 report_error: Callable[[str, BaseException], None],
                 passes: tuple[type[BaseException], ...]) -> None:
        self.listener = listener
        self._report_error = report_error
        self._passes = passes                  # exceptions a stop may raise into dynamo (quit)
        self.installed = False
        self._saved: dict[str, Callable[..., Any]] = {}
        self._restart_seen: BaseException | None = None   # the restart already reported

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

    def forget(self) -> None:
        """A compile ended: what it left here goes."""
        self._restart_seen = None

    def watch(self, tx: Any) -> None:
        """Report each instruction `tx` interprets from now on."""
        if _STEP not in tx.__dict__:
            tx.__dict__[_STEP] = functools.partial(self.trace_step, tx)

    def watch_chain(self, tx: Any) -> None:
        """`tx` and every translator it is inlined in."""
        while tx is not None:
            self.watch(tx)
            tx = parent(tx)

    # -- called by dynamo, through the wrappers: never raise into it, but quit --------
    def starting(self, tx: Any) -> None:
        try:
            if self.installed and self.listener.watches(SymbolicState(tx, CompilePoint.START)):
                self.watch(tx)
        except self._passes:
            raise
        except BaseException as error:  # noqa: BLE001 - dynamo's compile must go on
            self._report_error("trace start", error)

    def trace_step(self, tx: Any) -> bool:
        if self.installed:
            self._deliver(SymbolicState(tx, CompilePoint.INSTRUCTION), None)
        return type(tx).step(tx)

    def leaving(self, tx: Any, error: BaseException) -> None:
        """An exception leaves `tx`'s run: a restart is reported once, by the
        innermost watched translator it leaves, or by the frame compiled."""
        try:
            from torch._dynamo.exc import RestartAnalysis
            if not isinstance(error, RestartAnalysis) or error is self._restart_seen or \
                    (_STEP not in tx.__dict__ and parent(tx) is not None) or \
                    not self.installed:
                return
            self._restart_seen = error
            text = str(getattr(error, "restart_reason", "") or "") or "(no reason given)"
        except BaseException as failure:  # noqa: BLE001 - dynamo's compile must go on
            self._report_error("trace restart", failure)
            return
        self._deliver(SymbolicState(tx, CompilePoint.RESTART), BreakReason(text, ()),
                      type(error).__name__)

    def compiling(self, tx: Any, reason: Any) -> None:
        if not self.installed or reason is None:
            return
        if getattr(reason, "graph_break", True):
            self._deliver(SymbolicState(tx, CompilePoint.GRAPH_BREAK), BreakReason.of(reason))
        else:
            self._deliver(SymbolicState(tx, CompilePoint.RETURN), None)

    def _deliver(self, state: SymbolicState, reason: BreakReason | None,
                 cause: str = "") -> None:
        try:
            self.listener.at(state, reason, cause)
        except self._passes:
            raise
        except BaseException as error:  # noqa: BLE001 - dynamo's compile must go on
            self._report_error("compile stop", error)
