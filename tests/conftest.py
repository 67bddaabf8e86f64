"""pytest's fixtures and hooks for the suite; what tests share is in harness.py."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

from harness import (CORE_BUILT, GRAPH_BREAK_LISTINGS, PLAIN_RUNS, SAMPLES, GraphBreakCode,
                     graph_break_code_of, run_dyndbg)


def pytest_configure(config: pytest.Config) -> None:
    """One folder for the session's plain runs (harness.run_plain), made by
    the controlling process before the xdist workers start, which inherit it."""
    if not hasattr(config, "workerinput") and PLAIN_RUNS not in os.environ:
        os.environ[PLAIN_RUNS] = tempfile.mkdtemp(prefix="dyndbg-plain-runs-")
        atexit.register(shutil.rmtree, os.environ[PLAIN_RUNS], True)


@pytest.fixture(scope="session")
def graph_break_code(tmp_path_factory) -> GraphBreakCode:
    """One run that lists graph_break.py's code, for the tests that need an index
    before their own run (commands piped on stdin)."""
    run = run_dyndbg(SAMPLES / "graph_break.py", GRAPH_BREAK_LISTINGS,
                     tmp_path=tmp_path_factory.mktemp("graph_break_code"))
    return graph_break_code_of(run)


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """The soak corpus's coverage, summed over xdist workers."""
    programs = stops = loads = 0
    for report in terminalreporter.stats.get("passed", []):
        for name, value in getattr(report, "user_properties", []):
            if name == "soak":
                programs += 1
                stops += value["stops"]
                loads += value["loads"]
    if programs:
        terminalreporter.write_line(
            f"soak corpus: {programs} programs stepped through, {stops} instructions "
            f"(stack checked against torch's reader at each), {loads} loads and stores checked")


# -- both cores ----------------------------------------------------------------------------
# The tests that touch tracing, conditions, the history and the stops while
# dynamo compiles run once a core
# where the compiled core was built (DYNDBG_CORE, inherited by the programs
# they start); elsewhere once, on the Python core. The stacks: test_cores.py
# reads every instruction's slots of the whole corpus with both readers and
# compares them and the records (test_stepping, the samples stepped through
# with the stop display, runs on the compiled core only: it is the suite's
# longest file, and CI runs the suite on five Pythons).
BOTH_CORES = {"test_history", "test_same_stops", "test_mechanisms", "test_tracing",
              "test_threads", "test_conditions", "test_hostile", "test_compile_stop_invariants"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__ in BOTH_CORES and "dyndbg_core" in metafunc.fixturenames:
        # one_core: a slow test whose subject is not the core (a real model's
        # compile-time stops), beside the same checks run on both over the corpus
        one = metafunc.definition.get_closest_marker("one_core") is not None
        metafunc.parametrize("dyndbg_core", ["c"] if CORE_BUILT and one else
                             ["c", "python"] if CORE_BUILT else ["python"],
                             indirect=True, ids=lambda core: f"core={core}")


@pytest.fixture(autouse=True)
def dyndbg_core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The core the programs this test starts run on (parametrized above)."""
    core = getattr(request, "param", None)
    if core is not None:
        monkeypatch.setenv("DYNDBG_CORE", core)
    return core



@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """What a test (its setup, a module fixture's included) leaves in this
    worker's os.environ is undone after it: an in-process inductor compile
    sets _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR, and with it there every
    later program this worker started ran cold (tests/warm_start.py starts
    warm only where torch's import would see the same environment), which
    made the whole suite 2.5 minutes slower."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)
