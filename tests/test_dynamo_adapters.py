"""Unit tests of the torch adapters: compiled graphs, cache entries, guards.

These compile in-process with real torch.compile. Each test compiles its own
function, so its code object has its own cache entries whatever ran before; frame
ids ("<frame>/<n>") depend on test order, so only the suffix is checked.
"""
from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import dyndbg.cache as dc  # noqa: E402
from dyndbg.dynamo import versions  # noqa: E402
from dyndbg.dynamo.graphs import copies as graph_copies
from dyndbg.dynamo.guards import live_entries
from dyndbg.dynamo.graphs.views import graph_backend  # noqa: E402
from dyndbg.dynamo.graphs.lookup import (  # noqa: E402
    graph_info, graph_number, inductor_output_code, is_graph_name)
from dyndbg.dynamo.guards import split_part# noqa: E402
from dyndbg.dynamo.guards import cache_entries, explain_entry, guard_tree# noqa: E402


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
    assert graph_backend(names[0]) == backend                    # as cache entries name it
    kept = graph_copies._kept.pop(names[0])                       # a graph compiled before
    try:                                                          # dyndbg kept copies:
        assert graph_backend(names[0]) == backend                # its cache entry's
    finally:
        graph_copies._kept[names[0]] = kept
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


# Inductor: tests/test_torch_releases.py (training, through `graph --output-code`) and
# tests/test_dynamo_features.py (inference), both through the CLI.


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


# -- what differs between torch releases (dyndbg/dynamo/versions.py) ----------------

class _Box:
    pass


def _aliasing() -> types.FunctionType:
    """f compiled for f(a, a, x): its guards hold the relation `L['a'] is L['b']`
    (a root lambda on torch 2.13, a relational guard under both sources from 2.14)."""
    def f_alias(a, b, x):
        return x + 1 if a is b else x - 1

    one = _Box()
    f_alias.compiled = torch.compile(f_alias, backend="eager")  # type: ignore[attr-defined]
    f_alias.compiled(one, one, torch.zeros(2))  # type: ignore[attr-defined]
    return f_alias


def test_guard_tree_evaluates_the_aliasing_relation() -> None:
    f = _aliasing()
    (entry,) = cache_entries(f.__code__)
    one, other, x = _Box(), _Box(), torch.zeros(2)
    for b, expected in ((one, True), (other, False)):
        lines = guard_tree(f.__code__, entry.code, {"a": one, "b": b, "x": x})
        assert isinstance(lines, list), lines
        relation = [ln for ln in lines if "L['a'] is L['b']" in ln.text or
                    ln.text.endswith("(see above)")]
        assert relation and all(ln.passed is expected for ln in relation), relation
        reported = [ln for ln in lines if ln.reason]
        if expected:
            assert reported == []
        else:   # torch's reason sits on the relation, not on a line of its own
            assert len(reported) == 1 and reported[0] is relation[0], reported
            assert reported[0].reason == "L['a'] is L['b']"


def test_guard_tree_evaluates_tensor_aliasing() -> None:
    def f_two(x, y):
        return x + y

    x, y = torch.zeros(2), torch.zeros(2)
    torch.compile(f_two, backend="eager")(x, y)
    (entry,) = cache_entries(f_two.__code__)
    lines = guard_tree(f_two.__code__, entry.code, {"x": x, "y": x})
    assert isinstance(lines, list), lines
    relation = [ln for ln in lines if ln.text.startswith("NO_TENSOR_ALIASING")]
    assert len(relation) == 2 and all(ln.passed is False for ln in relation), relation
    assert [ln for ln in lines if ln.reason] == [relation[0]], lines   # torch's reason, placed
    assert "Duplicate tensor" in (relation[0].reason or "")


