"""Fault injection for the tests: DYNDBG_FAULT=<place> makes dyndbg raise an
internal error at that place (opcode, render, callback, hook; graph: a line
event of a compiled graph stepped into), to prove that an error inside
dyndbg detaches it and leaves the program running."""
from __future__ import annotations

import os

_PLACE = os.environ.get("DYNDBG_FAULT", "")
FAULTS_ON = bool(_PLACE)   # hot paths test this constant before calling maybe_fault


def maybe_fault(place: str) -> None:
    if _PLACE == place:
        raise RuntimeError(f"injected fault at {place} (DYNDBG_FAULT)")
