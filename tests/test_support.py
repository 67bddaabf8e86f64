"""On a torch outside the tested range, `python -m dyndbg` says so in one line
at start and runs the program as before (the range itself: test_support_unit)."""
from __future__ import annotations

from pathlib import Path

from harness import ROOT, SAMPLES, run_dyndbg, run_plain
from dyndbg.support import tested_range as range_text  # not collected as a test


def test_untested_torch_one_line_then_the_sample_runs(tmp_path: Path) -> None:
    # The installed torch reports a release after the tested range.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import torch\ntorch.__version__ = '2.99.0'\n")
    sample = SAMPLES / "graph_break.py"
    run = run_dyndbg(sample, ["stack", "c"], tmp_path,
                     env={"PYTHONPATH": f"{ROOT}:{site}"})
    first = run.transcript.splitlines()[0]
    assert first.startswith("dyndbg: torch 2.99.0 outside the tested range"), run.transcript
    assert range_text() in first
    assert run.transcript.count("outside the tested range") == 1
    assert "value stack, depth 0" in run.transcript      # the features still work
    assert (run.stdout, run.returncode) == (run_plain(sample).stdout, 0)


def test_tested_torch_says_nothing(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLES / "graph_break.py", ["c"], tmp_path)
    assert "tested range" not in run.transcript + run.stderr
    assert run.transcript.startswith("dyndbg: stopped in dynamo-generated code")
