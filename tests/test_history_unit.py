"""The recorded history's parts without the CLI: what is kept of a value,
the ring buffer's bounds on a real traced frame, and the pure helpers of
the history commands."""
from __future__ import annotations

import sys

import pytest
import torch

from dyndbg import cores
from dyndbg.cpython.tracing import prepare_settrace
from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.codeinfo import code_info
from dyndbg.engine.recording.history import History
from dyndbg.engine.recording.recorded_values import VOLATILE, Limits, Summary, ValueKeeper
from dyndbg.ui.commands.history import moved, present_position, summarized_names
from dyndbg.ui.text.parsing import CommandError, format_bytes, parse_bytes


# -- what is kept of a value ---------------------------------------------------------------
def test_tensor_copy_is_shared_until_an_in_place_change() -> None:
    keeper = ValueKeeper(Limits(copy_elements=100, memory_bytes=1 << 20))
    t = torch.ones(3)
    first, token = keeper.keep(t, 0)
    again, _ = keeper.keep(t, 1)
    assert first is again and first is not t and keeper.bytes == 12
    t.add_(1)
    after, _ = keeper.keep(t, 2)
    assert first.tolist() == [1.0, 1.0, 1.0] and after.tolist() == [2.0, 2.0, 2.0]
    assert keeper.bytes == 24 and keeper.copies == 2
    keeper.sweep(2)             # no record before seq 2 is held: the first copy goes
    assert keeper.bytes == 12 and keeper.copies == 1


def test_large_tensors_and_objects_are_summaries() -> None:
    keeper = ValueKeeper(Limits(copy_elements=10, memory_bytes=1 << 20))
    big, _ = keeper.keep(torch.zeros(4, 5), 0)
    assert isinstance(big, Summary) and "f32[4, 5]" in big.text and "record-copy-limit" in big.text

    class Config:
        def __repr__(self) -> str:
            raise AssertionError("no user __repr__ on the hot path")

    kept, token = keeper.keep(Config(), 0)
    assert isinstance(kept, Summary) and kept.type_name == "Config" and token is None
    linear, _ = keeper.keep(torch.nn.Linear(2, 3), 0)
    assert linear.text == "Linear(in_features=2, out_features=3, bias=True)"


def test_containers_are_new_containers_of_kept_items() -> None:
    keeper = ValueKeeper(Limits(copy_elements=100, memory_bytes=1 << 20))
    t = torch.ones(2)
    items = [1, t, (2, "a")]
    kept, token = keeper.keep(items, 0)
    assert kept is not items and kept[1] is not t and kept[2] == (2, "a")
    assert token is not VOLATILE and token.holds(items)
    items.append(3)
    assert not token.holds(items) and len(kept) == 3
    immutable = (1, ("x", None))
    assert keeper.keep(immutable, 0) == (immutable, None)
    # A slice of such values is itself too (its repr shows it); with a
    # tensor in it, a summary, as another object.
    part = slice(1, None)
    assert keeper.keep(part, 0) == (part, None) and keeper.keep(part, 0)[0] is part
    assert isinstance(keeper.keep(slice(t, None), 0)[0], Summary)


# -- the ring buffer, on a frame traced as the engine traces one ----------------------------
def _work(t: torch.Tensor, rounds: int) -> float:
    total = 0.0
    for _ in range(rounds):
        t.add_(1)
        total += 1.0
    return total


def _record_every_instruction(history: History, call) -> None:  # type: ignore[no-untyped-def]
    code = _work.__code__
    entry = GeneratedCode(code, "transformed", None, "0/0", 0)
    info = code_info(entry.extra, code)

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        if frame.f_code is not code:
            return None
        frame.f_trace = tracer          # before f_trace_opcodes: 3.12+ start opcode events so
        frame.f_trace_opcodes = True
        if event == "opcode":
            history.record(frame, entry, info)
        elif event == "return":
            history.tracks.pop(id(frame), None)   # as the engine forgets a frame
        return tracer

    prepare_settrace()    # 3.12 starts opcode events only after it (gh-114480)
    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)


