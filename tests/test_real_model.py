"""A real model (issue 23): transformers' GPT-2 with random weights from a
tiny config, compiled with a graph break inside its forward, stepped through
every generated instruction with the stack checked against torch's reader at
each, with recording on, and its history walked back from the end against the
stacks seen live (tests/stepcheck.py, as the soak does for the corpus)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import ROOT, run_plain
from stepcheck import step_every_instruction

pytestmark = pytest.mark.slow   # transformers imported, every instruction stepped

GPT2 = ROOT / "tests" / "programs" / "tiny_gpt2.py"


def test_gpt2_with_a_graph_break_stepped_and_walked_back(tmp_path: Path,
                                                         record_property) -> None:
    plain = run_plain(GPT2)
    assert plain.returncode == 0, plain.stderr[-2000:]
    covered = step_every_instruction(GPT2, plain, tmp_path, walk_back=True)
    assert covered.walked == len(covered.stacks) > 100
    # Both sides of the break: the model's frames and a resume function.
    assert any(label.startswith("torch_dynamo_resume_in_") for label in covered.frames), \
        covered.frames
    record_property("soak", {"stops": covered.stops, "loads": covered.loads,
                             "walked": covered.walked})
