"""A small training loop compiled with the backend named on the command
line (aot_eager: forward and backward graphs; eager: a forward graph), for
`b FILE:LINE` on a line inside the graph (tests/test_graph_line_breakpoints.py).
`split` after the backend: a graph break between the layers (two graphs).

It prints its losses and parameters (a plain run and a run under dyndbg must
print the same), then torch's own account of the graphs that ran: each
node's name, op and innermost user frame from node.meta["stack_trace"],
forward (the GraphModule that runs) and, for aot_eager, backward, read by
the program itself from its autograd graph (`grad_fn._forward_cls`, AOT's
CompiledFunction) or its `__compiled_fn_*` global (eager)."""
import re
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self, split=False):
        super().__init__()
        self.split = split
        self.l1 = torch.nn.Linear(4, 6)
        self.l2 = torch.nn.Linear(6, 1)

    def forward(self, x, y):
        h = torch.relu(self.l1(x))
        if self.split:
            torch._dynamo.graph_break()
        out = self.l2(h) * 2
        return ((out - y) ** 2).mean()


def _graph_module(obj, seen):
    """The GraphModule a compiled callable runs (a closure's `fx_g`)."""
    if id(obj) in seen or len(seen) > 100:
        return None
    seen.add(id(obj))
    if isinstance(obj, torch.fx.GraphModule):
        return obj
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            found = _graph_module(cell.cell_contents, seen)
        except ValueError:
            continue
        if found is not None:
            return found
    return None


def _print_nodes(part, gm):
    print("graph", part)
    for node in gm.graph.nodes:
        frames = re.findall(r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace") or "")
        where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "-"
        print("node", node.name, node.op, where)


def main(backend: str, split: bool) -> None:
    torch.manual_seed(0)
    model, x, y = Net(split), torch.randn(5, 4), torch.randn(5, 1)
    compiled = torch.compile(model, backend=backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        loss = compiled(x, y)
        loss.backward()
        print("loss", step, repr(loss.item()))
        opt.step()
    for name, p in model.named_parameters():
        print("param", name, repr(p.detach().sum().item()))
    print("--- torch's account ---")
    if backend == "eager":
        for name, value in list(globals().items()):
            if name.startswith("__compiled_fn"):
                _print_nodes("forward", value._torchdynamo_orig_callable.__self__)
    else:
        cls = compiled(x, y).grad_fn._forward_cls
        _print_nodes("forward", _graph_module(cls.compiled_fw, set()))
        _print_nodes("backward", _graph_module(cls.compiled_bw, set()))
    print("--- end ---")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "aot_eager", sys.argv[2:] == ["split"])
