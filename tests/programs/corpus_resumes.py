"""Every program of tests/corpus in one process, each as `__main__` (runpy),
and torch's own account of the resume functions dynamo made: at exit, on
stderr, one line a `__resume_at_*` global dynamo installed, with the name of
the code object it installed it for (`OutputGraph.install_resume_function_global`'s
arguments) and whether that code has free variables (dynamo then installs a
factory that makes the function, not the function)."""
import atexit
import runpy
import sys
from pathlib import Path

from torch._dynamo.output_graph import OutputGraph

installed: list[tuple[str, str, bool]] = []
install = OutputGraph.install_resume_function_global


def recorded(self, name, code, f_globals):  # type: ignore[no-untyped-def]
    installed.append((name, code.co_name, bool(code.co_freevars)))
    return install(self, name, code, f_globals)


OutputGraph.install_resume_function_global = recorded  # type: ignore[method-assign]
atexit.register(lambda: [print("resume global", *row, file=sys.stderr) for row in installed])

for path in sorted((Path(__file__).parent.parent / "corpus").glob("*.py")):
    try:
        runpy.run_path(str(path), run_name="__main__")
    except BaseException as error:        # sys.exit(0), and the uncaught RuntimeError
        print(f"{path.name} ended: {type(error).__name__}")
