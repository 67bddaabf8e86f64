"""The entry that runs passes its own guards (issue 35). At every generated
frame's first stop, over the whole corpus, the samples and the real model,
`guards` lists each guard of the running entry as ok: torch ran that entry,
so its guards passed for this call. A FAIL there is false, as the one on a
closure's free variable was (`L['func']` of every functools.wraps wrapper).
Each run is one process (tests/programs/guards_hold.py), the programs one
after the other in it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, SAMPLES, TIMEOUT, child_env, run_dyndbg
from transcript import no_traceback
from dyndbg import cores

CLOSURES = ROOT / "tests" / "corpus" / "closure_decorators.py"
# dynamic_shapes.py last: it sets capture_scalar_outputs for the process. Its
# shape guards are each evaluated alone at its stops (issue 51).
PROGRAMS = [*sorted((ROOT / "tests" / "corpus").glob("*.py")), *sorted(SAMPLES.glob("*.py")),
            ROOT / "tests" / "programs" / "tiny_gpt2.py",
            ROOT / "tests" / "programs" / "dynamic_shapes.py"]

# (core, tracer, mode): after `continue`, breakpoints at every entry, where
# the compiled core starts a code's later frames itself (settrace's C start);
# stepping, where every frame starts in Python, as it does after `continue`
# on the Python core (so that run would check nothing more). sys.monitoring
# (3.12+) starts frames in Python on both cores; there settrace is tried as well.
RUNS = [("c", None, "continue"), ("python", None, "step")]
if sys.version_info >= (3, 12):
    RUNS.append(("c", "settrace", "continue"))


def _guards_hold(core: str, tracer: str | None, mode: str) -> list[dict]:
    extra = {"DYNDBG_CORE": core, "DYNDBG_TRACER": tracer}
    proc = warm_start.run([sys.executable, str(ROOT / "tests" / "programs" / "guards_hold.py"),
                           mode, *map(str, PROGRAMS)], capture_output=True, text=True,
                          cwd=ROOT, env=child_env(extra=extra), timeout=TIMEOUT * 2)
    results = [json.loads(line[7:]) for line in proc.stdout.splitlines()
               if line.startswith("GUARDS ")]
    assert [r["program"] for r in results] == [str(p) for p in PROGRAMS], \
        proc.stdout[-2000:] + proc.stderr[-3000:]
    return results


@pytest.mark.parametrize("core, tracer, mode", RUNS,
                         ids=["-".join(filter(None, run)) for run in RUNS])
def test_every_first_stop_passes_its_own_guards(core: str, tracer: str | None,
                                                mode: str) -> None:
    if core == "c" and cores.core() != "c":
        pytest.skip("no compiled core here")
    results = _guards_hold(core, tracer, mode)
    for result in results:
        name = Path(result["program"]).name
        assert result["first"] >= 1, f"{name}: no generated frame stopped"
        assert result["fail"] == [] and result["na"] == [] and result["other"] == [], result
    by_name = {Path(r["program"]).name: r for r in results}
    # The closures ran and stopped: four compiled closures, two rounds each.
    assert by_name[CLOSURES.name]["closures"] >= 8, by_name[CLOSURES.name]
    assert by_name["tiny_gpt2.py"]["closures"] >= 1, by_name["tiny_gpt2.py"]
    assert sum(r["listed"] for r in results) > 1000


def test_a_closure_rebinding_a_guarded_free_variable(tmp_path: Path) -> None:
    """The resume function reads `calls` (guarded `L['calls']`), then the
    closure `bump` it calls rebinds that cell: at its return the guards are
    still those of the call's start, and all passed."""
    run = run_dyndbg(CLOSURES, ["b torch_dynamo_resume_in_f_*", "c", "r", "p calls", "guards",
                                "c", "c"], tmp_path)
    no_traceback(run)
    after = run.transcript.split("(dyndbg) r\n", 1)[1]
    assert after.split("(dyndbg) p calls\n", 1)[1].startswith("1\n"), after[:2000]
    listing = after.split("(dyndbg) guards\n", 1)[1].split("(dyndbg)", 1)[0]
    assert "L['calls']" in listing and "FAIL" not in listing and "n/a" not in listing, listing
    assert any(line.startswith("  ok ") and "source=L['calls']" in line
               for line in listing.splitlines()), listing



CHECK_CLOSURES = """
import functools, torch
import dyndbg.cache as dc

def scaled(func):
    @functools.wraps(func)
    def wrapper(x, scale=2.0):
        return func(x) * scale
    return wrapper

sine = torch.compile(scaled(torch.sin), backend="eager")
x = torch.arange(3.0)
sine(x)
print("one", dc.check("0/0", x)[0], dc.check("0/0", x, scale=3.0)[0])
cosine = torch.compile(scaled(torch.cos), backend="eager")
cosine(x)                                 # another wrapper: its own entry
try:
    dc.check("0/0", x)
except dc.CacheError as error:
    print("two", error)
"""


def test_the_cache_api_checks_a_closure_with_its_free_variables() -> None:
    """dyndbg.cache.check reads the free variables from the live function;
    where two wrappers share the code with different ones, it says it cannot
    know which a call means, rather than answer for one."""
    proc = warm_start.run([sys.executable, "-c", CHECK_CLOSURES], capture_output=True,
                          text=True, cwd=ROOT, env=child_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    # The entry ran for (x,), so its guards pass; scale=3.0 fails its EQUALS_MATCH.
    assert lines[0] == "one True False", proc.stdout
    assert lines[1].startswith("two 2 live functions run wrapper with different values of its "
                               "free variables (func)"), proc.stdout
