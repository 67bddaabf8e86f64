"""The pure parts of stepping into a graph (issue 50): a line of a
GraphModule's code to its node, the values a frame holds, the text of a
graph stop, and the one line for a graph with no way in."""
from __future__ import annotations

import linecache
import operator

import pytest
import torch
import torch.fx

from dyndbg.dynamo.graphs.stepping import (MISSING, GraphCode, NodeStep, NoWayIn,
                                           runnable_graph, target_text)
from dyndbg.ui.text import graph_steps


class _Small(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2
        return y.sum()


def _graph() -> GraphCode:
    gm = torch.fx.symbolic_trace(_Small())
    code = type(gm).forward.__code__
    return GraphCode("__compiled_fn_1_x", 1, "forward", "eager", gm, code, list(gm.graph.nodes))


def test_each_line_of_the_code_is_the_node_its_source_assigns() -> None:
    """FX's own source text is the oracle: a node's line assigns its name
    (the output's returns)."""
    graph = _graph()
    code = graph.code
    assert code is not None
    lines = sorted({line for _, line in __import__("dis").findlinestarts(code) if line})
    seen = []
    for number in lines:
        node = graph.node_at(number)
        source = linecache.getline(code.co_filename, number).strip()
        if source.startswith("def forward"):
            assert node is None                 # the line of the code's start
            continue
        assert node is not None, (number, source)
        if node.op == "output":
            assert source.startswith("return"), source
        else:
            assert source.startswith(f"{node.name} = "), (node.name, source)
        seen.append(node.name)
    assert [n.name for n in graph.nodes if n.op != "placeholder"] == \
        [name for name in dict.fromkeys(seen) if name != "x"]


def test_lines_outside_the_graph_are_no_node() -> None:
    graph = _graph()
    assert graph.node_at(None) is None
    assert graph.node_at(-5) is None
    assert graph.node_at(10_000) is None


def test_values_skip_freed_names_and_the_output() -> None:
    graph = _graph()
    names = [n.name for n in graph.nodes]
    held = {names[0]: 1, names[1]: None, "output": 3, "unrelated": 4}
    assert graph.values(held) == [(names[0], 1)]


def test_stopped_ops_are_the_computing_nodes() -> None:
    graph = _graph()
    assert [graph.stepped(n) for n in graph.nodes] == \
        [n.op != "placeholder" for n in graph.nodes]


def test_target_names() -> None:
    assert target_text("sum") == "sum"
    assert target_text(operator.mul) == "operator.mul"
    assert target_text(torch.relu) == "torch.relu"
    assert target_text(torch.ops.aten.addmm.default) == "torch.ops.aten.addmm.default"


def test_stop_text(tmp_path) -> None:
    source = tmp_path / "user.py"
    source.write_text("a = 1\nh = torch.relu(x)\n")
    step = NodeStep("h", "call_function", "torch.relu", 2, 5, (str(source), 2),
                    [("x", 3), ("gone", MISSING)])
    lines = graph_steps.stop_lines("[graph 4 eager forward]", step)
    assert lines[0] == "[graph 4 eager forward] node 3/5 h: call_function torch.relu"
    assert lines[1] == "  at user.py:2: h = torch.relu(x)"
    assert lines[2] == "  in  x = 3"
    assert lines[3] == "  in  gone = not held by the graph's frame"
    output = NodeStep("output", "output", "output", 4, 5, None, [])
    assert graph_steps.stop_lines("[g]", output)[:2] == \
        ["[g] node 5/5 output: the graph returns",
         "  at no line of yours (torch kept no stack trace for this node)"]
    # the prompt's toolbar at a graph stop: where in the graph
    assert graph_steps.toolbar_text("[graph 4 eager forward]", step) == \
        "graph 4 eager forward | node 3/5 h"


def test_values_text() -> None:
    assert graph_steps.values_lines([]) == ["no node value is held yet"]
    assert graph_steps.values_lines([("a", 1), ("long", 2)]) == ["a    = 1", "long = 2"]


def test_no_way_in_is_one_line() -> None:
    with pytest.raises(NoWayIn) as raised:
        runnable_graph("__compiled_fn_3_abc", lambda *a: a, "mine")
    assert str(raised.value) == "graph 3's backend (mine) gives no way in; stepping over"
    with pytest.raises(NoWayIn) as raised:
        runnable_graph("not_a_graph", lambda: None, None)
    assert "\n" not in str(raised.value)
