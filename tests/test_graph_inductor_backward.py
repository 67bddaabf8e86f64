"""`catch backward` and `catch nan` in inductor's compiled backward (issue 50),
in the real CLI, on tests/programs/train_inductor_backward.py: a stop
before the first step of its output code's `call` as the backward starts
inside `loss.backward()`, then `s` kernel by kernel.

Every run here uses one inductor cache of this program's own (harness's
program_cache, shared with test_graph_line_inductor_backward.py): the
output code the runs load is this program's, whose line map holds its stack
traces (the machine's shared cache may hold a graph of the same shape that
another program compiled first).

Checked against torch's own account, read in this process from one compile
of the same model (AOT's cache off: its backward graph keeps its meta), and
against eager autograd, never against strings copied from one release:
- the steps stopped at: the statements of the output code's `call`
  (torch's source of the module it loaded), in order;
- each kernel's nodes: the `Source Nodes` comment inductor wrote above it,
  less names that are no node of the backward graph (a node is named by its
  own name or, recomputed from the forward, by its `from_node`'s); a C++
  kernel (no comment) names none;
- each kernel's lines: the innermost user frame of each named node's
  `stack_trace` (the forward line it differentiates); for a C++ kernel,
  lines of the traces inductor's line map records up to its call;
- the values shown (a gradient's buffer after the kernel that wrote it,
  the returned buffers): the same model's eager gradients
  (torch._dynamo.utils.same), as are those the program prints;
- the program's output: the same as a plain run with the same cache.
Two runs: AOT's cache off (the backward compiled lazily inside the first
backward(), its `call` recognized as it starts), and one where AOT's cache
had the backward (compiled before it runs; no graph with meta in the
process: the comments' names as written, lines from the line map).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from harness import ROOT, TIMEOUT, Run, child_env, program_cache, run_dyndbg
from output_code import call_steps
from transcript import graph_segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "train_inductor_backward.py"
HEAD = re.compile(r"^\[backward of graph 1 inductor\] step (\d+)/(\d+) (.*)$")
CAUGHT = re.compile(r"^Catchpoint 1 \(backward\), hit (\d+): backward of graph 1 starts$")
PLACE = re.compile(r"^  grad of (\S+):(\d+): (.*)$")
NOT_NAMED = "  computes nodes inductor does not name; lines its line map records for them:"

pytestmark = pytest.mark.slow       # inductor compiles: one here, cached ones in the runs


class Kernel(NamedTuple):
    line: int
    name: str
    comment: tuple[str, ...] | None     # inductor's Source Nodes, as written


class Account(NamedTuple):
    """torch's own account of the backward, read in this process."""

    source: str                      # the output code module torch loaded
    stops: list[int]                 # the lines of `call` a stop comes before
    kernels: list[Kernel]
    linemap: list[tuple[int, str]]   # (output code line, stack trace)
    nodes: dict                      # the backward graph's nodes by name, with their meta
    aliases: dict                    # from_node name -> the node recomputed from it
    outputs: list[str]               # the backward graph's outputs (the gradients)
    eager: dict                      # parameter -> its gradient, by eager autograd


def _program():
    spec = importlib.util.spec_from_file_location("train_inductor_backward", PROGRAM)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return program_cache(tmp_path_factory, PROGRAM.stem)


def _user_line(trace: str | None) -> tuple[str, int] | None:
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace or "")
    return (os.path.basename(frames[-1][0]), int(frames[-1][1])) if frames else None


@pytest.fixture(scope="module")
def account(cache: Path) -> Account:
    import torch
    import torch._dynamo
    import torch._functorch.config
    from torch._inductor.codecache import PyCodeCache

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)     # conftest restores os.environ
    program = _program()
    before = {id(m) for m in PyCodeCache.modules}
    torch._dynamo.reset()
    model, x, y = program.make()
    with torch._functorch.config.patch(enable_autograd_cache=False):
        loss = torch.compile(model, backend="inductor")(x, y)
        info = loss.grad_fn._forward_cls._lazy_backward_info
        graph = info.bw_module.graph
        nodes = {n.name: n for n in graph.nodes}
        loss.backward()
    torch._dynamo.reset()
    with torch._functorch.config.patch(enable_autograd_cache=True):
        # the same graph once more, AOT's cache on: its entry, for the `cached` runs
        model, x, y = program.make()
        torch.compile(model, backend="inductor")(x, y).backward()
    torch._dynamo.reset()
    loaded = [m for m in PyCodeCache.modules if id(m) not in before and hasattr(m, "call")]
    files = {m.__file__ for m in loaded if "_backward" in Path(m.__file__).read_text().splitlines()[0]}
    assert len(files) == 1, files       # both compiles: the same output code
    (file,) = files
    source = Path(file).read_text()
    lines, traces = PyCodeCache.linemaps.get(file) or ((), ())
    stops: list[int] = []
    kernels: list[Kernel] = []
    for step in call_steps(source):
        stops.append(step.line)
        if step.kernel:
            kernels.append(Kernel(step.line, step.name, step.comment))
    stops.sort()
    kernels.sort()
    aliases = {}
    for node in nodes.values():
        origin = node.meta.get("from_node")
        if origin:
            aliases.setdefault(origin[0].name, node.name)
    (output,) = [n for n in nodes.values() if n.op == "output"]
    outputs = [a.name for a in output.args[0] if a is not None]
    eager_model, x, y = program.make()
    eager_model(x, y).backward()
    eager = {name: p.grad.clone() for name, p in eager_model.named_parameters()}
    return Account(source, stops, kernels, list(zip(lines, traces)), nodes, aliases, outputs, eager)


