"""Which core runs the per-instruction work: the compiled one (C extensions
built when dyndbg is installed: cpython/_frames.c reads a frame's slots,
engine/recording/_history.c is the recording loop of `record on`, engine/tracing/_settrace.c
answers the sys.settrace events that need nothing, engine/tracing/_monitoring.c
records at sys.monitoring's INSTRUCTION events) or the pure-Python one,
which is complete on its own and the fallback.

DYNDBG_CORE=python or =c chooses; unset, the compiled core is used where it
was built. Without it dyndbg says so in one line (`note()`) and runs on.
"""
from __future__ import annotations

import enum
import importlib
import os
from types import ModuleType
from typing import NamedTuple

CORE_VARIABLE = "DYNDBG_CORE"


class Core(enum.Enum):
    C = "c"
    PYTHON = "python"


def _compiled(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


class _Chosen(NamedTuple):
    core: Core
    frames: ModuleType | None       # cpython/_frames.c, where built
    history: ModuleType | None      # engine/recording/_history.c, where built
    settrace: ModuleType | None     # engine/tracing/_settrace.c, where built
    monitoring: ModuleType | None   # engine/tracing/_monitoring.c, where built
    why: str                        # the line for the user ('' if none)


def _choose() -> _Chosen:
    # Imported here, not at this module's import: cpython/ imports this
    # module while its own package is still being initialized.
    frames = _compiled("dyndbg.cpython._frames")
    history = _compiled("dyndbg.engine.recording._history") if frames is not None else None
    settrace = _compiled("dyndbg.engine.tracing._settrace")
    monitoring = _compiled("dyndbg.engine.tracing._monitoring")
    built = history is not None and settrace is not None and monitoring is not None
    wanted = os.environ.get(CORE_VARIABLE, "")
    if wanted == Core.PYTHON.value:
        return _Chosen(Core.PYTHON, frames, history, settrace, monitoring, "")
    if wanted not in ("", Core.C.value):
        fallback = Core.C if built else Core.PYTHON
        return _Chosen(fallback, frames, history, settrace, monitoring,
                       f"dyndbg: {CORE_VARIABLE}={wanted!r} is not 'c' or 'python'; "
                       f"using the {fallback.value} core")
    if built:
        return _Chosen(Core.C, frames, history, settrace, monitoring, "")
    return _Chosen(Core.PYTHON, frames, history, settrace, monitoring,
                   "dyndbg: the compiled core was not built (no C compiler when dyndbg was "
                   "installed?); running on the pure-Python core, slower when stepping "
                   "and recording")


_chosen: _Chosen | None = None


def _state() -> _Chosen:
    global _chosen
    if _chosen is None:
        _chosen = _choose()
    return _chosen


def core() -> str:
    """'c' or 'python': the core this process runs on."""
    return _state().core.value


def built() -> bool:
    """Whether the compiled core was built (whichever core was chosen)."""
    state = _state()
    return all(part is not None for part in
               (state.frames, state.history, state.settrace, state.monitoring))


def note() -> str:
    """One line for the user where the core is not the one asked for, else ''."""
    return _state().why


def frames() -> ModuleType | None:
    """The compiled slot reader, or None on the Python core."""
    state = _state()
    return state.frames if state.core is Core.C else None


def history() -> ModuleType | None:
    """The compiled recording loop, or None on the Python core."""
    state = _state()
    return state.history if state.core is Core.C else None


def settrace() -> ModuleType | None:
    """The compiled trace functions for sys.settrace, or None on the Python core."""
    state = _state()
    return state.settrace if state.core is Core.C else None


def monitoring() -> ModuleType | None:
    """The compiled INSTRUCTION callback for sys.monitoring, or None on the Python core."""
    state = _state()
    return state.monitoring if state.core is Core.C else None


def refuse(why: str) -> None:
    """A compiled part failed its check (a frame layout it reads wrong): the
    whole process goes to the Python core."""
    global _chosen
    _chosen = _state()._replace(
        core=Core.PYTHON,
        why=f"dyndbg: the compiled core failed its start-up check ({why}); "
            "running on the pure-Python core")
