"""Bounding the time of user code that dyndbg runs for display (a repr, a
breakpoint condition, a display expression), where that is free to do."""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class TimeLimitExceeded(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with SIGALRM after `seconds`, only where that is
    free: the main thread, and neither the program's own alarm nor a SIGALRM
    handler in use. Elsewhere the block runs unbounded."""
    usable = (threading.current_thread() is threading.main_thread()
              and hasattr(signal, "setitimer")
              and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
              and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise TimeLimitExceeded(f"took over {seconds:g} s")

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
