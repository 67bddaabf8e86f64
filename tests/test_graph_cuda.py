"""Into an inductor graph on a CUDA GPU (issue 50): `s` at the call of a
graph inductor compiled for CUDA stops before each step of its output code,
triton kernels included, as it does before C++ kernels on the CPU; a graph
that runs as a CUDA graph replay (mode="reduce-overhead") says so in one
line and is stepped over. Skipped where torch sees no CUDA device.

Checked against torch's account, printed by the program itself after its
calls (tests/programs/into_cuda.py): the kernels the output code it loaded
defines; and against a plain run: the same result.
"""
from __future__ import annotations

import re

import pytest

from harness import ROOT, run_dyndbg, run_plain
from transcript import no_traceback

PROGRAM = ROOT / "tests" / "programs" / "into_cuda.py"
HEAD = re.compile(r"^\[graph 1 inductor forward\] step (\d+)/(\d+) (\S+?): (\w+) kernel$")
RETURN = re.compile(r"^\[graph 1 inductor forward\] step (\d+)/(\d+) return: the graph returns$")


def _cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no torch CUDA at all: skipped
        return False


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not _cuda(), reason="no CUDA device")]


def _account(stdout: str) -> tuple[str, set[str]]:
    lines = stdout.splitlines()
    result = next(t for t in lines if t.startswith("result "))
    kernels = {t.split()[1] for t in lines if t.startswith("kernel ")}
    return result, kernels


def test_s_steps_the_triton_kernels_torch_loaded(tmp_path) -> None:
    plain = run_plain(PROGRAM, "cuda", "default")
    assert plain.returncode == 0, plain.stderr[-2000:]
    commands = ["b __compiled_fn_*", "c"] + ["s"] * 40 + ["locals", "c", "clear 1", "c"]
    run = run_dyndbg([PROGRAM, "cuda", "default"], commands, tmp_path)
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    result, kernels = _account(run.stdout)
    assert (result, kernels) == _account(plain.stdout)
    lines = run.transcript.splitlines()
    at_return = next(i for i, t in enumerate(lines) if RETURN.match(t))    # the first call's
    stopped = [HEAD.match(t) for t in lines[:at_return] if HEAD.match(t)]
    assert any(m[4] == "triton" for m in stopped), run.transcript[-4000:]
    named = {m[3] for m in stopped if m[4] in ("triton", "cpp")}
    assert named == {k for k in kernels if k.startswith(("triton_", "cpp_"))}, (named, kernels)
    returned = next(t for t in lines[at_return:] if t.startswith("  in  buf"))
    value = float(re.search(r"cuda:0 \[(-?[\d.e+-]+)\]", returned)[1])
    assert value == pytest.approx(float(result.split()[1]), rel=1e-3), (returned, result)


def test_a_cuda_graph_replay_says_so_and_is_stepped_over(tmp_path) -> None:
    plain = run_plain(PROGRAM, "cuda", "reduce-overhead")
    assert plain.returncode == 0, plain.stderr[-2000:]
    run = run_dyndbg([PROGRAM, "cuda", "reduce-overhead"],
                     ["b __compiled_fn_*", "c", "s", "stack", "clear 1", "c"], tmp_path)
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _account(run.stdout)[0] == _account(plain.stdout)[0]
    said = [t for t in run.transcript.splitlines() if "runs as a CUDA graph replay" in t]
    assert len(said) == 1 and "no kernels to step between" in said[0], run.transcript[-3000:]
    assert "(dyndbg graph)" not in run.transcript
