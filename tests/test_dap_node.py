"""Tier 2 of the DAP tests: Microsoft's DebugClient (@vscode/debugadapter-testsupport)
under `node --test tests/dap_js/`, run from pytest so that `make test` runs it
on every Python. It drives `python -m dyndbg.dap` with this interpreter."""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DAP_JS = ROOT / "tests" / "dap_js"
NODE_TIMEOUT = 600   # seconds; the whole run takes about 20 s on 2 idle cores
NPM_TIMEOUT = 300
OUTPUT_SHOWN = 15000  # characters of node's output in a failure message


def _tools() -> tuple[str, str]:
    """node and npm, or a skip that says what is missing and why."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if not path)
        pytest.skip(f"{missing} not found on PATH: the tier-2 DAP tests (tests/dap_js, "
                    f"Microsoft's DebugClient) need Node.js 18+ and npm. The Debian sid root "
                    f"that .ci/sid-run makes for Python 3.14 and 3.15 has no Node.js, so this "
                    f"test skips there (the Python DAP client tests still run)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match.group(1)) < 18:
        pytest.skip(f"node {version or '(no version)'} is older than 18, which `node --test` needs")
    return node, npm


def _installed() -> bool:
    """node_modules is there and no older than package-lock.json (npm writes its
    own copy of the lock, node_modules/.package-lock.json, at each install)."""
    hidden = DAP_JS / "node_modules" / ".package-lock.json"
    return hidden.exists() and hidden.stat().st_mtime >= (DAP_JS / "package-lock.json").stat().st_mtime


def _npm_ci(npm: str) -> None:
    """`npm ci` once, under a file lock: two pytest runs (or xdist workers) in this
    checkout must not install into the same node_modules at once."""
    key = hashlib.sha1(str(DAP_JS).encode()).hexdigest()[:12]
    with open(Path(tempfile.gettempdir()) / f"dyndbg-dap-js-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed():
            return
        proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=DAP_JS,
                              capture_output=True, text=True, timeout=NPM_TIMEOUT)
        if proc.returncode != 0:
            pytest.fail(f"`npm ci` in {DAP_JS} failed ({proc.returncode}):\n"
                        f"{(proc.stdout + proc.stderr)[-OUTPUT_SHOWN:]}", pytrace=False)


def test_debugclient_drives_the_adapter() -> None:
    """launch, stop at entry, stackTrace, disassemble, next instruction; a pending
    function breakpoint that binds and stops; stepBack over a recording;
    disconnect with the program's own output and exit status; the VS Code
    extension (its package.json, and extension.js against a stand-in vscode)."""
    node, npm = _tools()
    if not _installed():
        _npm_ci(npm)
    env = dict(os.environ, DYNDBG_PYTHON=sys.executable, NO_COLOR="1")
    # Its own session: a timeout ends node, the adapters and the programs they run.
    proc = subprocess.Popen([node, "--test", "tests/dap_js/"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=NODE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"`node --test tests/dap_js/` ran over {NODE_TIMEOUT} s:\n"
                    f"{output[-OUTPUT_SHOWN:]}", pytrace=False)
    if proc.returncode != 0:
        # The failures first: TAP puts them among the passes.
        failed = [line for line in output.splitlines() if line.startswith("not ok")]
        pytest.fail("`node --test tests/dap_js/` failed (" + "; ".join(failed) + "):\n"
                    + output[-OUTPUT_SHOWN:], pytrace=False)
    assert re.search(r"^# pass [1-9]", output, re.M), output[-OUTPUT_SHOWN:]