def test_ring_buffer_keeps_the_newest_records() -> None:
    history = History()
    history.resize(25)
    _record_every_instruction(history, lambda: _work(torch.ones(2), 10))
    info = history.info()
    assert info.records == 25 and info.dropped > 0
    assert info.last - info.first == 24
    assert [r.seq for r in history] == list(range(info.first, info.last + 1))
    assert history[-1].instr.opname.startswith("RETURN")


@pytest.mark.skipif(cores.history() is None, reason="no compiled core here")
def test_compiled_core_trims_as_the_python_core() -> None:
    """The compiled record drops past record-size itself and leaves the sweep
    of the keeper's copies to History._trim: the same records, drops and
    copies as the Python core's, over more drops than a sweep waits for."""
    histories = []
    for compiled in (True, False):
        history = History()
        if not compiled:
            history._recorder = None       # the pure-Python core's record
        history.resize(25)
        t = torch.ones(3)
        _record_every_instruction(history, lambda t=t: _work(t, 400))
        histories.append(history)
    c, python = (h.info() for h in histories)
    assert c == python and c.dropped > 1024 and c.records == 25
    # Swept: far fewer copies than the 400 versions of t made (a sweep comes
    # every 1,025 drops, so some copies no record holds wait for the next).
    assert c.copies < 200
    assert [r.seq for r in histories[0]] == [r.seq for r in histories[1]]


def test_memory_bound_drops_records_and_their_copies() -> None:
    history = History()
    history.memory = 64 * 1024            # copies of at most 4 KB each
    t = torch.ones(1000)                  # 4,000 bytes a version
    _record_every_instruction(history, lambda: _work(t, 60))
    info = history.info()
    assert info.bytes <= 64 * 1024 and info.dropped > 0
    # Each record's t is the copy of its version: the newest shows the last add_.
    newest_t = history[-1].locals()["t"]
    assert float(newest_t[0]) == float(t[0]) == 61.0
    oldest_t = history[0].locals()["t"]
    assert float(oldest_t[0]) < 61.0


def test_locals_as_they_were() -> None:
    history = History()
    _record_every_instruction(history, lambda: _work(torch.zeros(1), 3))
    totals = [r.locals().get("total") for r in history]
    assert totals[0] is None                       # not bound yet
    assert [v for v in dict.fromkeys(totals) if v is not None] == [0.0, 1.0, 2.0, 3.0]
    values = {float(r.locals()["t"][0]) for r in history}
    assert values == {0.0, 1.0, 2.0, 3.0}


# -- pure helpers ------------------------------------------------------------------------------
def test_present_position_and_moving() -> None:
    assert present_position(10, newest_is_now=True) == 9
    assert present_position(10, newest_is_now=False) == 10   # the failing one has run
    assert present_position(0, newest_is_now=True) == 0
    assert moved(9, -3, 9) == (6, "")
    assert moved(2, -5, 9) == (0, "the oldest recorded instruction")
    assert moved(6, 5, 9) == (9, "now")


def test_summarized_names() -> None:
    namespace = {"cfg": Summary("Config", "<Config object at 0x1>"), "n": 3}
    assert summarized_names("cfg.lr * n", namespace) == \
        "only a summary was recorded of cfg = <Config object at 0x1>"
    assert summarized_names("n + 1", namespace) == ""
    assert summarized_names("(", namespace) == ""


@pytest.mark.parametrize("text, size", [("512MB", 512 << 20), ("2GB", 2 << 30), ("64kb", 64 << 10),
                                        ("1000", 1000), ("3 MB", 3 << 20), ("1M", 1 << 20)])
def test_parse_bytes(text: str, size: int) -> None:
    assert parse_bytes(text, "record-memory") == size


@pytest.mark.parametrize("text", ["lots", "-1MB", "0", "1.5GB", "12TB", ""])
def test_parse_bytes_refuses(text: str) -> None:
    with pytest.raises(CommandError):
        parse_bytes(text, "record-memory")


def test_format_bytes() -> None:
    assert format_bytes(512 << 20) == "512 MB"
    assert format_bytes(1536) == "1.5 KB"
    assert format_bytes(12) == "12 B"
