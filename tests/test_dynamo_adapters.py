"""Unit tests of the torch adapters: compiled graphs, cache entries, guards.

These compile in-process with real torch.compile. Each test compiles its own
function, so its code object has its own cache entries whatever ran before; frame
ids ("<frame>/<n>") depend on test order, so only the suffix is checked.
"""
from __future__ import annotations

import re
import types

import pytest

torch = pytest.importorskip("torch")

from dyndbg.dynamo.graphs import (  # noqa: E402
    graph_info, graph_number, inductor_output_code, is_graph_name)
from dyndbg.dynamo.guards import cache_entries, explain_entry, guard_tree  # noqa: E402


def _graph_globals(fn: types.FunctionType) -> list[str]:
    """The compiled-graph globals this function's compiled code calls, in entry order."""
    return [name for entry in reversed(cache_entries(fn.__code__)) for name in entry.graphs]


def _line_of(fn: types.FunctionType, text: str) -> int:
    lines, first = __import__("inspect").getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _frame_and_n(compile_id: str | None) -> tuple[str, int]:
    assert compile_id is not None and re.fullmatch(r"\d+/\d+", compile_id), compile_id
    frame, n = compile_id.split("/")
    return frame, int(n)


# -- names ------------------------------------------------------------------------

def test_graph_names() -> None:
    assert graph_number("__compiled_fn_2_58b2c1d0_aaaa") == 2
    assert graph_number("__compiled_fn_17") == 17
    assert graph_number("__compiled_fnx") is None
    assert graph_number("__resume_at_20_1") is None
    assert is_graph_name("__compiled_fn_3_x") and not is_graph_name("f")


def test_graph_info_rejects_non_graphs() -> None:
    assert graph_info("f", lambda: 0) is None
    assert graph_info("__compiled_fn_1_abc", 3) is None          # not callable
    info = graph_info("__compiled_fn_1_abc", lambda: 0)          # callable, no graph inside
    assert info is not None and info.note and info.placeholders == []
    assert inductor_output_code("__compiled_fn_1_abc", lambda: 0) is None


# -- graphs, per backend ---------------------------------------------------------

def _check_graph(fn: types.FunctionType, backend: str, x: torch.Tensor, y: torch.Tensor) -> None:
    names = _graph_globals(fn)
    assert len(names) == 1
    info = graph_info(names[0], fn.__globals__[names[0]])
    assert info is not None and info.note is None, info
    assert info.name == names[0] and info.number == graph_number(names[0])
    assert info.backend == backend
    tensors = [p for p in info.placeholders if p.dtype is not None]
    assert [(p.dtype, p.shape) for p in tensors] == [
        (str(t.dtype).removeprefix("torch."), tuple(t.shape)) for t in (x, y)]
    assert [p.name for p in tensors] == ["L_x_", "L_y_"]
    assert tensors[0].describe() == "f32[2, 3]"
    assert len(info.outputs) == 2
    assert info.outputs[1].endswith("f32[]")                      # a.sum()
    assert "a = x.sin() + y" in info.code                         # the user's line, as a comment
    this_file = __file__
    assert (this_file, _line_of(fn, "a = x.sin() + y")) in info.source_lines
    assert all(f == this_file for f, _ in info.source_lines)


def test_graph_info_eager() -> None:
    def f_eager(x, y):
        a = x.sin() + y
        return a * 2, a.sum()

    x, y = torch.randn(2, 3), torch.randn(3)
    torch.compile(f_eager, backend="eager")(x, y)
    _check_graph(f_eager, "eager", x, y)


def test_graph_info_aot_eager_training() -> None:
    def f_aot(x, y):
        a = x.sin() + y
        return a * 2, a.sum()

    # requires_grad: AOT's training path (a CompiledFunction) hides the graphs deeper.
    x, y = torch.randn(2, 3, requires_grad=True), torch.randn(3)
    torch.compile(f_aot, backend="aot_eager")(x, y)
    _check_graph(f_aot, "aot_eager", x, y)


def test_graph_info_inductor() -> None:
    # SLOW: the one inductor test (C++ build, ~25 s cold, ~5 s with inductor's cache).
    def f_inductor(x, y):
        a = x.sin() + y
        return a * 2, a.sum()

    x, y = torch.randn(2, 3), torch.randn(3)
    torch.compile(f_inductor)(x, y)
    _check_graph(f_inductor, "inductor", x, y)
    (entry,) = cache_entries(f_inductor.__code__)
    assert entry.backend == "inductor"
    name = entry.graphs[0]
    code = inductor_output_code(name, f_inductor.__globals__[name])
    assert code is not None and "def call(" in code


# -- cache entries and guards -------------------------------------------------------

