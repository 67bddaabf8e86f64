"""docs/reading-dynamo-bytecode.md shows real output: re-run it and compare.
So do the README's marked blocks (its demo, `make demo`, is not marked).

The page marks each checked block with an HTML comment on the line before it:

- `<!-- transcript: NAME -->`: a piece of dyndbg session NAME. The session's
  first block starts with `$ python -m dyndbg ARGS...`; its commands are the
  `(dyndbg) COMMAND` (or `(dyndbg compile) COMMAND`) lines of all its blocks,
  in page order. The session is
  run once with the real CLI (commands on stdin) and the blocks, put end to
  end, must be its whole output: nothing left out, nothing added.
- `<!-- command -->`: a `$ COMMAND` line run with bash in the checkout (a
  leading `python` is this interpreter); the rest of the block must be its
  whole output. `<!-- command: release -->`: the same, on the page's release
  only (its output holds what one torch writes, a traceback through it).
- `<!-- file: PATH -->`: lines that must appear together in PATH.

Only what legitimately varies is normalised: memory addresses (an object's
id in a guard's code too), the uuid of
`__compiled_fn_N_<uuid>`, the checkout's path (the page says /path/to/dyndbg),
the thread count inside torch's global-state guard (which changes the length
shown for that cut guard), the seconds `graph bisect` and `graph values` took
and a pytest run took, and trailing spaces.
"""
from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness import ROOT, TIMEOUT, child_env, run_dyndbg

PAGE = ROOT / "docs" / "reading-dynamo-bytecode.md"
README = ROOT / "README.md"   # only its marked blocks are checked
PAGES = (PAGE, README)
# The page walks through the bytecode one dynamo release writes on one Python
# (it says which): 3.12 and 3.13 have other instructions (no PRECALL, the
# callable first on 3.13), torch 2.15 a profiler template around graph calls.
PAGE_PYTHON = (3, 11)
PAGE_TORCH = "2.13.0"
PAGE_RELEASE = f"torch {PAGE_TORCH} on Python {PAGE_PYTHON[0]}.{PAGE_PYTHON[1]}"
PAGE_ROOT = "/path/to/dyndbg"
# A command at the prompt; `(dyndbg compile)` at a stop while dynamo compiles,
# `(dyndbg graph)` at a stop inside a compiled graph.
PROMPTED = re.compile(r"\(dyndbg(?: compile| graph)?\) (.*)")
MARKER = re.compile(r"^<!--\s*(transcript|command|file)(?::\s*(\S+))?\s*-->\s*$")
FENCE = re.compile(r"^(```+)")


@dataclass
class Block:
    kind: str            # transcript | command | file
    arg: str | None      # session name or file path
    line: int            # page line of the block's first content line (1-based)
    lines: list[str]
    page: Path = PAGE


@dataclass
class Session:
    name: str
    blocks: list[Block] = field(default_factory=list)
    page: Path = PAGE

    @property
    def lines(self) -> list[tuple[str, int]]:
        """(text, page line) of every line of the session's blocks, in order."""
        return [(text, block.line + i) for block in self.blocks
                for i, text in enumerate(block.lines)]


