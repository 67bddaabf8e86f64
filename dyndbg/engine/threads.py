"""The program's threads: generated code runs in whichever thread calls it.

Tracing mechanisms deliver events from every thread; the engine and its one
prompt serve one thread at a time. A thread that reaches a traced event
while dyndbg is stopped in another waits at ENGINE_LOCK until that stop
resumes (gdb's all-stop, for the threads that run traced generated code), so
two stops never share the prompt and the engine's state changes under one
thread only. Ordinary code in the other threads runs on.
"""
from __future__ import annotations

import threading

# Re-entrant: a stop's prompt may run generated code in its own thread (`p f(x)`).
ENGINE_LOCK = threading.RLock()


def engine_busy_elsewhere() -> bool:
    """Another thread holds the engine (it is stopped there, or evaluating a
    breakpoint condition): asked by the main thread's SIGINT handler."""
    if ENGINE_LOCK.acquire(blocking=False):
        ENGINE_LOCK.release()
        return False
    return True


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def thread_name() -> str | None:
    """The current thread's name, None in the main thread (a stop line names
    any other thread, as gdb does)."""
    thread = threading.current_thread()
    return None if thread is threading.main_thread() else thread.name
