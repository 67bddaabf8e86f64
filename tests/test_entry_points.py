"""The ways into dyndbg besides `python -m dyndbg`: dyndbg.breakpoint() and
set_trace() (directly and through PYTHONBREAKPOINT), `with dyndbg.debug()`,
torch's own <BREAKPOINT> marker, post_mortem() and --post-mortem.

Programs run with plain python (or the CLI) in a subprocess; commands come on
stdin, so the debugger's transcript is interleaved with the program's output.
"""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import warm_start
from harness import CALLABLE_SLOT, ROOT, SAMPLES, SUBSCRIPT, TIMEOUT, child_env, run_dyndbg
from transcript import no_traceback


def _python(script: Path, commands: list[str], env: dict[str, str | None] | None = None,
            options: list[str] | None = None) -> subprocess.CompletedProcess:
    """`python [options] script` with commands on stdin; output as text."""
    return warm_start.run([sys.executable, *(options or []), str(script)],
                          input="".join(c + "\n" for c in commands), capture_output=True,
                          text=True, cwd=ROOT, env=child_env(extra=env), timeout=TIMEOUT)


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def _stops(output: str) -> list[str]:
    """The location lines of the stops, in order."""
    return [line for line in output.splitlines() if re.match(r"> \S", line)]


def test_dyndbg_breakpoint_stops_after_the_call_at_the_graph_boundary() -> None:
    proc = _python(SAMPLES / "breakpoint_call.py", ["where", "p __stack__[1]", "c"])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Stopped after dyndbg.breakpoint()" in out
    stops = _stops(out)
    assert len(stops) == 1, out
    # In the transformed code of f, compiled as [0/0], on the breakpoint's line.
    assert stops[0].startswith("> f [0/0]") and "breakpoint_call.py:14" in stops[0], stops[0]
    # The stack holds graph 1's output (y = sin(x) + 1) at the boundary.
    assert "tensor([1.0000, 1.8415, 1.9093, 1.1411])" in out
    lines = out.splitlines()
    assert lines[-2:] == ["f(x) = 11.7838", "eager = 11.7838"], out[-400:]
    assert "Traceback" not in proc.stderr


PROGRAM_WITH_BUILTIN_BREAKPOINT = """\
    import torch

    @torch.compile(backend="eager")
    def f(x):
        y = x * 3
        breakpoint()
        return y + 1

    @torch.compile(backend="eager")
    def g(x):
        return x - 1

    print("f", f(torch.ones(2)).tolist())
    breakpoint()                 # in ordinary code: stops in the next generated code
    print("plain code runs on")
    print("g", g(torch.ones(2)).tolist())
"""


