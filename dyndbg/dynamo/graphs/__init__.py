"""Compiled graphs: from a `__compiled_fn_*` global to its FX graphs, and run by hand.

- lookup: a graph's global to dynamo's FX graph and inductor's output code
- copies: each graph as dynamo traced it, kept before the backend sees it
- views: the traced and the compiled graph of one graph, and its backend
- checks: `graph capture | run | bisect | values`
- node_values, bisect, repro: each node's value eagerly, the first that differs, a script for it
- stepping: the code a graph runs as (eager, aot_eager), its line for each FX node
- compiled_fx, output_code, inductor_steps: inductor's CompiledFxGraph behind a graph, its
  output code, step by step, and its buffers
- backward, inductor_backward: AOT autograd's compiled backward (where autograd runs it, whose
  graph it is), and inductor's, step by step
- line_places, kernel_lines: the nodes of a user's line, and the kernels computing it, for
  `b FILE:LINE` inside graphs
(the stepping modules are imported where used, not here: they are not the
face the commands above use)
"""
from dyndbg.dynamo.graphs.bisect import Bisection
from dyndbg.dynamo.graphs.checks import (DEFAULT_TOLERANCE, GraphRun, NodeValues, captured,
                                         graph_bisect, graph_capture, graph_run, graph_values)
from dyndbg.dynamo.graphs.lookup import GraphInfo, graph_info
from dyndbg.dynamo.graphs.views import GraphViews, View, graph_views
from dyndbg.dynamo.graphs.node_values import verdict_line

__all__ = ["Bisection", "DEFAULT_TOLERANCE", "GraphInfo", "GraphRun", "GraphViews", "NodeValues",
           "View", "captured", "graph_bisect", "graph_capture", "graph_info", "graph_run",
           "graph_values", "graph_views", "verdict_line"]
