"""The pure parts of stopping while dynamo compiles: which functions a trace
catchpoint names, `b --trace`'s location, bdb's bookkeeping shared with the
breakpoints in generated code, and which translator depth each step mode
stops at."""
from __future__ import annotations

import types

import pytest

from dyndbg.engine.breakpoints import BreakpointTable
from dyndbg.engine.targets import CompileCatchTarget, CompileLineTarget
from dyndbg.engine.compile_stepping import CompileStepMode, CompileStep, CompileStepper, compile_line_target


class Net:
    def forward(self):
        return 1


def torch_dynamo_resume_in_f_at_17():
    return 2


@pytest.mark.parametrize("pattern, code, caught", [
    ("*", Net.forward.__code__, True),
    ("forward", Net.forward.__code__, True),
    ("Net.forward", Net.forward.__code__, True),
    (f"{__name__}.Net.forward", Net.forward.__code__, True),     # module-qualified
    ("Other.forward", Net.forward.__code__, False),
    ("torch_dynamo_resume_in_f*", torch_dynamo_resume_in_f_at_17.__code__, True),
    ("torch_dynamo_resume_in_g*", torch_dynamo_resume_in_f_at_17.__code__, False),
])
def test_a_trace_catchpoint_names_functions_as_break_does(pattern, code, caught):
    assert CompileCatchTarget("trace", pattern=pattern).matches(code) is caught


def test_trace_targets_arm_no_generated_instruction_and_say_what_they_are():
    catch, line = CompileCatchTarget("trace", pattern="f*"), CompileLineTarget("model.py", 12)
    assert catch.compile_time and line.compile_time
    assert catch.offsets(None, None) == set() and line.offsets(None, None) == set()
    assert (catch.describe(), CompileCatchTarget("trace").describe(), line.describe()) == \
        ("catch trace f*", "catch trace", "--trace model.py:12")


@pytest.mark.parametrize("spec, expected", [
    ("model.py:12", ("model.py", 12)), (" dir/model.py:3 ", ("dir/model.py", 3)),
    ("model.py", None), ("model.py:x", None), (":12", None), ("", None),
])
def test_trace_line_location(spec, expected):
    target = compile_line_target(spec)
    assert (None if target is None else (target.filename, target.line)) == expected


def test_take_counts_hits_then_applies_condition_ignore_and_temporary():
    table = BreakpointTable()
    plain = table.add(CompileLineTarget("m.py", 1))
    conditioned = table.add(CompileLineTarget("m.py", 1), condition="flag")
    ignored = table.add(CompileLineTarget("m.py", 1))
    ignored.ignore = 1
    once = table.add(CompileLineTarget("m.py", 1), temporary=True)
    reached = [(bp, None) for bp in (plain, conditioned, ignored, once)]
    said: list[str] = []
    stopping = table.take(reached, lambda expr: False, said.append)
    assert stopping == [plain, once] and not said
    assert [bp.hits for bp in (plain, conditioned, ignored, once)] == [1, 1, 1, 1]
    assert table.get(once.number) is None and ignored.ignore == 0


class _State:
    """What _mode_stops reads of a SymbolicState."""

    def __init__(self, depth: int, tx: object = None, line: int | None = None,
                 prologue: bool = False) -> None:
        self.depth, self.tx, self.line, self._prologue = depth, tx, line, prologue

    def in_prologue(self) -> bool:
        return self._prologue


def _stepper(kind: CompileStep, depth: int, tx: object = None, line: int | None = None):
    stepper = CompileStepper(BreakpointTable(), types.SimpleNamespace(), lambda *a: None)
    stepper.mode = CompileStepMode(kind, depth, "1/0", line, tx)
    return stepper


@pytest.mark.parametrize("kind, from_depth, at_depth, stops", [
    (CompileStep.STEP, 0, 1, True), (CompileStep.STEP, 1, 0, True),
    (CompileStep.NEXT, 0, 1, False), (CompileStep.NEXT, 0, 0, True), (CompileStep.NEXT, 1, 0, True),
    (CompileStep.RETURN, 1, 1, False), (CompileStep.RETURN, 1, 2, False),
    (CompileStep.RETURN, 1, 0, True), (CompileStep.CONTINUE, 0, 0, False),
])
def test_step_modes_by_inlining_depth(kind, from_depth, at_depth, stops):
    stepper = _stepper(kind, from_depth)
    assert stepper._mode_stops(_State(at_depth), "1/0") is stops
    assert stepper._mode_stops(_State(at_depth), "2/0") is False   # another compile: never


FRAME, CALLEE = object(), object()


@pytest.mark.parametrize("kind, state, stops", [
    # the same function: on at its line, stop at another
    (CompileStep.NEXT_LINE, _State(0, FRAME, 18), False),
    (CompileStep.NEXT_LINE, _State(0, FRAME, None), False),
    (CompileStep.NEXT_LINE, _State(0, FRAME, 19), True),
    # a call dynamo inlines: through it (nextline), or at its body's first line (stepline)
    (CompileStep.NEXT_LINE, _State(1, CALLEE, 11), False),
    (CompileStep.STEP_LINE, _State(1, CALLEE, 10, prologue=True), False),
    (CompileStep.STEP_LINE, _State(1, CALLEE, 11), True),
    # back in the caller
    (CompileStep.NEXT_LINE, _State(-1, object(), 5), True),
])
def test_line_steps(kind, state, stops):
    assert _stepper(kind, 0, FRAME, 18)._mode_stops(state, "1/0") is stops


def test_the_engine_holds_one_stop_and_a_compile_waits_for_none() -> None:
    """Issue 49: one stop model, held once. A compile that reaches a stop while
    the program is stopped makes none (a line says so); the held stop is
    restored after a stop ends, whatever its kind."""
    from dyndbg.engine.stop import CompileStop, HeldStop, Stop, StopKind
    said: list[str] = []
    served: list[object] = []
    held = HeldStop()
    frontend = types.SimpleNamespace(message=said.append,
                                     interact_compile=lambda stop: served.append(held.current))
    stepper = CompileStepper(BreakpointTable(), frontend, lambda *a: None, held)
    state = types.SimpleNamespace(root_function="f")
    stop = CompileStop(None, state, "0/0", 0)   # type: ignore[arg-type]
    assert stop.kind is StopKind.COMPILE and Stop.kind is StopKind.GENERATED
    stepper._stop(stop)
    assert served == [stop] and held.current is None and said == []
    generated = object()
    with held.holding(generated):   # type: ignore[arg-type]
        assert held.generated is None and held.compile is None   # neither kind: not a stop
        stepper._stop(stop)
        assert held.current is generated
    assert served == [stop] and len(said) == 1 and "no stop in that compile" in said[0]
    with held.holding(stop):
        assert held.compile is stop and held.generated is None
