"""Generated code run outside the main thread (a serving loop, a data thread):
dyndbg stops, steps and shows stacks there as in the main thread, and says
which thread a stop is in.

tests/programs/worker_thread.py: `early-worker` (started before any compiled
call, input all 2) runs the model while the main thread waits inside the
generated frame of `outer`; `late-worker` (started after the breakpoints are
set, input all 3) runs it after. Every test runs with each tracing mechanism
this Python has: sys.settrace (per thread) and, on 3.12+, sys.monitoring
(global).
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, TIMEOUT, child_env, default_sigint, run_dyndbg, run_plain
from transcript import Segment, segments, stops_in

PROGRAM = ROOT / "tests" / "programs" / "worker_thread.py"
MECHANISMS = ["settrace", "monitoring"] if hasattr(sys, "monitoring") else ["settrace"]
EARLY, LATE = ' in thread "early-worker"', ' in thread "late-worker"'
EARLY_X = "tensor([2., 2., 2., 2.])"
LATE_X = "tensor([3., 3., 3., 3.])"
# The model's graph break, which names its resume function.
BREAK_LINE = next(n for n, line in enumerate(PROGRAM.read_text().splitlines(), start=1)
                  if line.strip().startswith("torch._dynamo.graph_break()"))
HAND_OVER_LINE = next(n for n, line in enumerate(PROGRAM.read_text().splitlines(), start=1)
                      if line.strip().startswith("hand_over(worker, go)"))
THREADS = "p sorted(t.name for t in __import__('threading').enumerate())"


def _tracer(mechanism: str) -> dict[str, str | None]:
    return {"DYNDBG_TRACER": "settrace" if mechanism == "settrace" else None}


@pytest.fixture(scope="module")
def plain() -> str:
    run = run_plain(PROGRAM)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "done", run.stdout
    return run.stdout


def _clean(run, plain_stdout: str) -> None:
    """The program ran as without dyndbg, and dyndbg neither failed nor traced back."""
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == plain_stdout, run.transcript[-3000:]
    for text in (run.stderr, run.transcript):
        assert "Traceback" not in text and "internal error" not in text, text[-3000:]


def _early_result(plain_stdout: str) -> str:
    """The early worker's line of output (its input is the same in every mode)."""
    return next(line for line in plain_stdout.splitlines() if line.startswith("early-worker: "))


def _after(found: list[Segment], command: str, nth: int = 0) -> Segment:
    matching = [s for s in found if s.command == command]
    assert len(matching) > nth, f"no {command!r} number {nth}: {[s.command for s in found]}"
    return matching[nth]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_worker_thread_stops_steps_and_shows_its_values(mechanism, tmp_path, plain) -> None:
    commands = ["b model",             # at the first stop, in the main thread
                "c",                   # the model's next entry: in early-worker
                "p __import__('threading').current_thread().name",
                "p x", "stack", THREADS, "s", "n", "where",
                "c",                   # late-worker, started after the breakpoint was set
                "p x"]                 # end of input there: dyndbg detaches in that thread
    run = run_dyndbg(PROGRAM, commands, tmp_path, env=_tracer(mechanism))
    found = segments(run.transcript)
    first = stops_in(run.transcript.splitlines())[0]
    assert first["label"] == "model [0/0]" and first["index"] == 1, first  # main: no thread named

    entry = stops_in(_after(found, "c").output)
    assert [(s["label"], s["index"], s["breakpoints"]) for s in entry] == \
        [("model [0/0]" + EARLY, 1, [(1, 1)])], run.transcript[-3000:]
    # The prompt runs in the thread that stopped: its expressions see its frame.
    assert _after(found, "p __import__('threading').current_thread().name").output == \
        ["'early-worker'"]
    assert _after(found, "p x").output == [EARLY_X]
    assert _after(found, "stack").output == ["value stack, depth 0, bottom to top: empty"]
    # dyndbg starts no thread of its own (time limits and Ctrl-C are signals
    # in the main thread): the program's are the only ones.
    assert _after(found, THREADS).output == ["['MainThread', 'early-worker']"]
    step = stops_in(_after(found, "s").output)
    assert [(s["label"], s["index"]) for s in step] == [("model [0/0]" + EARLY, 2)], step
    over = stops_in(_after(found, "n").output)
    assert len(over) == 1 and over[0]["label"] == "model [0/0]" + EARLY and over[0]["index"] > 2
    # The worker's own stack: the thread's bootstrap, serve(), then the generated frame.
    where = _after(found, "where").output
    assert any(line.endswith(" serve") for line in where), where
    assert re.match(r">\s+\d+ model \[0/0\]  instr \d+ ", where[-1]), where
    assert any("threading.py" in line for line in where), where

    late = stops_in(_after(found, "c", 1).output)
    assert [(s["label"], s["index"], s["breakpoints"]) for s in late] == \
        [("model [0/0]" + LATE, 1, [(1, 2)])], run.transcript[-3000:]
    assert _after(found, "p x", 1).output[0] == LATE_X
    assert "dyndbg: end of input, detaching" in run.transcript
    _clean(run, plain)


