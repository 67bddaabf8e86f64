"""Telling dyndbg's own frames (and runpy's) from the program's."""
from __future__ import annotations

import runpy
import types


def is_own_frame(frame: types.FrameType) -> bool:
    module = str(frame.f_globals.get("__name__", ""))
    return module == "dyndbg" or module.startswith("dyndbg.") \
        or frame.f_code.co_filename == runpy.__file__
