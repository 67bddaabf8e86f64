"""What the settrace tracer holds after each call (tests/test_cores.py): a
loop of a compiled function with a graph break, under a breakpoint whose
condition is true at one call only. Prints the same on both cores."""
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
engine = attach(out, [f"b book_frames.py:{LINE}, calls == 5", "continue",
                      "p calls + 100", "continue", "p calls + 200", "continue"], read_rc=False)
started_in_python = 0
start = engine.on_frame_start


def counted(frame):
    global started_in_python
    started_in_python += 1
    start(frame)


engine.on_frame_start = counted    # the tracer calls it through the engine
tracer = engine.tracer
for calls in range(1, 9):
    x = step(x)
    print(f"call {calls}: active {len(tracer.active)}, frames {tracer._thread.frames}, "
          f"traced {sys.gettrace() is not None}, starts {tracer.events['start']}, "
          f"x {x.tolist()}")
engine.detach()
print("hits", [bp.hits for bp in engine.breakpoints if bp.number == 1])
print("stops", [line.rsplit(" ", 1)[1] for line in out.getvalue().splitlines()
                if line.startswith("Breakpoint 1 at") and ", hit " in line],
      [line for line in out.getvalue().splitlines() if line in ("105", "205")])
print("STARTED IN PYTHON", started_in_python)
