"""Put first on PYTHONPATH by the soak test (tests/stepcheck.py), for its
recorded runs only: when the program ends, if dyndbg is recording, one more
compiled call stops in generated code, and the recorded history is walked
back from there to its start with `stack` at each point (dyndbg.debug's
commands run at that stop)."""
import atexit
import sys

import torch  # first: atexit runs its handlers last-in first-out, so the walk runs before torch's


def _walk_back_at_exit() -> None:
    attach = sys.modules.get("dyndbg.attach")
    engine = attach.current() if attach is not None else None
    if engine is None or not engine.recording:
        return
    import dyndbg

    @torch.compile(backend="eager")
    def soak_end(x):
        return x + 1

    # Each instruction recorded so far, newest first; soak_end's first is "now".
    commands = ["stack"] + ["back", "stack"] * len(engine.history) + ["c"]
    with dyndbg.debug(commands=commands):
        soak_end(torch.zeros(1))


atexit.register(_walk_back_at_exit)