GRAPH_STOPS = [   # (label, the value of x in the frame) at each `b __compiled_fn_*` hit
    (r"model \[0/0\]", "[0, 1, 2, 3]"),
    (r"torch_dynamo_resume_in_model_at_\d+ \[1/0\]", "[0, 1, 2, 3]"),
    (r"outer \[2/0\]", "[0, 1, 2, 3]"),
    (r"model \[0/0\]" + EARLY, "[2, 2, 2, 2]"),
    (r"torch_dynamo_resume_in_model_at_\d+ \[1/0\]" + EARLY, "[2, 2, 2, 2]"),
    (r"torch_dynamo_resume_in_outer_at_\d+ \[3/0\]", None),     # outer's y, after the worker
    (r"model \[0/0\]" + LATE, "[3, 3, 3, 3]"),
    (r"torch_dynamo_resume_in_model_at_\d+ \[1/0\]" + LATE, "[3, 3, 3, 3]"),
]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_graph_breakpoint_hits_in_worker_threads(mechanism, tmp_path, plain) -> None:
    run = run_dyndbg(PROGRAM, ["b __compiled_fn_*"] + ["c", "stack"] * len(GRAPH_STOPS) + ["c"],
                     tmp_path, env=_tracer(mechanism))
    found = segments(run.transcript)
    continues = [s for s in found if s.command == "c"]
    stacks = [s for s in found if s.command == "stack"]
    hits = [stops_in(s.output) for s in continues[:len(GRAPH_STOPS)]]
    assert [len(h) for h in hits] == [1] * len(GRAPH_STOPS), run.transcript[-4000:]
    for n, ((label, x), [stop], stack) in enumerate(zip(GRAPH_STOPS, hits, stacks), start=1):
        assert re.fullmatch(label, stop["label"]), (n, stop["line"])
        assert stop["breakpoints"] == [(1, n)], stop
        if x is None:
            continue
        # The graph's call: x is its last input, on top of the stack, and the
        # call's view feeds it to the placeholder L_x_.
        assert stack.output[-1].endswith(f"Tensor f32[4] cpu {x}"), (n, stack.output)
        view = "\n".join(continues[n - 1].output)
        assert re.search(rf"in \d+ +L_x_: f32\[4\] +Tensor f32\[4\] cpu {re.escape(x)}", view), view
    _clean(run, plain)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_trace_shows_a_worker_run_while_the_main_thread_is_traced(mechanism, tmp_path,
                                                                  plain) -> None:
    # `trace on` traces every generated frame of the main thread, outer's
    # included while it waits for the early worker: the worker's own frames
    # (code compiled in the main thread, run in the worker) are traced too.
    run = run_dyndbg(PROGRAM, ["trace on", "c"], tmp_path, env=_tracer(mechanism))
    frames = re.findall(r"^trace (\S+) \[\d+/\d+\]  (starts|returns)", run.transcript, re.M)
    resume_model, resume_outer = (f"torch_dynamo_resume_in_{f}_at_{n}" for f, n in
                                  (("model", BREAK_LINE), ("outer", HAND_OVER_LINE)))
    model_run = [("model", "starts"), (resume_model, "starts"), (resume_model, "returns"),
                 ("model", "returns")]
    assert frames == model_run[1:] + [("outer", "starts")] + model_run + [  # early-worker
        (resume_outer, "starts"), (resume_outer, "returns"), ("outer", "returns")] \
        + model_run, run.transcript[-4000:]                                 # late-worker
    _clean(run, plain)


