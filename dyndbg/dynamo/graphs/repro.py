"""`graph bisect --save FILE`: a script that reproduces a differing node
without dyndbg, to attach to a PyTorch bug report.

FILE holds the check, readable: the graph up to the node as FX code (in a
comment), the backend and the torch config that differ from the defaults
(`torch._dynamo.debug_utils.generate_config_string`, as torch's minifier
writes them), and the very function dyndbg judged with
(node_values.agreement, copied from its source). Beside it, FILE's stem +
`.pt` (torch.save) holds the graph module, the call's inputs and the
backend (a function is saved by reference: it must be importable where
the script runs). Run, it compiles the graph with the backend, runs it
eagerly, in float64 and compiled on the inputs, and prints the verdict line
`graph bisect` printed.
"""
from __future__ import annotations

import inspect
import os
import textwrap
from typing import Any, Sequence

from dyndbg.dynamo.graphs import node_values
from dyndbg.dynamo.graphs.bisect import Bisection, subgraph
from dyndbg.dynamo.backends import backend_function, backend_name
from dyndbg.dynamo.graphs.copies import KeptGraph

_SCRIPT = '''"""dyndbg graph bisect: graph {graph}, node {node} ({target}) compiled by {backend}
differs from the graph run eagerly.

Run: python {script}   ({data} beside it; made with torch {version})
"""
from __future__ import annotations

import math
import os
from typing import Any, NamedTuple

import torch
from torch._dynamo.debug_utils import cast_to_fp64, clone_inputs_retaining_gradness

{config}
# The graph up to {node}, as dynamo traced it:
{code}
NODE, TARGET, LINE = {node!r}, {target!r}, {line!r}
RTOL, ATOL, FP64 = {rtol!r}, {atol!r}, {fp64!r}


{agreement}


def main() -> None:
    saved = torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), {data!r}),
                       weights_only=False)
    graph, inputs, backend = saved["graph"], saved["inputs"], saved["backend"]
    if isinstance(backend, str):
        raise SystemExit(f"the backend {{backend}} could not be saved (not importable "
                         "by name): load it here as `backend`")
    with torch.no_grad():
        (eager,) = graph(*clone_inputs_retaining_gradness(inputs))
    fp64 = None
    if FP64:
        model, high_inputs = cast_to_fp64(graph, clone_inputs_retaining_gradness(inputs))
        with torch.no_grad():
            (fp64,) = model(*high_inputs)
    saved = torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), {data!r}),
                       weights_only=False)
    compiled_fn = backend(saved["graph"], clone_inputs_retaining_gradness(inputs))
    (compiled,) = compiled_fn(*clone_inputs_retaining_gradness(inputs))
    agreed = agreement(eager, compiled.detach(), fp64, rtol=RTOL, atol=ATOL)
    if agreed.agree:
        print(f"no node differs: {{NODE}} agrees here (rtol={{RTOL:g}}, atol={{ATOL:g}})")
    else:
        print(verdict_line(NODE, TARGET, LINE, agreed, eager, compiled))


if __name__ == "__main__":
    main()
'''


def write(path: str, kept: KeptGraph, found: Bisection, inputs: Sequence[Any]) -> str:
    """Write the script at `path` and its data beside it; returns the data's path."""
    import torch
    from torch._dynamo.debug_utils import generate_config_string
    first = found.first
    assert first is not None
    part = subgraph(kept.private_module(), [first.node])   # a new GraphModule: no dynamo meta
    backend = getattr(kept.backend, "_torchdynamo_orig_backend", kept.backend)
    data = os.path.splitext(os.path.basename(path))[0] + ".pt"
    data_path = os.path.join(os.path.dirname(os.path.abspath(path)), data)
    saved: dict[str, Any] = {"graph": part, "inputs": list(node_values.clones(inputs)),
                             "backend": backend if _importable(backend) else backend_name(backend)}
    try:
        torch.save(saved, data_path)
    except Exception:  # noqa: BLE001 - a backend pickle cannot take (a closure, a lambda)
        saved["backend"] = backend_name(backend)
        torch.save(saved, data_path)
    agreement = "\n\n\n".join(textwrap.dedent(inspect.getsource(f)) for f in
                              (node_values.Agreement, node_values.agreement,
                               node_values.verdict_line))
    code = "\n".join("#   " + line for line in part.code.strip().splitlines())
    text = _SCRIPT.format(graph=found.graph, node=first.node, target=first.describe(),
                          line=first.line, backend=backend_name(backend),
                          script=os.path.basename(path), data=data, version=torch.__version__,
                          config=generate_config_string(stable_output=False).strip() + "\n",
                          code=code, rtol=found.rtol, atol=found.atol, fp64=found.fp64,
                          agreement=agreement)
    with open(path, "w") as out:
        out.write(text)
    return data_path


def _importable(backend: Any) -> bool:
    """Whether pickle's reference to the backend's function can be loaded elsewhere:
    not one of the script's own (`__main__`) nor a local function."""
    function = backend_function(backend)
    module = getattr(function, "__module__", None) or ""
    return module != "__main__" and "<locals>" not in getattr(function, "__qualname__", "")
