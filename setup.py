"""The compiled core (dyndbg/cores.py): four small C extensions, built when the
package is installed. `optional=True`: without a C compiler the install
goes on, and dyndbg runs on the pure-Python core, saying so in one line.
Everything else about the package is in pyproject.toml."""
from setuptools import Extension, setup

RECORDING = "dyndbg/engine/recording"   # what `record on` keeps
TRACING = "dyndbg/engine/tracing"       # the tracing mechanisms
SHARED = ["dyndbg/cpython/_members.h", "dyndbg/cpython/_attributes.h"]   # every extension's

setup(ext_modules=[
    Extension("dyndbg.cpython._frames", ["dyndbg/cpython/_frames.c"], optional=True),
    Extension("dyndbg.engine.recording._history", [f"{RECORDING}/_history.c"],
              depends=[*SHARED, *(f"{RECORDING}/{h}" for h in
                                  ("_keeping.h", "_tokens.h", "_recorder.h", "_track.h"))],
              optional=True),
    Extension("dyndbg.engine.tracing._settrace", [f"{TRACING}/_settrace.c"],
              depends=[*SHARED, *(f"{TRACING}/{h}" for h in
                                  ("_fast_paths.h", "_framebook.h", "_filter.h",
                                   "_settrace_frames.h", "_settrace_starts.h"))],
              optional=True),
    Extension("dyndbg.engine.tracing._monitoring", [f"{TRACING}/_monitoring.c"],
              depends=[*SHARED, f"{TRACING}/_fast_paths.h"], optional=True),
])