def test_pythonbreakpoint_makes_builtin_breakpoint_use_dyndbg(tmp_path: Path) -> None:
    script = _write(tmp_path, "builtin_breakpoint.py", PROGRAM_WITH_BUILTIN_BREAKPOINT)
    proc = _python(script, ["p __stack__", "c", "c"],
                   env={"PYTHONBREAKPOINT": "dyndbg.set_trace"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    stops = _stops(out)
    assert len(stops) == 2, out
    assert "Stopped after set_trace()" in out
    assert stops[0].startswith("> f [0/0]") and "builtin_breakpoint.py:6" in stops[0]
    assert f"Stopped at the first generated code since set_trace() at {script}:14" in out
    assert stops[1].startswith("> g [")
    # The second stop comes after the plain code ran, before g's result.
    assert out.index("plain code runs on") < out.index(stops[1]) < out.index("g [0.0, 0.0]")
    assert "f [4.0, 4.0]" in out
    assert "Traceback" not in proc.stderr


DEBUG_BLOCK = """\
    import torch
    import dyndbg

    @torch.compile(backend="eager")
    def g(x):
        return x.cos() * 3

    print("before", g(torch.zeros(2)).tolist())          # compiled outside the block
    with dyndbg.debug(commands=["p 'inside the block'", "c"]):
        print("inside", g(torch.zeros(2)).tolist())
    print("after", g(torch.zeros(2)).tolist())           # no stop: detached
    with dyndbg.debug():
        g(torch.zeros(2))
        print("not reached: quit ends the block")
    print("the program goes on after quit")
"""


def test_debug_context_stops_only_inside_and_quit_ends_the_block(tmp_path: Path) -> None:
    script = _write(tmp_path, "debug_block.py", DEBUG_BLOCK)
    proc = _python(script, ["q"])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    stops = _stops(out)
    assert len(stops) == 2, out
    # Code compiled before the block keeps its compile id.
    assert all(stop.startswith("> g [0/0]") for stop in stops), stops
    assert "'inside the block'" in out
    order = [out.index(text) for text in ("before [3.0, 3.0]", stops[0], "inside [3.0, 3.0]",
                                          "after [3.0, 3.0]", "(dyndbg) q",
                                          "the program goes on after quit")]
    assert order == sorted(order), out
    assert "not reached" not in out
    assert "Traceback" not in proc.stderr


SESSION_HANDLE = """
    import dis
    import io

    import torch
    from torch._dynamo.utils import counters

    import dyndbg


    @torch.compile(backend="eager")
    def f(x):
        y = x.sin()
        print("graph break")
        return y + 1


    with dyndbg.debug(commands=["b __compiled_fn_*", "c", "c", "c", "c"],
                      out=io.StringIO()) as session:
        f(torch.ones(2))
        f(torch.ones(2))
    for code in session.generated():
        # dyndbg's instruction table is dis's, CACHE entries left out.
        same = [(i.offset, i.opname) for i in code.instructions] == \\
            [(i.offset, i.opname) for i in dis.get_instructions(code.code)]
        print(code.label, code.function, code.compile_id, same)
    print("graphs", counters["stats"]["unique_graphs"])
    for bp in session.breakpoints():
        print(bp.number, bp.kind, bp.location, bp.enabled, bp.hits)
"""


def test_debug_session_handle_tells_what_dyndbg_tracks(tmp_path: Path) -> None:
    script = _write(tmp_path, "handle.py", SESSION_HANDLE)
    proc = _python(script, [])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["graph break", "graph break"]
    assert lines[2:5] == [
        "f [0/0] f 0/0 True",
        "torch_dynamo_resume_in_f_at_14 [1/0] torch_dynamo_resume_in_f_at_14 1/0 True",
        "graphs 2"]       # one generated code object per graph, as torch counts them
    # The graph breakpoint was hit at both graph calls of both calls of f.
    assert lines[-1] == "1 break __compiled_fn_* True 4", lines


def test_torch_marker_is_breakpoint_0(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLES / "torch_marker.py", ["c", "b", "disable 0", "c"], tmp_path)
    no_traceback(run)
    assert run.returncode == 0, run.stderr
    hits = [line for line in run.transcript.splitlines() if line.startswith("Breakpoint 0")]
    assert hits == [
        "Breakpoint 0 at torch's <BREAKPOINT> markers (bytecode_debugger.breakpoint()), hit 1",
        "Breakpoint 0 at torch's <BREAKPOINT> markers (bytecode_debugger.breakpoint()), hit 2",
    ], run.transcript
    stops = _stops(run.transcript)
    assert all("LOAD_CONST" in s and "<BREAKPOINT>" in s for s in stops), stops
    assert "0    break  enabled   torch's <BREAKPOINT> markers" in run.transcript
    assert run.stdout.splitlines() == ["call 0: [4.0, 4.0, 4.0]", "call 1: [4.0, 4.0, 4.0]"]
    assert "(bdb)" not in run.stdout + run.stderr  # torch's own debugger never started


def test_torch_marker_with_nothing_else_to_stop_keeps_torch_debugger_out(tmp_path: Path) -> None:
    # `disable 0` before the marker code exists, then continue: nothing can
    # stop, yet the callback must stay hooked or torch would start its debugger.
    run = run_dyndbg(SAMPLES / "torch_marker.py", ["disable 0", "c"], tmp_path)
    no_traceback(run)
    assert run.returncode == 0, run.stderr
    assert len(_stops(run.transcript)) == 1, run.transcript  # the first instruction only
    assert "(bdb)" not in run.stdout + run.stderr
    assert run.stdout.splitlines() == ["call 0: [4.0, 4.0, 4.0]", "call 1: [4.0, 4.0, 4.0]"]


POST_MORTEM_CALL = """\
    import torch
    import dyndbg

    @torch.compile(backend="eager")
    def f(x, items):
        y = x.sin() + 1
        print("graph break")
        return y * items[5]

    try:
        f(torch.ones(3), [1, 2])
    except IndexError:
        dyndbg.post_mortem()
    print("the program goes on")
"""


def test_post_mortem_function_opens_the_failing_dynamo_frame(tmp_path: Path) -> None:
    script = _write(tmp_path, "pm_call.py", POST_MORTEM_CALL)
    proc = _python(script, ["where", "p items", "n", "c"])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "!! IndexError: list index out of range" in out
    stops = _stops(out)
    assert len(stops) == 1 and SUBSCRIPT.search(stops[0]), out
    assert stops[0].startswith("> torch_dynamo_resume_in_f_at_7"), stops[0]
    assert "f [0/0]" in out  # the caller, in `where`, from the traceback
    assert f"{script}:11 <module>" in out  # where the traceback has it, not the handler
    assert "[1, 2]" in out
    assert "*** post mortem: the program has already failed" in out
    assert out.rstrip().endswith("dyndbg: post-mortem session ends\nthe program goes on"), out


def test_post_mortem_without_generated_frame_says_so(tmp_path: Path) -> None:
    script = _write(tmp_path, "pm_plain.py", """\
        import dyndbg
        try:
            {}["missing"]
        except KeyError:
            dyndbg.post_mortem()
        print("done")
    """)
    proc = _python(script, [])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["dyndbg: no dynamo-generated frame in this traceback",
                                        "done"]


def test_post_mortem_option_shows_what_went_into_the_failing_graph(tmp_path: Path) -> None:
    sample = SAMPLES / "crash_in_graph.py"
    plain = warm_start.run([sys.executable, str(sample)], capture_output=True, text=True,
                           cwd=ROOT, env=child_env(), timeout=TIMEOUT)
    run = run_dyndbg(sample, ["c", "stack", "p idx", "s", "c"], tmp_path,
                     options=["--post-mortem"])
    # The program's own output, traceback and status are python's.
    assert (run.stdout, run.stderr, run.returncode) == (plain.stdout, plain.stderr, 1)
    text = run.transcript
    assert "!! IndexError: index 7 is out of bounds for dimension 0 with size 4" in text
    stops = _stops(text)
    assert len(stops) == 2, text
    assert stops[1].startswith("> torch_dynamo_resume_in_f_at_11 [1/0]") and " CALL " in stops[1]
    # The stack as the failing call of graph 2 saw it: the graph and its inputs.
    assert "value stack, depth 4, bottom to top (as before the failing instruction):" in text
    assert re.search(rf"{CALLABLE_SLOT}  function +<function forward", text), text
    assert re.search(r"3 +Tensor i64\[2\] cpu \[1, 7\]", text), text
    assert "*** post mortem: the program has already failed" in text  # `s`
    assert text.rstrip().endswith("dyndbg: post-mortem session ends")


def test_without_post_mortem_option_no_post_mortem_stop(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLES / "crash_in_graph.py", ["c", "c"], tmp_path)
    assert run.returncode == 1 and "IndexError" in run.stderr
    # Only the exception stop in f, where we had stopped (see test_commands).
    assert "'c' lets it propagate" in run.transcript
    assert "post-mortem" not in run.transcript
