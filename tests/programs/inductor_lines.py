"""Two functions compiled with inductor, called in a loop, for `b FILE:LINE`
on lines inside inductor graphs (tests/test_graph_line_inductor.py).

`warm` compiles first (graph 1); `body` compiles at its first call, after
it (graph 2): a breakpoint set at the first stop on a line of `body` is
pending until then. In `body`, inductor leaves the matmul to an extern
kernel and fuses relu, the scaling and the sum into one C++ kernel whose
line map names only the sum.

It prints its results (a plain run and a run under dyndbg must print the
same), then torch's own account, one JSON line: for each graph global (in
graph order), each node of dynamo's GraphModule with its op, the innermost
user frame of its node.meta["stack_trace"] and its users; for each output
code module inductor loaded (in load order), its file and its line map."""
import json
import re

import torch


def warm(x):
    return torch.sin(x) + 1


def body(x, w):
    a = x @ w
    b = torch.relu(a)
    c = b * 2.5 + 0.75
    return c.sum()


def _account() -> dict:
    from torch._inductor.codecache import PyCodeCache

    graphs = []
    found = [(int(re.match(r"__compiled_fn_(\d+)", name)[1]), name, value)
             for name, value in globals().items() if name.startswith("__compiled_fn")]
    for _, name, value in sorted(found):
        gm = value._torchdynamo_orig_callable
        gm = getattr(gm, "__self__", None) or gm.zero_grad.__self__   # dynamo's GraphModule
        nodes = []
        for node in gm.graph.nodes:
            frames = re.findall(r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace") or "")
            nodes.append({"name": node.name, "op": node.op,
                          "where": f"{frames[-1][0]}:{frames[-1][1]}" if frames else "-",
                          "trace": node.meta.get("stack_trace") or "",
                          "users": [u.name for u in node.users]})
        graphs.append({"global": name, "nodes": nodes})
    modules = []
    for module in PyCodeCache.modules:
        if hasattr(module, "call") or hasattr(module, "Runner"):
            lines, traces = PyCodeCache.linemaps.get(module.__file__) or ((), ())
            modules.append({"file": module.__file__, "linemap": list(zip(lines, traces))})
    return {"graphs": graphs, "modules": modules}


def main() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(4, 3), torch.randn(3, 5)
    compiled_warm = torch.compile(warm, backend="inductor")
    compiled_body = torch.compile(body, backend="inductor")
    for step in range(3):
        y = compiled_warm(x)
        print("step", step, repr(compiled_body(y + step, w).item()))
    print("account", json.dumps(_account()))


if __name__ == "__main__":
    main()