def _plain(cache: Path, args: list[str], env: dict[str, str | None]) -> subprocess.CompletedProcess:
    extra = {"TORCHINDUCTOR_CACHE_DIR": str(cache), **env}
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True,
                          cwd=ROOT, env=child_env(None, extra), timeout=TIMEOUT)


def _run(cache: Path, args: list[str], commands: list[str], tmp: Path,
         env: dict[str, str | None]) -> Run:
    run = run_dyndbg([PROGRAM, *args], commands, tmp,
                     env={"TORCHINDUCTOR_CACHE_DIR": str(cache), **env})
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _known(account: Account, name: str):
    node = account.nodes.get(name)
    return node if node is not None else account.nodes.get(account.aliases.get(name, ""))


def _commented(account: Account, kernel: Kernel) -> tuple[str, ...] | None:
    """The comment's names that are the backward graph's nodes (dyndbg's reading)."""
    if kernel.comment is None:
        return None
    return tuple(n for n in kernel.comment if _known(account, n) is not None) or None


class Session(NamedTuple):
    run: Run
    segments: list[tuple[str, list[str]]]
    plain: subprocess.CompletedProcess


def _commands(account: Account) -> list[str]:
    """Stop at the backward's start, `s` through it; after each commented
    kernel `p` its output node (the last it names), where that is a gradient;
    `locals` at the first stop, `locals`, `l`, `where` and `p` of each
    returned buffer at the return; then the second backward: `s`, `r`."""
    by_line = {k.line: k for k in account.kernels}
    commands = ["catch backward", "c", "locals"]
    for index, line in enumerate(account.stops):
        ran = by_line.get(account.stops[index - 1]) if index else None
        named = _commented(account, ran) if ran is not None else None
        if named and named[-1] in account.outputs:
            commands.append(f"p {named[-1]}")
        if index == len(account.stops) - 1:
            returned = re.search(r"return \((.*)\)", account.source.splitlines()[line - 1])[1]
            buffers = dict.fromkeys(re.findall(r"\bbuf\d+\b", returned))
            commands += ["locals", "l", "where"] + [f"p {b}" for b in buffers]
            commands.append("c")
        else:
            commands.append("s")
    return commands + ["s", "r"]


@pytest.fixture(scope="module")
def plain(account: Account, cache: Path) -> subprocess.CompletedProcess:
    """The program run plainly (AOT's cache on or off, it computes the same)."""
    return _plain(cache, ["train"], {"TORCHINDUCTOR_AUTOGRAD_CACHE": "0"})