def test_guard_drop_of_the_aliasing_relation() -> None:
    f = _aliasing()
    (entry,) = dc.entries(f)
    one, other, x = _Box(), _Box(), torch.zeros(2)
    (line,) = [line for line in entry.guards if "L['a'] is L['b']" in line.text]
    number = line.number
    assert number is not None, line
    try:
        if "LAMBDA_GUARD" in line.text:
            # torch 2.13: a lambda on the root, which torch cannot copy a tree without.
            with pytest.raises(dc.CacheError, match="root of the tree"):
                dc.drop_guard(entry.compile_id, number)
            return
        dc.drop_guard(entry.compile_id, number)
        assert f.compiled(one, other, x).tolist() == [1.0, 1.0]   # [0/0] ran, relation gone
        dc.undo_all()
        # Dropping another guard of L['a'] keeps the relation: checked on the copy's root.
        type_match = next(line.number for line in dc.guards(entry.compile_id)
                          if "TYPE_MATCH" in line.text and "L['a']" in line.text)
        dc.drop_guard(entry.compile_id, type_match)
        assert f.compiled(one, other, x).tolist() == [-1.0, -1.0]  # not [0/0]
        assert f.compiled(one, one, x).tolist() == [1.0, 1.0]
    finally:
        dc.undo_all()


def test_hints_are_kept_out_of_the_code() -> None:
    def f_hint(x, d):
        return x + 1 if "k" in d else x - 1

    torch.compile(f_hint, backend="eager")(torch.zeros(2), {"k": 1})
    (entry,) = cache_entries(f_hint.__code__)
    lines = guard_tree(f_hint.__code__, entry.code, {"x": torch.zeros(2), "d": {"j": 1}})
    assert isinstance(lines, list), lines
    assert not any("HINT" in ln.text or "HINT" in ln.comment for ln in lines), lines
    contains = next(ln for ln in lines if ln.text.startswith("DICT_CONTAINS"))
    assert contains.passed is False and contains.reason == "___dict_contains('k', L['d'])"
    # torch 2.15 explains dict membership guards; every release explains type matches.
    assert contains.hint == "" or "must contain key 'k'" in contains.hint, contains.hint
    type_match = next(ln for ln in lines
                      if ln.text.startswith("TYPE_MATCH") and "(L['d']," in ln.text)
    assert type_match.hint == "type dict"
    # A guard with no user stack gets its hint right after the (padded) code.
    part = "___dict_contains(1, L['d'])".ljust(60) + " (HINT: why)"
    assert split_part(part) == ("___dict_contains(1, L['d'])", "", "why")


def test_a_throwing_guard_check_leaves_torch_function_on() -> None:
    # Before torch 2.15 a guard tree that throws leaves __torch_function__ disabled
    # for the thread; a strided nested tensor where TENSOR_MATCH expects a dense one
    # makes `check` throw (check_verbose, which dyndbg calls, fails it first).
    def f_plain(x):
        return x * 2

    torch.compile(f_plain, backend="eager")(torch.ones(2, 3))
    (entry,) = dc.entries(f_plain)
    guard_manager = live_entries.find(entry.compile_id).guard_manager
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    before = torch._C._get_torch_function_state()
    with pytest.raises(RuntimeError):
        versions.guard_check(guard_manager.check, {"x": nested})
    assert torch._C._get_torch_function_state() == before

    class Seen(torch.Tensor):
        calls = 0

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.calls += 1
            return super().__torch_function__(func, types, args, kwargs or {})

    torch.ones(2).as_subclass(Seen) + 1
    assert Seen.calls > 0          # __torch_function__ still dispatches on this thread


def test_a_guard_line_in_a_file_named_as_one_of_torchs_is_the_programs() -> None:
    """Torch shortens paths from the folder a file shares with torch's package,
    so a program's /proj/functional.py (torch in /proj/.venv) is written
    `functional.py`, as torch's own torch/functional.py is: the source line the
    comment carries tells them apart."""
    import linecache
    from dyndbg.dynamo.guards import installed_at
    ours = Path(torch.__file__).parent / "functional.py"
    number, text = next((n, line.strip()) for n, line in
                        enumerate(linecache.getlines(str(ours)), 1) if line.strip())
    assert installed_at(f"{text}  # functional.py:{number} in f") == "torch"
    assert installed_at(f"x = x * 2  # functional.py:{number} in f") == f"functional.py:{number}"
    assert installed_at(f"functional.py:{number} in f") == "torch"   # no line text: torch's
    assert installed_at("y = 1  # not_torch_at_all.py:3 in g") == "not_torch_at_all.py:3"
