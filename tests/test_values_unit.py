"""ui/text/values.py's container_repr: the repr of a list, tuple or dict of tensors,
each distinct tensor formatted once; always the text Python's repr gives now."""
from __future__ import annotations

import torch

from dyndbg.ui.text.values import container_repr, summarize


def _cases() -> list[object]:
    t = torch.arange(6.0).reshape(2, 3)
    loop: list = [1]
    loop.append(loop)
    return [
        [t], (t,), (t, t.t()), {"a": t, 1: None, "s": "x"}, [[t * 0.5, 2.5], (), (1,)],
        [torch.ones(2, requires_grad=True) * 2], [torch.ones(2, requires_grad=True)],
        [torch.tensor(3.0)], [torch.ones(2, dtype=torch.bfloat16)], [torch.zeros(2, dtype=torch.bool)],
        [torch.ones(3).neg()], [torch.empty(0)], [t[1:]], [torch.ones(5000)], [],
        {}, [1, "a", None, 2.5, True], loop, [torch.nn.Parameter(torch.ones(2))],
        [torch.randn(2, dtype=torch.complex64).conj()],
    ]


def test_the_text_is_the_repr() -> None:
    for value in _cases():
        text = container_repr(value)
        assert text is None or text == repr(value), repr(value)
    # The cases dynamo's code holds on its stack are the fast ones.
    assert all(container_repr(v) is not None for v in _cases()[:14])


def test_a_tensor_changed_in_any_way_is_formatted_anew() -> None:
    x = torch.ones(2)
    held = [x]
    assert container_repr(held) == repr(held)
    x.data.add_(1)            # .data: no version bump, the bytes differ
    assert container_repr(held) == repr(held) == "[tensor([2., 2.])]"
    x.requires_grad_(True)
    assert container_repr(held) == repr(held)
    with torch.no_grad():
        x.mul_(3)
    assert container_repr(held) == repr(held)
    torch.set_printoptions(precision=2)
    try:
        y = [torch.tensor([1 / 3])]
        assert container_repr(y) == repr(y) == "[tensor([0.33])]"
    finally:
        torch.set_printoptions(profile="default")
    assert container_repr(y) == repr(y)


def test_a_summary_cuts_the_repr_and_gives_its_length() -> None:
    value = [torch.arange(64.0).reshape(8, 8)]
    assert summarize(value, 40) == f"{repr(value)[:39]}… ({len(repr(value))} chars)"
