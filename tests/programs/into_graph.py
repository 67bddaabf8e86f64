"""An MLP compiled with the backend named on the command line (eager,
aot_eager, inductor), for stepping into its graph (tests/test_into_graph.py,
tests/test_graph_inductor.py). After
the compiled call it prints its result and torch's own account of the graph
dynamo built: each node's name, op and innermost user frame from
node.meta["stack_trace"], read from the program's own `__compiled_fn_*` global."""
import re
import sys

import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(8, 16)
        self.l2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        y = self.l2(h) * 2
        return y.sum()


def make():
    """The model and its input, the same in every run (the test's eager run too)."""
    torch.manual_seed(0)
    return MLP(), torch.randn(3, 8)


def main(backend: str) -> None:
    torch.set_printoptions(precision=10)   # here: the test imports this file for make()
    model, x = make()
    compiled = torch.compile(model, backend=backend)
    print("result", repr(compiled(x).item()))
    print("--- torch's account ---")
    for name, value in list(globals().items()):
        if not name.startswith("__compiled_fn"):
            continue
        gm = value._torchdynamo_orig_callable
        gm = getattr(gm, "__self__", None) or gm.zero_grad.__self__   # dynamo's GraphModule
        for node in gm.graph.nodes:
            frames = re.findall(r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace") or "")
            where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "-"
            print("node", node.name, node.op, where)
    print("--- end ---")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "eager")
