"""A program run in this process under an attached engine, as the drivers
here run the corpus (cores_agree.py, guards_hold.py): as its own __main__,
its output swallowed, its end taken however it comes (an exception,
sys.exit), then the engine detached."""
import io
import runpy
import sys


def run_attached(program: str, engine) -> None:  # noqa: ANN001 - dyndbg's Engine
    sys.argv = [program]
    out = sys.stdout
    try:
        sys.stdout = io.StringIO()      # the programs' own output is not compared here
        runpy.run_path(program, run_name="__main__")
    except BaseException:  # noqa: BLE001 - the program's own end
        pass
    finally:
        sys.stdout = out
        engine.detach()