def fenced_blocks(text: str) -> list[tuple[str | None, int, list[str]]]:
    """(marker line before the fence or None, first content line, content lines)."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(1)
        marker = lines[i - 1] if i > 0 and MARKER.match(lines[i - 1]) else None
        start = i + 1
        j = start
        while j < len(lines) and lines[j].rstrip() != fence:
            j += 1
        assert j < len(lines), f"{PAGE.name}:{i + 1}: unclosed code block"
        out.append((marker, start + 1, lines[start:j]))
        i = j + 1
    return out


def page_blocks(page: Path = PAGE) -> list[Block]:
    blocks = []
    for marker, line, content in fenced_blocks(page.read_text()):
        if marker is None:
            # Anything on the walkthrough that looks like a transcript must be
            # marked, so checked.
            assert page is not PAGE or not any(l.startswith(("(dyndbg)", "$ ")) for l in content), (
                f"{page.name}:{line}: a transcript block without a marker comment")
            continue
        m = MARKER.match(marker)
        assert m is not None
        blocks.append(Block(m.group(1), m.group(2), line, content, page))
    return blocks


def sessions() -> list[Session]:
    found: dict[str, Session] = {}
    for page in PAGES:
        for block in page_blocks(page):
            if block.kind == "transcript":
                assert block.arg, f"{page.name}:{block.line}: transcript marker without a name"
                session = found.setdefault(block.arg, Session(block.arg, page=page))
                assert session.page == page, f"session {block.arg} on two pages"
                session.blocks.append(block)
    return list(found.values())


def _torch_site_packages() -> str | None:
    spec = importlib.util.find_spec("torch")   # finds torch without importing it
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).parent.parent)


def normalise(text: str) -> list[str]:
    text = text.replace(str(ROOT), PAGE_ROOT)
    site = _torch_site_packages()
    if site and not site.startswith(str(ROOT)):
        text = text.replace(site, PAGE_ROOT + "/.venv/lib/python3.11/site-packages")
    text = re.sub(r"\b0x[0-9a-fA-F]{4,}\b", "0x…", text)
    # an object's id in a guard's code (a type's, in TYPE_MATCH: its address)
    text = re.sub(r"(___check_(?:type|obj)_id\([^,]+, )\d+", r"\1N", text)
    text = re.sub(r"(__compiled_fn_\d+)_[0-9a-f]{8}(?:_[0-9a-f]{4}){3}_[0-9a-f]{12}",
                  r"\1_<uuid>", text)
    text = re.sub(r"^(.*GLOBAL_STATE: .*)\(\d+ chars\)(  \(torch's own\))?$", r"\1(N chars)\2",
                  text, flags=re.M)
    # how long pytest's run took
    text = re.sub(r"(\d+ (?:failed|passed)[^\n]*?) in \d+\.\d+s\b", r"\1 in N.NNs", text)
    # how long `graph bisect` and `graph values` took
    text = re.sub(r"(\d+ compiles?, |compile of the graph up to \w+, )\d+\.\d\d s\b",
                  r"\1N.NN s", text)
    return [line.rstrip() for line in text.splitlines()]


def assert_same(where: str, expected: list[tuple[str, int]], actual_text: str,
                page: Path = PAGE) -> None:
    """expected: (page text, page line) pairs; actual: the real output."""
    want = normalise("\n".join(text for text, _ in expected))
    got = normalise(actual_text)
    if want == got:
        return
    first = next((i for i, (w, g) in enumerate(zip(want, got)) if w != g),
                 min(len(want), len(got)))
    if first < len(expected):
        place = f"{page.name}:{expected[first][1]}"
    else:
        place = f"after the last line of the page's {where}"
    diff = "\n".join(difflib.unified_diff(want, got, "page", "real output", lineterm="", n=2))
    pytest.fail(f"{where}: the page differs from the real output at {place}\n"
                f"  page: {want[first] if first < len(want) else '(nothing)'}\n"
                f"  real: {got[first] if first < len(got) else '(nothing)'}\n{diff[:6000]}",
                pytrace=False)


def test_page_has_checked_blocks() -> None:
    kinds = {block.kind for block in page_blocks()}
    assert {"transcript", "command", "file"} <= kinds
    assert sessions(), "no dyndbg session on the page"


def _on_page_release() -> bool:
    torch_release = importlib.metadata.version("torch").split("+")[0]   # torch not imported
    return sys.version_info[:2] == PAGE_PYTHON and torch_release == PAGE_TORCH


def test_page_names_its_release() -> None:
    assert f"**{PAGE_RELEASE}**" in PAGE.read_text()


@pytest.mark.skipif(not _on_page_release(),
                    reason=f"the page's transcripts show what {PAGE_RELEASE} writes")
@pytest.mark.parametrize("session", sessions(), ids=lambda s: s.name)
def test_transcript_session_is_real(session: Session) -> None:
    lines = session.lines
    head, first_line = lines[0]
    assert head.startswith("$ "), (
        f"{session.page.name}:{first_line}: session {session.name} must start with "
        "'$ python -m dyndbg ...'")
    argv = shlex.split(head[2:])
    assert argv[:3] == ["python", "-m", "dyndbg"], f"{session.page.name}:{first_line}: {head}"
    commands = [m.group(1) for text, _ in lines if (m := PROMPTED.match(text))]
    assert commands, f"session {session.name} runs no command"
    run = run_dyndbg(argv[3:], commands, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert_same(f"session {session.name!r}", lines[1:], run.stdout, session.page)


def command_blocks() -> list[Block]:
    return [b for page in PAGES for b in page_blocks(page) if b.kind == "command"]


@pytest.mark.parametrize("block", command_blocks(), ids=lambda b: f"{b.page.stem}:line{b.line}")
def test_command_output_is_real(block: Block) -> None:
    if block.arg == "release" and not _on_page_release():
        pytest.skip(f"this command's output (torch's traceback) is what {PAGE_RELEASE} writes")
    head = block.lines[0]
    page = block.page
    assert head.startswith("$ "), f"{page.name}:{block.line}: a command block starts with '$ '"
    # `python` is this interpreter, wherever it stands in the pipeline's first command.
    command = re.sub(r"(^|\s)python(\s)", lambda m: m.group(1) + shlex.quote(sys.executable)
                     + m.group(2), head[2:], count=1)
    # pytest writes its summary lines whole where CI (or BUILD_NUMBER) is set, cut at
    # the width elsewhere: a page shows a run outside CI.
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=ROOT,
                          env=child_env(extra={"CI": None, "BUILD_NUMBER": None}),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    expected = [(text, block.line + 1 + i) for i, text in enumerate(block.lines[1:])]
    assert_same(f"command at {page.name}:{block.line}", expected, proc.stdout, page)


@pytest.mark.parametrize("block", [b for b in page_blocks() if b.kind == "file"],
                         ids=lambda b: f"line{b.line}")
def test_file_excerpt_is_real(block: Block) -> None:
    assert block.arg, f"{PAGE.name}:{block.line}: file marker without a path"
    real = (ROOT / block.arg).read_text().splitlines()
    want = block.lines
    n = len(want)
    assert any(real[i:i + n] == want for i in range(len(real) - n + 1)), (
        f"{PAGE.name}:{block.line}: these lines are not in {block.arg} as shown")
