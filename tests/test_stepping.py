"""Step through every instruction of every sample (see stepcheck.py)."""
from __future__ import annotations

import pytest

from harness import SAMPLES, plain
from stepcheck import step_every_instruction

# These start a debugger by themselves (dyndbg's, or torch's own at its marker):
# run plainly they do not give the program-only output this test compares with.
STARTS_A_DEBUGGER = {"breakpoint_call.py", "torch_marker.py"}
SAMPLE_NAMES = sorted(p.name for p in SAMPLES.glob("*.py") if p.name not in STARTS_A_DEBUGGER)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_step_every_instruction(name: str, tmp_path) -> None:
    covered = step_every_instruction(SAMPLES / name, plain(name), tmp_path)
    assert covered.stops > 30
    assert covered.loads >= 3
    print(f"{name}: {covered.stops} stops, {covered.loads} loads checked, "
          f"frames {sorted(covered.frames)}")
