"""Input and values seen on real programs (pytorch's own dynamo tests run
under dyndbg) that must each give one line."""
from __future__ import annotations

import re
from pathlib import Path

from harness import ROOT, run_dyndbg, run_plain
from transcript import no_traceback

PROGRAMS = ROOT / "tests" / "programs"


def test_constants_in_location_lines_and_listings_are_summarised(tmp_path: Path) -> None:
    # The module's globals dict as a LOAD_CONST argument was once printed
    # uncut: hundreds of kilobytes for one stop.
    script = PROGRAMS / "nested_rebuilt.py"
    listing = run_dyndbg(script, ["ll", "c"], tmp_path).transcript
    index = re.search(r"(\d+) @\d+ +LOAD_CONST +\{'__name__'", listing).group(1)
    run = run_dyndbg(script, ["ll", f"until {index}", "c"], tmp_path)
    no_traceback(run)
    assert run.stdout == run_plain(script).stdout
    lines = run.transcript.splitlines()
    constant = [line for line in lines if "LOAD_CONST" in line and "'__name__'" in line]
    assert len(constant) == 2, run.transcript     # in the listing, and at the stop
    assert all("chars)" in line for line in constant), constant
    assert max(len(line) for line in lines) < 250, max(lines, key=len)
