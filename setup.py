"""The compiled core (dyndbg/cores.py): four small C extensions, built when the
package is installed. `optional=True`: without a C compiler the install
goes on, and dyndbg runs on the pure-Python core, saying so in one line.
Everything else about the package is in pyproject.toml.

Each extension is several translation units; dyndbg/cpython/_attributes.c is
compiled into each that reads Python state, _fast_paths.c into both tracing
mechanisms. `depends` lists the headers, so that editing one rebuilds."""
from setuptools import Extension, setup

CPYTHON = "dyndbg/cpython"              # what every extension shares
RECORDING = "dyndbg/engine/recording"   # what `record on` keeps
TRACING = "dyndbg/engine/tracing"       # the tracing mechanisms
SHARED_HEADERS = [f"{CPYTHON}/{h}" for h in ("_capi.h", "_members.h", "_attributes.h")]
ATTRIBUTES = f"{CPYTHON}/_attributes.c"


def sources(folder: str, *names: str) -> list[str]:
    return [f"{folder}/{name}" for name in names]


setup(ext_modules=[
    Extension("dyndbg.cpython._frames", sources(CPYTHON, "_frames.c"),
              depends=sources(CPYTHON, "_capi.h", "_frames.h"), optional=True),
    Extension("dyndbg.engine.recording._history",
              [*sources(RECORDING, "_history.c", "_recorder.c", "_record.c", "_track.c",
                        "_keep_value.c", "_keep_all.c", "_token_checks.c"), ATTRIBUTES],
              depends=[*SHARED_HEADERS, f"{CPYTHON}/_frames.h",
                       *sources(RECORDING, "_recorder.h", "_kept_values.h", "_track.h")],
              optional=True),
    Extension("dyndbg.engine.tracing._settrace",
              [*sources(TRACING, "_settrace.c", "_interned.c", "_framebook.c", "_starts.c",
                        "_code_filter.c", "_call_filter.c", "_line_filter.c",
                        "_return_filter.c", "_record_filter.c", "_fast_paths.c"), ATTRIBUTES],
              depends=[*SHARED_HEADERS,
                       *sources(TRACING, "_fast_paths.h", "_filters.h", "_framebook.h",
                                "_interned.h")],
              optional=True),
    Extension("dyndbg.engine.tracing._monitoring",
              [*sources(TRACING, "_monitoring.c", "_fast_paths.c"), ATTRIBUTES],
              depends=[*SHARED_HEADERS, f"{TRACING}/_fast_paths.h"], optional=True),
])
