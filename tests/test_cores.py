"""The compiled core and the pure-Python core: built where a compiler is,
the same records and stacks on the whole corpus, and without the compiled
core one line and a debugger that still works."""
from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, SAMPLES, TIMEOUT, child_env, run_dyndbg
from dyndbg import cores

CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.py"))
NOT_BUILT = "the compiled core was not built"


def test_the_compiled_core_is_built_where_a_compiler_is(tmp_path: Path) -> None:
    """setup.py's extensions are optional: a C error would only show here.
    The compiler is the one the install used: $CC, else Python's own."""
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    source = tmp_path / "probe.c"
    source.write_text("int main(void) { return 0; }\n")
    try:
        works = subprocess.run([*compiler, "-c", str(source), "-o", str(tmp_path / "probe.o")],
                               capture_output=True, timeout=60).returncode == 0
    except OSError:
        works = False
    if not works:
        pytest.skip(f"no working C compiler ({' '.join(compiler)}) here")
    assert cores.built(), cores.note()


# A few processes, each running a share of the corpus (torch is imported once a share).
SHARES = 4


@pytest.mark.skipif(cores.history() is None, reason="no compiled core here")
@pytest.mark.parametrize("share", range(SHARES))
def test_both_cores_record_the_same_history(share: int) -> None:
    """Every instruction the corpus programs run, recorded by both cores in
    one process: the same slots read, the same records kept."""
    programs = [str(p) for p in CORPUS[share::SHARES]]
    proc = warm_start.run([sys.executable, str(ROOT / "tests" / "programs" / "cores_agree.py"),
                           *programs], capture_output=True, text=True, cwd=ROOT, env=child_env(),
                          timeout=TIMEOUT * 4)
    results = [json.loads(line[6:]) for line in proc.stdout.splitlines()
               if line.startswith("CORES ")]
    assert [r.get("program") for r in results] == programs, \
        proc.stdout[-2000:] + proc.stderr[-2000:]
    for result in results:
        assert result["differences"] == [], result
        assert result["records"] > 50 and result["compared"] == result["records"], result
        # Most are recorded by the mechanism's compiled trace function itself.
        assert result["fast"] > result["records"] / 2, result


def _without_compiled_core(tmp_path: Path) -> dict[str, str]:
    """As if no compiler had been there: the extensions cannot be imported."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.modules['dyndbg.cpython._frames'] = None\n"
        "sys.modules['dyndbg.engine.recording._history'] = None\n")
    return {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "DYNDBG_CORE": None}


def test_without_the_compiled_core_one_line_and_the_python_core(tmp_path: Path) -> None:
    env = _without_compiled_core(tmp_path)
    proc = warm_start.run([sys.executable, "-c", "import dyndbg; print(dyndbg.core())"],
                          capture_output=True, text=True, env=child_env(extra=env), timeout=TIMEOUT)
    assert proc.stdout.strip() == "python"
    run = run_dyndbg(SAMPLES / "graph_break.py", ["record on", "s", "s", "stack", "back",
                                                  "stack", "c"], tmp_path, env=env)
    assert run.transcript.count(NOT_BUILT) == 1, run.transcript[:2000]
    assert "value stack" in run.transcript and "[recorded, 1 instruction before now]" in \
        run.transcript
    assert "Traceback" not in run.transcript + run.stderr
    assert run.returncode == 0


def test_with_the_compiled_core_no_line(tmp_path: Path) -> None:
    if cores.core() != "c":
        pytest.skip("no compiled core here")
    run = run_dyndbg(SAMPLES / "graph_break.py", ["c"], tmp_path)
    assert NOT_BUILT not in run.transcript and "compiled core" not in run.transcript


@pytest.mark.skipif(cores.settrace() is None, reason="no compiled settrace core here")
@pytest.mark.parametrize("mode", ["breakpoint", "post-mortem"])
def test_both_cores_start_and_release_frames_alike(mode: str) -> None:
    """settrace after continue, with a breakpoint whose condition holds at one
    call, or with --post-mortem's tracing of calls: the compiled core
    installs the trace, starts and ends the frames by itself (Python sees the
    first frames of each code), and after each call the tracer holds what the
    Python core's does: no frame, no trace, the same starts, hits and stops."""
    def run(core: str) -> list[str]:
        proc = warm_start.run([sys.executable, str(ROOT / "tests" / "programs" / "book_frames.py"),
                               *([mode] if mode == "post-mortem" else [])],
                              capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT,
                              env=child_env(extra={"DYNDBG_CORE": core, "DYNDBG_TRACER": "settrace"}))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        return proc.stdout.splitlines()

    python, compiled = run("python"), run("c")
    assert compiled[:-1] == python[:-1]
    calls = [line for line in python if line.startswith("call ")]
    assert calls == [f"call {n}: active 0, frames 0, traced False, starts {2 * n}, "
                     f"x {[2.0 ** (n + 2) - 1] * 3}" for n in range(1, 9)], python
    hits, stops = ("[16]", "['9', '10'] ['105', '205']") if mode == "breakpoint" else \
        ("[]", "[] []")
    assert python[-3:-1] == [f"hits {hits} frames left 0 0 False", f"stops {stops}"], python
    # The Python core starts all 16 frames in Python; the compiled one the first few.
    assert python[-1] == "IN PYTHON {'starts': 16, 'code starts': 16}", python[-1]
    in_c = ast.literal_eval(compiled[-1].removeprefix("IN PYTHON "))
    assert in_c["starts"] <= 4 and in_c["code starts"] <= 4, compiled[-1]
