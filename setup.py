"""The compiled core (dyndbg/cores.py): four small C extensions, built when the
package is installed. `optional=True`: without a C compiler the install
goes on, and dyndbg runs on the pure-Python core, saying so in one line.
Everything else about the package is in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension("dyndbg.cpython._frames", ["dyndbg/cpython/_frames.c"], optional=True),
    Extension("dyndbg.engine._history", ["dyndbg/engine/_history.c"],
              depends=["dyndbg/engine/_attributes.h", "dyndbg/engine/_keeping.h",
                       "dyndbg/engine/_tokens.h", "dyndbg/engine/_recorder.h",
                       "dyndbg/engine/_track.h", "dyndbg/cpython/_members.h"], optional=True),
    Extension("dyndbg.engine._settrace", ["dyndbg/engine/_settrace.c"],
              depends=["dyndbg/engine/_recording.h", "dyndbg/engine/_attributes.h",
                       "dyndbg/engine/_framebook.h", "dyndbg/engine/_filter.h",
                       "dyndbg/engine/_settrace_frames.h", "dyndbg/engine/_settrace_starts.h"],
              optional=True),
    Extension("dyndbg.engine._monitoring", ["dyndbg/engine/_monitoring.c"],
              depends=["dyndbg/engine/_recording.h", "dyndbg/engine/_attributes.h"],
              optional=True),
])
