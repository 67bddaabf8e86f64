"""Fast unit tests of graph bisect's pure parts (issue 38): the judgement of
one value against another, the verdict line, the command's options, and the
notebook magics' option parsing (issue 39)."""
from __future__ import annotations

import pytest
import torch

from dyndbg.dynamo.graphs.node_values import agreement, verdict_line
from dyndbg.notebook import parse
from dyndbg.ui.commands.graph_checks import parse_bisect_options
from dyndbg.ui.text.parsing import CommandError


def test_equal_values_agree_and_say_where_they_differ_most() -> None:
    eager = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    agreed = agreement(eager, eager.clone())
    assert agreed.agree and agreed.max_abs == 0.0 and agreed.note == ""


def test_a_wrong_element_differs_with_its_place_and_size() -> None:
    eager = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    compiled = eager.clone()
    compiled[1, 0] += 1
    agreed = agreement(eager, compiled, eager.double())
    assert not agreed.agree
    assert (agreed.where, agreed.max_abs) == ((1, 0), 1.0)
    assert agreed.max_rel == pytest.approx(1 / 3)
    assert verdict_line("h_2", "call_function torch.relu", "m.py:9", agreed, eager, compiled) == (
        "first differing node: h_2 (call_function torch.relu) at m.py:9: max abs 1, "
        "max rel 0.333, at [1, 0]: eager 3, compiled 4")


def test_float32_reordering_is_not_a_difference_against_fp64() -> None:
    """A sum in another order: off the eager value, yet no further from the
    float64 one than eager is (torch's same() passes it)."""
    torch.manual_seed(0)
    x = torch.randn(4096) * 1e3
    eager = x.sum().reshape(1)
    reordered = x.flip(0).sum().reshape(1)
    fp64 = x.double().sum().reshape(1)
    if torch.equal(eager, reordered):
        pytest.skip("no rounding difference on this machine")
    assert agreement(eager, reordered, fp64, rtol=0, atol=0).agree


def test_what_cannot_be_compared_element_by_element() -> None:
    shape = agreement(torch.zeros(2), torch.zeros(3))
    assert not shape.agree and shape.note == "torch.float32[2] against torch.float32[3]"
    kind = agreement(torch.zeros(2), 3)
    assert not kind.agree and kind.note == "Tensor against int"
    assert agreement(torch.tensor([float("nan")]), torch.tensor([float("nan")])).agree


def test_bisect_options() -> None:
    assert parse_bisect_options([]) == (1e-4, 1e-4, True, None)
    assert parse_bisect_options(["--atol", "0.5", "--no-fp64", "--save", "r.py",
                                 "--rtol", "1e-2"]) == (1e-2, 0.5, False, "r.py")
    for words, message in ((["--rtol"], "--rtol needs a value"),
                           (["--atol", "x"], "--atol takes a number, not 'x'"),
                           (["--rtol", "-1"], "--rtol takes a number >= 0"),
                           (["--fast"], "unknown option '--fast'")):
        with pytest.raises(CommandError, match=message):
            parse_bisect_options(words)


def test_magic_options_then_the_statement() -> None:
    options, statement = parse("-c 'b f' --record -c stack f(x, '--record')")
    assert options.commands == ["b f", "stack"] and options.record and not options.trace
    assert statement == "f(x, '--record')"
    assert parse("") == ((([], False, False, False, None)), "")
    options, statement = parse("--catch-trace 'f*' -c c g()")
    assert (options.catch_trace, options.commands, statement) == ("f*", ["c"], "g()")
    with pytest.raises(ValueError, match="unknown option '--nope'"):
        parse("--nope f(x)")
