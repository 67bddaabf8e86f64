"""What the settrace tracer holds after each call (tests/test_cores.py): a
loop of a compiled function with a graph break, under a breakpoint whose
condition is true at one call only, or (argument `post-mortem`) with
--post-mortem's tracing of the calls. Prints the same on both cores, but
for how many starts reached Python."""
import io
import sys

import torch

from dyndbg.attach import attach

LINE = next(i for i, text in enumerate(open(__file__), 1)
            if text.strip().startswith("torch._dynamo.graph_break"))
calls = 0


@torch.compile(backend="eager")
def step(x):
    y = x * 2
    torch._dynamo.graph_break()     # the breakpoint: in step's code and in its resume function
    return y + 1


x = step(torch.ones(3))             # compiled before dyndbg attaches
out = io.StringIO()
post_mortem = sys.argv[1:] == ["post-mortem"]
engine = attach(out, ["continue"] if post_mortem else [
    f"b book_frames.py:{LINE}, calls == 5", "continue",
    "p calls + 100", "continue", "p calls + 200", "continue"], read_rc=False)
engine.keep_failed_calls = post_mortem      # as `python -m dyndbg --post-mortem` sets it
tracer = engine.tracer
in_python = {"starts": 0, "code starts": 0}
start, code_starting = engine.on_frame_start, tracer.code_starting


def counted_start(frame):
    in_python["starts"] += 1
    start(frame)


def counted_code_start(code):
    in_python["code starts"] += 1
    code_starting(code)


# Called through these attributes (the engine's, by the tracer; the tracer's, by torch's callback).
engine.on_frame_start, tracer.code_starting = counted_start, counted_code_start
for calls in range(1, 9):
    x = step(x)
    print(f"call {calls}: active {len(tracer.active)}, frames {tracer._thread.frames}, "
          f"traced {sys.gettrace() is not None}, starts {tracer.events['start']}, "
          f"x {x.tolist()}")
engine.detach()
print("hits", [bp.hits for bp in engine.breakpoints if bp.number == 1],
      "frames left", len(tracer.active), tracer._thread.frames, sys.gettrace() is not None)
print("stops", [line.rsplit(" ", 1)[1] for line in out.getvalue().splitlines()
                if line.startswith("Breakpoint 1 at") and ", hit " in line],
      [line for line in out.getvalue().splitlines() if line in ("105", "205")])
print("IN PYTHON", in_python)
