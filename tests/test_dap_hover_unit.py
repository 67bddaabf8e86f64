"""dyndbg/dap/hover.py, pure: a hover reads values without running the
program's code, so it can change nothing."""
from __future__ import annotations

import collections

import pytest
import torch

from dyndbg.dap.hover import NotHoverable, hover_value


class Counted:
    reads = 0

    def __init__(self) -> None:
        self.plain = 7

    @property
    def computed(self) -> int:
        Counted.reads += 1
        return 1

    def method(self) -> None:
        pass


def _hover(expression: str, **names: object) -> object:
    return hover_value(expression, names, {"GLOBAL": "g"})


def test_names_attributes_and_plain_items_are_read() -> None:
    obj = Counted()
    assert _hover("obj.plain", obj=obj) == 7
    assert _hover("GLOBAL") == "g" and _hover("len") is len
    assert _hover("d['k'][1]", d={"k": [0, 5]}) == 5
    assert _hover("t.shape", t=torch.zeros(2, 3)) == torch.Size([2, 3])
    assert _hover("torch.nn", torch=torch) is torch.nn
    assert _hover("obj.method", obj=obj) is Counted.method


def test_what_would_run_the_programs_code_is_refused_and_runs_nothing() -> None:
    counts: collections.defaultdict[str, int] = collections.defaultdict(int)
    obj = Counted()
    for expression, names in (("obj.computed", {"obj": obj}), ("counts['new']", {"counts": counts}),
                              ("obj.method()", {"obj": obj}), ("x + 1", {"x": 1})):
        with pytest.raises(NotHoverable):
            _hover(expression, **names)
    assert Counted.reads == 0 and dict(counts) == {}


def test_what_is_not_there_is_the_lookups_own_error() -> None:
    with pytest.raises(NameError):
        _hover("missing")
    with pytest.raises(AttributeError):
        _hover("obj.missing", obj=Counted())
    with pytest.raises(KeyError):
        _hover("d['x']", d={})
