"""A compiled model run from worker threads (tests/test_threads.py).

`early-worker` is started before any compiled code runs and waits. The main
thread runs the model once (it compiles there: the first stop), then `outer`,
whose graph break hands over to the early worker and waits for it: the worker
runs the model while a generated frame of the main thread is live. Then
`late-worker` is started and runs the model too. Each worker has its own
input (early: all 2, late: all 3), so the values tell whose stop it is.

`worker_thread.py attach`: the main thread runs no compiled code; the early
worker, started before dyndbg is, runs the model inside `with dyndbg.debug()`.

`worker_thread.py loop`: only `server` runs compiled code, calling the model
until the global `running` is false; the main thread waits for it.
"""
import sys
import threading

import torch


@torch.compile(backend="eager")
def model(x):
    a = x.sin() + 1                       # graph 1
    torch._dynamo.graph_break()
    return (a * 2 + x.cos()).sum()        # graph 2, in a resume function


@torch._dynamo.disable
def hand_over(worker, go):
    go.set()
    worker.join()


@torch.compile(backend="eager")
def outer(x, worker, go):
    y = x + 100
    hand_over(worker, go)                 # graph break: the worker runs the model meanwhile
    return y.sum()


def serve(x, go):
    go.wait()
    print(f"{threading.current_thread().name}: {round(model(x).item(), 4)}", flush=True)


def start(name, value):
    go = threading.Event()
    worker = threading.Thread(target=serve, args=(torch.full((4,), value), go), name=name)
    worker.start()
    return worker, go


def serve_until_stopped(x):
    model(x)
    print("serving", flush=True)
    while running:
        model(x)


early, early_go = start("early-worker", 2.0)
if sys.argv[1:] == ["attach"]:
    import dyndbg
    with dyndbg.debug():
        early_go.set()
        early.join()
elif sys.argv[1:] == ["loop"]:
    running = True
    server = threading.Thread(target=serve_until_stopped, args=(torch.ones(4),), name="server")
    server.start()
    server.join()
    early_go.set()
    early.join()
else:
    x = torch.arange(4, dtype=torch.float32)
    print("main:", round(model(x).item(), 4), flush=True)
    print("outer:", outer(x, early, early_go).item(), flush=True)
    late, late_go = start("late-worker", 3.0)
    late_go.set()
    late.join()
print("done", flush=True)