def test_global_trace_reaches_threads_started_after_dyndbg(tmp_path, plain) -> None:
    # Without torch's callback (DYNDBG_NO_CALLBACK=1) sys.settrace traces
    # globally: threads started after dyndbg get the trace as they start.
    run = run_dyndbg(PROGRAM, ["b model", "c", "where", "c", "c"], tmp_path,
                     env={"DYNDBG_TRACER": "settrace", "DYNDBG_NO_CALLBACK": "1"})
    assert "tracing globally" in run.transcript
    stops = [(s["label"], s["breakpoints"]) for s in stops_in(run.transcript.splitlines())]
    assert stops == [("model [0/0]", []), ("model [0/0]" + EARLY, [(1, 1)]),
                     ("model [0/0]" + LATE, [(1, 2)])], run.transcript[-3000:]
    _clean(run, plain)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_debug_block_reaches_a_thread_started_before_it(mechanism, plain) -> None:
    # `with dyndbg.debug()` attaches while early-worker already runs (waiting):
    # the first generated code inside the block is the worker's.
    proc = warm_start.run([sys.executable, str(PROGRAM), "attach"],
                          input="p x\ns\nstack\nc\n", capture_output=True, text=True,
                          cwd=ROOT, env=child_env(extra=_tracer(mechanism)), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    stops = [(s["label"], s["index"]) for s in stops_in(out.splitlines())]
    assert stops == [("model [0/0]" + EARLY, 1), ("model [0/0]" + EARLY, 2)], out
    assert _after(segments(out), "p x").output == [EARLY_X]
    assert "value stack, depth" in _after(segments(out), "stack").output[0]
    assert out.endswith(f"{_early_result(plain)}\ndone\n"), out[-500:]
    assert "Traceback" not in proc.stderr + out



def _wait_for(path: Path, pattern: str, proc: subprocess.Popen) -> str:
    deadline = time.time() + TIMEOUT
    while True:
        text = path.read_text() if path.exists() else ""
        if re.search(pattern, text):
            return text
        assert proc.poll() is None and time.time() < deadline, f"never saw {pattern!r}:\n{text}"
        time.sleep(0.1)


def _start(args: list[str], transcript: Path, mechanism: str) -> subprocess.Popen:
    """`python -m dyndbg --out TRANSCRIPT worker_thread.py ARGS`, commands on a pipe."""
    return warm_start.Popen([sys.executable, "-m", "dyndbg", "--out", str(transcript),
                             str(PROGRAM), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=child_env(extra=_tracer(mechanism)), preexec_fn=default_sigint)


def _end(proc: subprocess.Popen) -> None:
    """What a failed test left running (the loop runs until told to stop)."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_ctrl_c_while_stopped_in_a_worker_keeps_the_session(mechanism, tmp_path,
                                                           plain) -> None:
    # SIGINT runs in the main thread, which waits for the worker: the prompt
    # is the worker's, so the Ctrl-C is not the program's KeyboardInterrupt.
    transcript = tmp_path / "t.txt"
    proc = _start([], transcript, mechanism)
    try:
        proc.stdin.write("b model\nc\n")
        proc.stdin.flush()
        _wait_for(transcript, re.escape("> model [0/0]" + EARLY), proc)
        proc.send_signal(signal.SIGINT)
        _wait_for(transcript, "Ctrl-C ignored: dyndbg is stopped in another thread", proc)
        out, err = proc.communicate("p 6*7\nc\nc\n", timeout=TIMEOUT)
    finally:
        _end(proc)
    assert proc.returncode == 0, err[-3000:]
    assert out == plain
    text = transcript.read_text()
    assert "(dyndbg) p 6*7\n42\n" in text
    assert "Traceback" not in err + text and "KeyboardInterrupt" not in err + text


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_ctrl_c_while_a_worker_runs_stops_in_it(mechanism, tmp_path, plain) -> None:
    # The handler runs in the main thread (waiting in join()): the stop is at
    # the next generated instruction to run, the server's.
    transcript = tmp_path / "t.txt"
    proc = _start(["loop"], transcript, mechanism)
    try:
        proc.stdin.write("c\n")          # the first stop: the server's first call
        proc.stdin.flush()
        assert proc.stdout.readline() == "serving\n"   # after that stop: the loop runs
        proc.send_signal(signal.SIGINT)
        text = _wait_for(transcript, r"since Ctrl-C at .*\n> ", proc)
        out, err = proc.communicate("globals()['running'] = False\nc\n", timeout=TIMEOUT)
    finally:
        _end(proc)
    assert proc.returncode == 0, err[-3000:]
    stops = stops_in(text.split("interrupted", 1)[1].splitlines())
    assert stops and stops[0]["label"].endswith(' in thread "server"'), text[-3000:]
    assert out.splitlines() == [_early_result(plain), "done"], out
    assert "Traceback" not in err + transcript.read_text()