@pytest.fixture(scope="module")
def lazy(account: Account, cache: Path, plain: subprocess.CompletedProcess,
         tmp_path_factory: pytest.TempPathFactory) -> Session:
    """AOT's cache off: the first backward() compiles the backward."""
    env: dict[str, str | None] = {"TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}
    run = _run(cache, ["train"], _commands(account), tmp_path_factory.mktemp("lazy"), env)
    return Session(run, graph_segments(run.transcript), plain)


@pytest.fixture(scope="module")
def cached(account: Account, cache: Path, plain: subprocess.CompletedProcess,
           tmp_path_factory: pytest.TempPathFactory) -> Session:
    """AOT's cache on (the account's second compile filled it): the backward
    is compiled before it runs."""
    env: dict[str, str | None] = {"TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}
    run = _run(cache, ["train"], _commands(account), tmp_path_factory.mktemp("cached"), env)
    return Session(run, graph_segments(run.transcript), plain)


def _first_run(session: Session) -> list[tuple[str, list[str]]]:
    """(command, lines) until the second backward starts."""
    out = []
    for command, lines in session.segments:
        if any(CAUGHT.match(t) and CAUGHT.match(t)[1] == "2" for t in lines):
            break
        out.append((command, lines))
    return out


def _first_backward(session: Session) -> list[tuple[str, list[str]]]:
    """(command, lines) of the first backward's stops."""
    return [(command, lines) for command, lines in _first_run(session)
            if lines and (HEAD.match(lines[0]) or any(CAUGHT.match(t) for t in lines))]


def _check_steps(session: Session, account: Account, cached: bool) -> None:
    stops = _first_backward(session)
    heads = [next(t for t in lines if HEAD.match(t)) for _, lines in stops]
    assert len(heads) == len(account.stops), session.run.transcript[-4000:]
    kernels = iter(account.kernels)
    lines_of = [0, 0] + [k.line for k in account.kernels]     # two kernels back, then each
    for (command, lines), head, line in zip(stops, heads, account.stops):
        match = HEAD.match(head)
        assert match is not None and int(match[2]) == len(account.stops)
        statement = account.source.splitlines()[line - 1].strip()
        assert f"  code: {statement}" in lines, (head, statement)
        kernel = next((k for k in account.kernels if k.line == line), None)
        if kernel is None:
            continue
        assert kernel is next(kernels)
        assert match[3].startswith(f"{kernel.name}: "), (head, kernel)
        computes = lines[lines.index(head) + 1]
        places = [PLACE.match(t) for t in lines if PLACE.match(t)]
        for place in places:        # the source line shown is the file's
            path = PROGRAM if place[1] == PROGRAM.name else None
            assert path is not None and \
                path.read_text().splitlines()[int(place[2]) - 1].strip() == place[3], place[0]
        shown = [(p[1], int(p[2])) for p in places]
        # the line map's traces since the kernel before (for a commented kernel,
        # two before: its own trace may come before the C++ kernel flushed for it)
        position = account.kernels.index(kernel)
        since = lines_of[position + (0 if kernel.comment else 1)]
        region = [_user_line(t) for at, t in account.linemap if since < at <= kernel.line]
        named = kernel.comment if cached else _commented(account, kernel)
        if named is not None:
            assert computes == f"  computes {', '.join(named)} (inductor's comment)", computes
            if not cached:      # each named node's own stack trace, in order
                expected = [_user_line(_known(account, n).meta.get("stack_trace")) for n in named]
                assert shown == list(dict.fromkeys(p for p in expected if p)), (shown, expected)
            else:
                assert set(shown) <= set(region), (shown, region)
        else:
            assert computes == (NOT_NAMED if shown else "  computes no node inductor records")
            assert shown and set(shown) <= set(region), (shown, region)
    assert next(kernels, None) is None
    assert HEAD.match(heads[-1])[3] == "return: the graph returns"


def _close(text: str, value) -> bool:
    """Whether torch's repr `text` shows `value` (to the 10 decimals printed)."""
    import torch
    from torch._dynamo.utils import same
    body = text.split("tensor(", 1)[1]
    numbers = [float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", re.split(r"\]\)|, grad_fn", body)[0])]
    shown = torch.tensor(numbers, dtype=torch.float32)
    return shown.numel() == value.numel() and same(value.reshape(-1), shown)


def test_lazy_backward_stops_at_each_step_with_torchs_nodes_and_lines(lazy: Session,
                                                                       account: Account) -> None:
    assert "backward compiled before it ran: False" in lazy.run.stdout
    caught = [CAUGHT.match(t) for t in lazy.run.transcript.splitlines() if CAUGHT.match(t)]
    assert [m[1] for m in caught] == ["1", "2"], lazy.run.transcript[-3000:]
    _check_steps(lazy, account, cached=False)


def test_cached_backward_stops_at_each_step_with_inductors_comments(cached: Session,
                                                                    account: Account) -> None:
    assert "backward compiled before it ran: True" in cached.run.stdout
    _check_steps(cached, account, cached=True)


def test_values_are_eager_gradients(lazy: Session, account: Account) -> None:
    """A gradient's buffer after the kernel that wrote it, the returned
    buffers, and the gradients the program prints: eager autograd's."""
    from torch._dynamo.utils import same
    import torch
    eager = list(account.eager.values())
    shown = {command[2:]: lines for command, lines in _first_run(lazy)
             if command.startswith("p ")}
    nodes = [n for n in shown if not n.startswith("buf")]
    assert nodes, "no kernel named a gradient it wrote"
    for name in nodes:
        lines = shown[name]
        assert re.match(rf"{name} is buf\d+ \(written by extern_kernels\.\w+\):$", lines[0]), lines
        assert sum(_close(" ".join(lines[1:]), g) for g in eager) == 1, (name, lines)
    buffers = [n for n in shown if n.startswith("buf")]
    matched = [next(i for i, g in enumerate(eager) if _close(" ".join(shown[b]), g)) for b in buffers]
    assert sorted(matched) == list(range(len(eager))), (buffers, matched)
    printed = {t.split()[1]: [float(v) for v in t.split()[2:]]
               for t in lazy.run.stdout.splitlines() if t.startswith("grad ")}
    for name, grad in account.eager.items():
        assert same(grad.reshape(-1), torch.tensor(printed[name])), name


def test_locals_where_and_the_second_backward(lazy: Session, account: Account) -> None:
    segments = lazy.segments
    first_locals = next(lines for command, lines in segments if command == "locals")
    inputs = re.match(r"\s*(\w+(?:, \w+)*),? = args", next(
        t for t in account.source.splitlines() if t.strip().endswith("= args")))[1].split(", ")
    held = [t.split(" = ")[0].strip() for t in first_locals if "  (input " in t]
    assert held and held == [n for n in inputs if n in held], (held, inputs)
    for text in first_locals:       # each input: the backward graph's placeholder it is
        name = text.split(" = ")[0].strip()
        assert name not in inputs or text.endswith(f"(input {name})"), text
        assert account.nodes[name].op == "placeholder" if name in inputs else name.startswith("buf")
    where = next(lines for command, lines in segments if command == "where")
    line = next(i for i, t in enumerate(PROGRAM.read_text().splitlines(), 1)
                if t.strip() == "loss.backward()")
    assert where[0].strip() == \
        f"main at {PROGRAM}:{line}  (autograd runs the backward from here)", where
    listing = next(lines for command, lines in segments if command == "l")
    assert sum(t.startswith("->") for t in listing) == 1
    assert Path(listing[0].rstrip(":")).read_text() == account.source
    # the second backward (compiled already): the same first stop, then `s`, `r` run on
    second = [i for i, (_, lines) in enumerate(segments) if any(CAUGHT.match(t) for t in lines)]
    first_heads = [[t for t in segments[i][1] if HEAD.match(t)] for i in second]
    assert len(first_heads) == 2 and first_heads[0] == first_heads[1], first_heads
    assert HEAD.match(segments[-2][1][0])[1] == "2", segments[-2:]
    assert segments[-1][0] == "r"


def test_the_program_computes_what_a_plain_run_does(lazy: Session, cached: Session) -> None:
    """One plain run, AOT's cache off: with it on, only the line saying when
    the backward was compiled differs (what the program computes does not)."""
    assert lazy.plain.returncode == 0, lazy.plain.stderr[-2000:]
    assert lazy.run.stdout == lazy.plain.stdout

    def computed(stdout: str) -> list[str]:
        return [t for t in stdout.splitlines() if not t.startswith("backward compiled before it ran:")]
    assert computed(cached.run.stdout) == computed(cached.plain.stdout)


def test_catch_nan_stops_after_the_backward_kernel_that_made_it(
        cache: Path, tmp_path: Path) -> None:
    """The forward is finite, the backward makes NaN (eager autograd too):
    catch nan stops in the backward, after one of its output code's kernels,
    whose buffer shown holds it."""
    import torch
    program = _program()
    model, x, y = program.make(nan=True)
    loss = model(x, y)
    assert torch.isfinite(loss)
    loss.backward()
    assert model.l1.weight.grad.isnan().any()
    env: dict[str, str | None] = {"TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}
    run = _run(cache, ["nan"], ["catch nan", "c", "l", "s", "r"], tmp_path, env)
    segments = graph_segments(run.transcript)
    lines = segments[1][1]
    head = re.match(r"^Catchpoint 1 \(nan\), hit 1: kernel (\S+) of graph 1 made nan", lines[0])
    assert head is not None, run.transcript[-3000:]
    step = re.match(rf"^\[backward of graph 1 inductor\] after step \d+/\d+ {re.escape(head[1])}: ",
                    lines[1])
    assert step is not None, lines
    out = next(t for t in lines if t.startswith("  out "))
    assert "nan" in out, lines
    listing = segments[2][1]
    source = Path(listing[0].rstrip(":")).read_text()
    assert re.search(rf"^{re.escape(head[1])} = async_compile\.", source, re.M) or \
        head[1].startswith("extern_kernels."), head[1]
    assert "_backward" in source.splitlines()[0]
    assert run.stdout == _plain(cache, ["nan"], env).stdout
