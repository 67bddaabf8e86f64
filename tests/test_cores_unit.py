"""The compiled core's pure parts against the Python reference: which kept
slots a record reuses (slot_sources), and the core's choice (cores.py)."""
from __future__ import annotations

import collections

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dyndbg import cores
from dyndbg.cpython import NULL, StackUnavailable
from dyndbg.engine.recording.recorded_values import (AS_IS, VOLATILE, Limits, ValueKeeper, _Copy,
                                           slot_sources)

compiled = cores.history()
needs_c = pytest.mark.skipif(compiled is None, reason=f"no compiled core here: {cores.note()}")


class _Token:
    """A token whose holds() answers as told (as _Items and _Seen do)."""

    def __init__(self, holds: bool) -> None:
        self.answer = holds
        self.last = 0

    def holds(self, value: object) -> bool:
        return self.answer


def _recorder():  # noqa: ANN202
    return compiled.Recorder(None, collections.deque(), {}, print, print, tuple,
                             frozenset(), NULL, StackUnavailable, _Copy, VOLATILE, AS_IS)


def _world(draw_tokens: list[int], seq: int):  # noqa: ANN202
    """Objects with the tokens a keeper gives them: None (immutable), VOLATILE,
    a tensor's _Copy (changed or not since), a token that holds or does not."""
    keeper = ValueKeeper(Limits(1000, 1 << 20))
    objects, tokens = [], []
    for kind in draw_tokens:
        if kind == 0:
            objects.append(object()), tokens.append(None)
        elif kind == 1:
            objects.append([]), tokens.append(VOLATILE)
        elif kind in (2, 3):
            tensor = torch.zeros(2)
            _, copy = keeper.keep(tensor, seq)
            if kind == 3:
                tensor.add_(1)       # a new version: the copy no longer holds
            objects.append(tensor), tokens.append(copy)
        else:
            objects.append(object()), tokens.append(_Token(kind == 4))
    return objects, tokens


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=8), st.lists(st.integers(-1, 7), max_size=10),
       st.booleans())
def test_slot_sources_in_c_is_the_python_reference(kinds: list[int], picks: list[int],
                                                   settled: bool) -> None:
    """Slots holding the previous record's objects at the same place, moved,
    or new: the same sources, and the same tokens touched (their `last`)."""
    previous, tokens = _world(kinds, 1)
    values = [previous[p] if 0 <= p < len(previous) else object() for p in picks]
    expected = slot_sources(values, previous, tokens, settled, 7)
    touched = [getattr(t, "last", None) == 7 for t in tokens]
    for token in tokens:
        if hasattr(token, "last"):
            token.last = -1
    got = _recorder().slot_sources(values, previous, tokens, settled, 7)
    assert got == expected
    assert [getattr(t, "last", None) == 7 for t in tokens] == touched


@needs_c
def test_a_moved_tensor_keeps_its_copy_and_a_changed_one_does_not() -> None:
    previous, tokens = _world([2, 3, 0], 1)
    values = [previous[2], previous[0], previous[1]]   # the stack moved them
    assert _recorder().slot_sources(values, previous, tokens, False, 5) == [0, 2, 1, 0, 2, -1]
    assert tokens[0].last == 5


def test_the_python_core_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cores.CORE_VARIABLE, "python")
    assert cores._choose().core is cores.Core.PYTHON and cores._choose().why == ""


def test_a_bad_choice_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cores.CORE_VARIABLE, "fast")
    chosen = cores._choose()
    assert "DYNDBG_CORE='fast' is not 'c' or 'python'" in chosen.why
    assert "\n" not in chosen.why


