"""Distributed runs: torchrun with two ranks (gloo on CPU), `--rank R` debugging
one rank while the other runs as plain python, and every rank debugged with
its output prefixed and only rank 0 reading stdin. Plus the rank logic in one
process, with RANK set by hand."""
from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, SAMPLES, child_env, plain, run_dyndbg
from transcript import PROMPT, no_traceback, segments, stops_in

ALLREDUCE = SAMPLES / "distributed_allreduce.py"
TORCHRUN_TIMEOUT = 240
RESULTS = [("0", "36"), ("1", "36")]        # sum over ranks of (2 * (arange(4) + rank) + 1) - 1
REDUCED = "tensor([ 4.,  8., 12., 16.])"    # the all_reduce's sum, on every rank
# the resume function after the graph break at the all_reduce call
_BREAK_LINE = next(number for number, line in enumerate(ALLREDUCE.read_text().splitlines(), 1)
                   if "y = all_reduce(y)" in line)
LABELS = ["step [0/0]", f"torch_dynamo_resume_in_step_at_{_BREAK_LINE} [1/0]"]
RANK_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def torchrun(options: list[str], stdin: list[str], transcript: Path) -> subprocess.CompletedProcess:
    """torchrun --standalone (rendezvous on a free local port) with 2 ranks, each
    `python -m dyndbg --out TRANSCRIPT OPTIONS samples/distributed_allreduce.py`."""
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            "-m", "dyndbg", "--out", str(transcript), *options, str(ALLREDUCE)]
    env = child_env(extra={name: None for name in RANK_ENV} | {"OMP_NUM_THREADS": "1"})
    proc = warm_start.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        out, err = proc.communicate("".join(line + "\n" for line in stdin),
                                    timeout=TORCHRUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.terminate()   # torchrun stops its workers on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        text = transcript.read_text() if transcript.exists() else ""
        pytest.fail(f"torchrun hung; transcript so far:\n{text[-3000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _results(stdout: str) -> list[tuple[str, str]]:
    # the ranks' prints may interleave: find them anywhere
    return sorted(re.findall(r"rank (\d+): result (\S+)", stdout))


def test_rank_option_debugs_one_rank(tmp_path: Path) -> None:
    transcript = tmp_path / "rank0.txt"
    commands = ["b resume", "c", "p ___stack0", "where", "c"]
    proc = torchrun(["--rank", "0"], commands, transcript)
    text = transcript.read_text()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + text, proc.stderr[-3000:]
    assert _results(proc.stdout) == RESULTS, proc.stdout
    # rank 0's session, and only its: one greeting, no prefixes, every command read
    assert text.count("dyndbg: stopped in dynamo-generated code") == 1, text
    assert "[rank" not in text, text
    assert [s.command for s in segments(text)] == commands, text
    stops = stops_in(text.splitlines())
    assert [stop["label"] for stop in stops] == LABELS, text
    # at the resume function, the value all_reduce returned: rank 1 took part, undebugged
    assert [s.output for s in segments(text) if s.command == "p ___stack0"] == [[REDUCED]], text
    # the program's own output only on stdout: nothing of dyndbg from rank 1
    assert "dyndbg" not in proc.stdout and PROMPT not in proc.stdout, proc.stdout


def test_every_rank_debugs_with_prefixes_and_only_rank_0_reads(tmp_path: Path) -> None:
    transcript = tmp_path / "all.txt"
    options = ["-c", "p 'dash c'", "-c", "b resume", "-c", "c"]
    stdin = ["p 'from stdin'", "p ___stack0", "c"]
    proc = torchrun(options, stdin, transcript)
    text = transcript.read_text()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + text, proc.stderr[-3000:]
    assert _results(proc.stdout) == RESULTS, proc.stdout
    by_rank: dict[str, list[str]] = {"0": [], "1": []}
    for line in text.splitlines():
        match = re.match(r"^\[rank ([01])\] (.*)$", line)
        assert match, f"a line without a rank prefix: {line!r}\n{text}"
        by_rank[match[1]].append(match[2])
    rank0, rank1 = ("\n".join(by_rank[r]) for r in "01")
    # rank 0: its -c commands, then all of stdin, in order (rank 1 took none of it)
    assert [s.command for s in segments(rank0)] == ["p 'dash c'", "b resume", "c", *stdin], rank0
    assert [s.output for s in segments(rank0) if s.command == "p ___stack0"] == [[REDUCED]]
    # rank 1: its -c commands, then the end of input at once, without reading stdin
    assert [s.command for s in segments(rank1)] == ["p 'dash c'", "b resume", "c", ""], rank1
    assert "from stdin" not in rank1
    assert "dyndbg: only rank 0 reads commands (stdin); this rank does not" in by_rank["1"]
    assert "dyndbg: end of input, detaching; the program runs to completion" in by_rank["1"]
    for lines in (by_rank["0"], by_rank["1"]):
        labels = [stop["label"] for stop in stops_in(lines)]
        assert labels == LABELS, lines


# -- the rank logic in one process (RANK set by hand) ------------------------------------

def test_rank_option_without_rank_in_environment_debugs_this_process(tmp_path) -> None:
    run = run_dyndbg(SAMPLES / "exit_code.py", ["c"], tmp_path=tmp_path, options=["--rank", "1"],
                     env={"RANK": None})
    expected = plain("exit_code.py")
    assert run.stderr.splitlines() == [
        "dyndbg: --rank 1: RANK is not set (not started by torchrun?); debugging this process"]
    assert "> f [0/0]" in run.transcript and "[rank" not in run.transcript, run.transcript
    assert (run.stdout, run.returncode) == (expected.stdout, expected.returncode)


def test_other_rank_runs_without_the_debugger(tmp_path) -> None:
    run = run_dyndbg(SAMPLES / "exit_code.py", ["c"], tmp_path=tmp_path, options=["--rank", "0"],
                     env={"RANK": "1"})
    expected = plain("exit_code.py")
    assert (run.stdout, run.stderr, run.returncode) == (expected.stdout, expected.stderr, 3)
    assert run.transcript == ""   # --out not even created


def test_rank_other_than_0_reads_no_stdin(tmp_path) -> None:
    run = run_dyndbg(SAMPLES / "exit_code.py", ["p 'from stdin'", "c"], tmp_path=tmp_path,
                     options=["-c", "p 'dash c'"], env={"RANK": "1"})
    no_traceback(run)
    lines = run.transcript.splitlines()
    assert lines and all(line.startswith("[rank 1] ") for line in lines), run.transcript
    text = "\n".join(line[len("[rank 1] "):] for line in lines)
    assert [s.command for s in segments(text)] == ["p 'dash c'", ""], text
    assert "from stdin" not in text
    assert "dyndbg: end of input, detaching; the program runs to completion" in text
    expected = plain("exit_code.py")
    assert (run.stdout, run.returncode) == (expected.stdout, expected.returncode)


def test_rank_writer_prefixes_every_line_in_one_write() -> None:
    from dyndbg.distributed import RankWriter

    class Recorder(io.StringIO):
        calls: list[str] = []

        def write(self, text: str) -> int:
            self.calls.append(text)
            return super().write(text)

    target = Recorder()
    writer = RankWriter(target, 3)
    for chunk in ["one\n", "\n", "tw", "o\nthree\nfo", "ur\n"]:
        writer.write(chunk)
    assert target.getvalue() == ("[rank 3] one\n[rank 3] \n[rank 3] two\n[rank 3] three\n"
                                 "[rank 3] four\n")
    assert target.calls[3] == "o\n[rank 3] three\n[rank 3] fo"   # one call per write
    assert not RankWriter(target, 1, interactive=False).isatty()