def _three_entries() -> types.FunctionType:
    """A function compiled for f32[3] (static), then f32[s] (dynamic), then f64."""
    def g(x, y):
        return x.sin() + y

    compiled = torch.compile(g, backend="eager")
    compiled(torch.randn(3), torch.randn(3))
    compiled(torch.randn(4), torch.randn(4))                                  # shape recompile
    compiled(torch.randn(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64))  # dtype
    g.compiled = compiled  # type: ignore[attr-defined]
    return g


@pytest.fixture(scope="module")
def three() -> types.FunctionType:
    return _three_entries()


def test_cache_entries_after_recompiles() -> None:
    three = _three_entries()             # its own: other tests reorder the fixture's entries
    entries = cache_entries(three.__code__)
    assert len(entries) == 3
    ids = [_frame_and_n(e.compile_id) for e in entries]
    assert len({frame for frame, _ in ids}) == 1
    assert [n for _, n in ids] == [2, 1, 0]                       # most recently used first
    for entry in entries:
        assert isinstance(entry.code, types.CodeType) and entry.code is not three.__code__
        assert entry.backend == "eager"
        assert entry.guard_count and entry.guard_count > 3
        assert len(entry.graphs) == 1 and entry.graphs[0] in three.__globals__
        assert entry.resume_functions == []
    assert cache_entries((lambda: 0).__code__) == []              # never compiled


def _entry(fn: types.FunctionType, n: int):  # -> EntryInfo
    return next(e for e in cache_entries(fn.__code__) if _frame_and_n(e.compile_id)[1] == n)


def test_explain_entry_shape(three: types.FunctionType) -> None:
    f_locals = {"x": torch.randn(5), "y": torch.randn(5)}
    three.compiled(**f_locals)                 # dynamo picks 0/1 (dynamic size) ...
    running = cache_entries(three.__code__)[0]  # ... which moves to the front
    assert _frame_and_n(running.compile_id)[1] == 1
    explanation = explain_entry(three.__code__, running.code, f_locals)
    assert explanation.running == running.compile_id
    reasons = {_frame_and_n(cid)[1]: reason for cid, reason in explanation.rejected}
    assert set(reasons) == {0, 2}
    assert "size mismatch" in reasons[0] and "L['x']" in reasons[0]
    assert "dtype" in reasons[2]


def test_explain_entry_dtype(three: types.FunctionType) -> None:
    f_locals = {"x": torch.randn(3, dtype=torch.float64), "y": torch.randn(3, dtype=torch.float64)}
    running = _entry(three, 2)
    explanation = explain_entry(three.__code__, running.code, f_locals)
    assert explanation.running == running.compile_id
    reasons = dict(explanation.rejected)
    assert len(reasons) == 2
    assert all("dtype mismatch" in r for r in reasons.values()), reasons
    assert explanation.passing == []


def test_explain_entry_unknown_code(three: types.FunctionType) -> None:
    explanation = explain_entry(three.__code__, (lambda: 0).__code__,
                                {"x": torch.randn(3), "y": torch.randn(3)})
    assert explanation.running is None
    # f32[3] passes both the static entry and the dynamic one; only f64 rejects.
    assert sorted(_frame_and_n(c)[1] for c in explanation.passing) == [0, 1]
    assert [_frame_and_n(c)[1] for c, _ in explanation.rejected] == [2]


def test_guard_tree_shows_failing_guard(three: types.FunctionType) -> None:
    static = _entry(three, 0)
    lines = guard_tree(three.__code__, static.code, {"x": torch.randn(4), "y": torch.randn(3)})
    assert isinstance(lines, list), lines
    failing = [line for line in lines if line.passed is False]
    leaf = next(line for line in failing if line.text.startswith("TENSOR_MATCH"))
    assert "L['x']" in leaf.text and "size mismatch" in (leaf.reason or "")
    assert any(line.text.startswith("source=L['x']") for line in failing)   # its manager
    y_guard = next(line for line in lines if line.text.startswith("TENSOR_MATCH")
                   and "L['y']" in line.text)
    assert y_guard.passed is True
    assert lines[0].depth == 1 and max(line.depth for line in lines) >= 2


def test_guard_tree_all_pass_and_unavailable(three: types.FunctionType) -> None:
    static = _entry(three, 0)
    lines = guard_tree(three.__code__, static.code, {"x": torch.randn(3), "y": torch.randn(3)})
    assert isinstance(lines, list) and lines and all(line.passed is True for line in lines)
    assert isinstance(guard_tree(three.__code__, (lambda: 0).__code__, {}), str)
    assert isinstance(guard_tree((lambda: 0).__code__, static.code, {}), str)
