"""Run each program named on the command line in this one process, each as
`__main__` (runpy), in order; a program's exit or uncaught exception is one
line, and the next runs. The suite's invariant tests use it to cover many
programs with one interpreter start."""
import runpy
import sys

for path in sys.argv[1:]:
    sys.argv = [path]
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException as error:        # sys.exit(0), an uncaught exception
        print(f"{path.rsplit('/', 1)[-1]} ended: {type(error).__name__}", flush=True)