@needs_c
def test_a_layout_the_probe_refuses_is_never_read_by_recording() -> None:
    """A compiled reader configured with a layout that fails the start-up
    probe (here a wrong code pointer offset, caught before any slot is
    read): the probe says so, and read_at_event, which recording calls,
    reads nothing."""
    import dataclasses
    import sys

    from dyndbg.cpython import valuestack

    layout = valuestack._layout()
    wrong = dataclasses.replace(layout, f_code=layout.f_code + 8)
    frames = cores.frames()
    try:
        frames.configure(wrong.f_frame, wrong.f_code, wrong.stacktop, wrong.localsplus,
                         wrong.stack_pointer, valuestack._event_mode(wrong).value, NULL,
                         StackUnavailable)
        assert valuestack._self_check(wrong, valuestack._read_compiled) is not None
        with pytest.raises(StackUnavailable, match="has not passed its check"):
            frames.read_at_event(sys._getframe(), None, False)
    finally:
        valuestack._use_compiled_reader(layout)
    assert cores.core() == "c"
    frame = sys._getframe()
    try:   # checked again: it reads (a running frame may still be unreadable)
        frames.read_at_event(frame, valuestack.event_depths(frame.f_code), False)
    except StackUnavailable as why:
        assert "has not passed" not in str(why)


def _shape(kept: object, token: object, value: object) -> tuple:
    """What a keeper made of `value`, comparable between two keepers: the
    kind of each kept part and token, tensors by their values, and whether a
    part is the value itself."""
    from dyndbg.engine.recording.recorded_values import Summary, _Items

    def token_shape(t: object) -> object:
        if t is None or t is VOLATILE:
            return repr(t) if t is None else "VOLATILE"
        if isinstance(t, _Items):
            return ("items", len(t.items), tuple(map(token_shape, t.tokens)))
        return type(t).__name__

    if isinstance(kept, torch.Tensor):
        part: object = ("tensor", kept.tolist(), kept is value)
    elif isinstance(kept, Summary):
        part = ("summary", kept.type_name, kept.text)
    elif type(kept) in (list, tuple) and type(kept) is type(value) and len(kept) == len(value):
        part = (type(kept).__name__, kept is value,
                tuple(_shape(k, None, v)[0] for k, v in zip(kept, value)))
    else:
        part = (type(kept).__name__, kept is value)
    return part, token_shape(token)


@needs_c
def test_keeping_a_value_in_c_is_the_python_reference() -> None:
    """Values kept as they are, tensors (their copy reused while it holds,
    a new one after an in-place change), lists and tuples within and past
    the bounds, nested: the compiled keep makes what ValueKeeper.keep
    makes, and reuses a copy where it does."""
    from dyndbg.dynamo.tensor_copy import PLAIN_TENSOR_TYPES
    from dyndbg.engine.recording.recorded_values import CONTAINER_DEPTH, CONTAINER_ITEMS, _Items

    python_keeper, c_keeper = ValueKeeper(Limits(1000, 1 << 20)), ValueKeeper(Limits(1000, 1 << 20))
    recorder = compiled.Recorder(None, collections.deque(), {}, print, c_keeper.keep, tuple,
                                 frozenset(), NULL, StackUnavailable, _Copy, VOLATILE, AS_IS,
                                 c_keeper.copies_by_id, frozenset(PLAIN_TENSOR_TYPES), _Items,
                                 (CONTAINER_ITEMS, CONTAINER_DEPTH))
    t = torch.ones(3)
    with torch.inference_mode():
        inference = torch.zeros(2)
    values = [t, [t, t, 1, None], (1, "a", None), (t, 2), [[t], [1, [2, [3, [4]]]]],
              list(range(CONTAINER_ITEMS + 1)), [inference], {"a": t}, slice(1, 2), slice(t, None), (),
              [torch.nn.Parameter(torch.ones(1))]]
    for seq in (1, 2, 3):
        if seq == 3:
            t.add_(1)          # a new version: copied anew
        for value in values:
            expected = python_keeper.keep(value, seq)
            got = recorder.keep(value, seq)
            assert _shape(*got, value) == _shape(*expected, value), (seq, value)
        # The copy of the same version is reused, as the Python keeper does.
        again, again_python = recorder.keep(t, seq)[0], python_keeper.keep(t, seq)[0]
        assert (again is recorder.keep(t, seq)[0]) and \
            (again_python is python_keeper.keep(t, seq)[0])
    assert c_keeper.copies == python_keeper.copies and c_keeper.bytes == python_keeper.bytes
