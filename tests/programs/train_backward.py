"""A small training loop compiled with aot_eager, for `catch backward`
(tests/test_graph_backward.py). `python train_backward.py [one|split]`:
one graph, or two (a graph break between the layers). (inductor's
backward: tests/test_graph_inductor_backward.py.)

After training it prints its losses and parameters (a plain run and a run
under dyndbg must print the same), then torch's own account of each
graph's compiled backward: each backward node's name, op, innermost user
frame from node.meta["stack_trace"] and seq_nr, the names of the values it
returns (the gradients), and the forward graph's nodes with their seq_nr,
read by the program itself from the autograd graph of a last forward
(`grad_fn._forward_cls`, AOT's CompiledFunction)."""
import re
import sys
import types

import torch


class MLP(torch.nn.Module):
    def __init__(self, split: bool):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 6)
        self.l2 = torch.nn.Linear(6, 1)
        self.split = split

    def forward(self, x, y):
        h = torch.relu(self.l1(x))
        if self.split:
            torch._dynamo.graph_break()
        out = self.l2(h)
        return ((out - y) ** 2).mean()


def make(split: bool):
    """The model and its data, the same in every run (the test's eager run too)."""
    torch.manual_seed(0)
    return MLP(split), torch.randn(5, 4), torch.randn(5, 1)


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


def _function_classes(grad_fn, seen):
    """AOT's CompiledFunction classes in an autograd graph, nearest the loss first."""
    if grad_fn is None or grad_fn in seen:
        return []
    seen.add(grad_fn)
    found = []
    cls = getattr(grad_fn, "_forward_cls", None)
    if cls is not None and "compiled_bw" in vars(cls):
        found.append(cls)
    for next_fn, _ in grad_fn.next_functions:
        found.extend(_function_classes(next_fn, seen))
    return found


def main(mode: str) -> None:
    torch.set_printoptions(precision=10)   # here: the test imports this file for make()
    model, x, y = make(mode == "split")
    compiled = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        loss = compiled(x, y)
        loss.backward()
        print("loss", step, repr(loss.item()))
        opt.step()
    for name, p in model.named_parameters():
        print("param", name, repr(p.detach().sum().item()))
    print("--- torch's account ---")
    loss = compiled(x, y)
    for cls in _function_classes(loss.grad_fn, set()):
        gm = _graph_module(cls.compiled_bw, set())
        print("backward", cls.metadata.compile_id_str)
        for node in gm.graph.nodes:
            trace = node.meta.get("stack_trace") or ""
            frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
            where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "-"
            print("node", node.name, node.op, where, node.meta.get("seq_nr"))
            if node.op == "output":
                print("outputs", *[getattr(a, "name", "None") for a in node.args[0]])
        forward = _graph_module(cls.compiled_fw, set())
        for node in forward.graph.nodes:
            if node.op == "call_function":
                print("forward", node.name, node.meta.get("seq_nr"))
    print("--- end ---")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "one")
