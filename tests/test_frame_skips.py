"""Frames dynamo skips (issue 48, item 3): a graph break dynamo cannot resume
from (one in a loop) makes it run the function eagerly from then on. One
line says so, with torch's reason and line; `why` in the generated code that
called it says it too, and `catch graph-break` stops at the next generated
code to run. Checked against torch's own account of the same program, its
compilation metrics (each compile's failure, its reason and the user's line),
run here in-process on whichever torch the suite runs on."""
from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path
from typing import Any

import pytest

from harness import ROOT, run_dyndbg, run_plain
from transcript import no_traceback

PROGRAM = ROOT / "tests" / "programs" / "skipped_frames.py"
STEP_BACK = ROOT / "samples" / "step_back.py"
GB_LINK = re.compile(r"/gb/gb(\d+)\.html")
SKIP_LINE = re.compile(r"^dyndbg: dynamo skipped '(\w+)' \((.+):(\d+)\) \[(\d+/\d+)\] at a graph "
                       r"break it cannot resume from, so it runs eagerly from now on(.*?); "
                       r"torch's reason: (.*)$", re.M)


def failed_compiles(program: Path) -> list[Any]:
    """Torch's CompilationMetrics of each compile that failed when the program's
    calls run: the function, its compile id, the reason and the user's line."""
    import torch
    import torch._dynamo
    from torch._dynamo import utils
    torch._dynamo.reset()
    utils.clear_compilation_metrics()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(ZeroDivisionError):
        module = runpy.run_path(str(program))      # samples/step_back.py: its calls, failing
        if "main" in module:
            module["main"]()
    failed = [m for m in utils.get_compilation_metrics() if m.fail_type]
    torch._dynamo.reset()
    return failed


def expected_cause(metrics: Any, final: str) -> str:
    """The reason dyndbg should give: the break that made dynamo skip (`final`, one of
    the graph-break types in torch's text), then the first, with the user's line."""
    text = metrics.fail_reason
    lines = [line.strip() for line in text.splitlines()]
    links = [f"GB{n}" for n in GB_LINK.findall(text)]
    source = Path(metrics.fail_user_frame_filename).read_text().splitlines()[
        metrics.fail_user_frame_lineno - 1].strip()
    first = (f"{lines[0]} ({links[0]}) at {Path(metrics.fail_user_frame_filename).name}:"
             f"{metrics.fail_user_frame_lineno}: {source}")
    assert final in lines[1:], (final, text)
    return f"{final} ({links[-1]}); the first break: {first}"


@pytest.fixture(scope="module")
def torch_account() -> list[Any]:
    return failed_compiles(PROGRAM)


def test_each_skipped_frame_gets_one_line_with_torchs_reason_and_line(
        tmp_path: Path, torch_account: list[Any]) -> None:
    helper, f = torch_account        # each compiled once: called twice, skipped for good
    assert [(m.co_name, m.has_guarded_code) for m in torch_account] == \
        [("helper", False), ("f", False)], torch_account
    run = run_dyndbg(PROGRAM, ["catch graph-break", "c", "why", "c", "c", "c", "c"], tmp_path)
    no_traceback(run)
    assert (run.stdout, run.returncode) == (run_plain(PROGRAM).stdout, 0), run.stderr[-2000:]
    lines = SKIP_LINE.findall(run.transcript)
    assert [(name, path, int(line), cid) for name, path, line, cid, _, _ in lines] == \
        [(m.co_name, m.co_filename, m.co_firstlineno, str(m.compile_id)) for m in torch_account]
    for (_, _, _, _, stops, cause), metrics in zip(lines, torch_account):
        assert stops == " and no longer stops here", stops
        assert cause == expected_cause(metrics, cause.split(" (GB")[0]), cause
    # catch graph-break: after helper's skip, in g's generated code that called it,
    # where `why` says it; after f's, at the next generated code to run.
    helper_said = f"'helper' ({helper.co_filename}:{helper.co_firstlineno})"
    after_helper = run.transcript.split(f"Stopped after dynamo skipped {helper_said} "
                                        "(catch graph-break)\n> g [0/0]")[1]
    assert "# g's call of helper" in after_helper.splitlines()[0], after_helper[:300]
    why = after_helper.split("(dyndbg) why\n")[1].split("(dyndbg) c\n")[0]
    assert f"g [0/0] called {helper_said}, which dynamo skipped [{helper.compile_id}] at a " \
        "graph break it cannot resume from; it runs eagerly from now on:\n" \
        f"  torch's reason: {lines[0][5]}\n" in why, why
    f_said = f"'f' ({f.co_filename}:{f.co_firstlineno})"
    assert f"Stopped at the first generated code since dynamo skipped {f_said} " \
        "(catch graph-break) at " in run.transcript, run.transcript[-3000:]


def test_a_skipped_resume_function_still_stops_and_says_why(tmp_path: Path) -> None:
    """A resume function dynamo skips runs eagerly as the generated code it is,
    so dyndbg still stops in it: the line says so, and `why` there gives the skip."""
    [resume] = failed_compiles(STEP_BACK)
    run = run_dyndbg(STEP_BACK, ["b step_back.py:18", "c", "why", "c", "c"], tmp_path)
    assert run.stdout == run_plain(STEP_BACK).stdout, run.stderr[-2000:]
    [(name, _, _, cid, stops, cause)] = SKIP_LINE.findall(run.transcript)
    assert (name, cid) == (resume.co_name, str(resume.compile_id)), run.transcript
    assert stops == ", uncompiled (dyndbg still stops in it: a resume function is " \
        "dynamo's code)", stops
    assert f"Breakpoint 1 at step_back.py:18, hit 1\n> {resume.co_name} [not compiled]" \
        in run.transcript, run.transcript
    why = run.transcript.split("(dyndbg) why\n")[1].split("(dyndbg) c\n")[0]
    assert f"dynamo skipped compiling it [{cid}] at a graph break it cannot resume from; it " \
        f"runs eagerly from now on:\n  torch's reason: {cause}\n" in why, why
    assert resume.fail_reason.splitlines()[0] in cause and \
        f"step_back.py:{resume.fail_user_frame_lineno}" in cause, (cause, resume.fail_reason)
