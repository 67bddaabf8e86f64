"""Every program of tests/corpus in one process, each as `__main__` (runpy),
and torch's own account of the resume functions dynamo made and of each
compile's backend: at exit, on stderr, one line a `__resume_at_*` global
dynamo installed, with the name of the code object it installed it for
(`OutputGraph.install_resume_function_global`'s arguments) and whether that
code has free variables (dynamo then installs a factory that makes the
function, not the function); one line a compile that called its backend,
with the name torch's compile log gives it ("calling compiler function
NAME", at INFO on torch._dynamo.output_graph, taken here and not shown)."""
import atexit
import logging
import runpy
import sys
from pathlib import Path

from torch._guards import CompileContext

from torch._dynamo.output_graph import OutputGraph

installed: list[tuple[str, str, bool]] = []
install = OutputGraph.install_resume_function_global


def recorded(self, name, code, f_globals):  # type: ignore[no-untyped-def]
    installed.append((name, code.co_name, bool(code.co_freevars)))
    return install(self, name, code, f_globals)


OutputGraph.install_resume_function_global = recorded  # type: ignore[method-assign]
atexit.register(lambda: [print("resume global", *row, file=sys.stderr) for row in installed])

backends: list[tuple[str, str]] = []
CALLING = "calling compiler function "


class CompileLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if CALLING in text:
            backends.append((str(CompileContext.current_compile_id()),
                             text.split(CALLING, 1)[1]))


log = logging.getLogger("torch._dynamo.output_graph")
log.addHandler(CompileLog())
log.setLevel(logging.INFO)
log.propagate = False            # torch's own handlers would print it
atexit.register(lambda: [print("backend", *row, file=sys.stderr) for row in backends])

for path in sorted((Path(__file__).parent.parent / "corpus").glob("*.py")):
    try:
        runpy.run_path(str(path), run_name="__main__")
    except BaseException as error:        # sys.exit(0), and the uncaught RuntimeError
        print(f"{path.name} ended: {type(error).__name__}")
