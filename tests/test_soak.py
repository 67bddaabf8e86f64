"""The soak corpus: every program in tests/corpus stepped through every
instruction (stack and locals at each stop, the stack checked against torch's
reader), with output and exit status as in a plain run, recording on; and
its recorded history walked back from the end, against the live stacks."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import ROOT, run_plain
from stepcheck import step_every_instruction

pytestmark = pytest.mark.slow   # every corpus program stepped through, recorded, walked back
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.py"))


@pytest.mark.parametrize("script", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_program(script: Path, tmp_path: Path, record_property) -> None:
    """Stepped with recording on (--record), the output as in a plain run;
    at its end the history walked back to the start: at each recorded point
    the stack the soak saw live."""
    covered = step_every_instruction(script, run_plain(script), tmp_path, walk_back=True)
    assert covered.stops > 0 and covered.walked == len(covered.stacks)
    # Summed over all workers by conftest's terminal summary.
    record_property("soak", {"stops": covered.stops, "loads": covered.loads,
                             "walked": covered.walked})


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30

