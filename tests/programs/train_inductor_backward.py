"""A small training loop compiled with inductor, for `catch backward` and
`catch nan` in inductor's compiled backward
(tests/test_graph_inductor_backward.py).

`python train_inductor_backward.py [train|nan|lines]`: train, two steps of
SGD; or nan, a model whose forward is finite and whose backward makes NaN
(the gradient of the sqrt a `where` discards, 0 * nan); or lines, train,
then print torch's own account of the backward (`account {json}`: the
backward graph's nodes with their stack traces, read before the first
backward(), and the backward output code module loaded with its line map),
for `b FILE:LINE` in inductor's backward (tests/test_graph_line_inductor_backward.py).

It prints, after the first backward(), whether AOT had compiled the
backward before it ran (its cache had it) and each parameter's gradient
(repr, 10 decimals); after training its losses and parameters. A plain run
and a run under dyndbg must print the same.
"""
import json
import sys

import torch


class MLP(torch.nn.Module):
    def __init__(self, nan: bool):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 6)
        self.l2 = torch.nn.Linear(6, 1)
        self.nan = nan

    def forward(self, x, y):
        z = self.l1(x)
        if self.nan:
            h = torch.where(z > 0, torch.sqrt(z), torch.zeros_like(z))
        else:
            h = torch.relu(z)
        out = self.l2(h)
        return ((out - y) ** 2).mean()


def make(nan: bool = False):
    """The model and its data, the same in every run (the test's eager run too)."""
    torch.manual_seed(0)
    return MLP(nan), torch.randn(5, 4), torch.randn(5, 1)


def main(mode: str) -> None:
    torch.set_printoptions(precision=10)
    model, x, y = make(mode == "nan")
    compiled = torch.compile(model, backend="inductor")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        loss = compiled(x, y)
        if step == 0:
            cls = loss.grad_fn._forward_cls
            print("backward compiled before it ran:", cls.compiled_bw is not None)
            if mode == "lines":
                nodes = _traced_nodes(cls)
        loss.backward()
        if step == 0:
            for name, p in model.named_parameters():
                print("grad", name, *[repr(v) for v in p.grad.flatten().tolist()])
        print("loss", step, repr(loss.item()))
        opt.step()
    for name, p in model.named_parameters():
        print("param", name, repr(p.detach().sum().item()))
    if mode == "lines":
        print("account", json.dumps({"nodes": nodes, "modules": _backward_modules()}))


def _traced_nodes(cls) -> dict:
    """The backward graph AOT traced (before its compile strips the meta):
    name -> its stack trace and the forward node it was recomputed from."""
    module = getattr(getattr(cls, "_lazy_backward_info", None), "bw_module", None)
    out = {}
    for node in (module.graph.nodes if module is not None else ()):
        origin = node.meta.get("from_node")
        out[node.name] = {"trace": node.meta.get("stack_trace"),
                          "from": origin[0].name if origin else None}
    return out


def _backward_modules() -> list:
    """The backward output code modules inductor loaded: file, line map."""
    from torch._inductor.codecache import PyCodeCache
    out = []
    for module in PyCodeCache.modules:
        file = getattr(module, "__file__", None)
        if not file or not hasattr(module, "call"):
            continue
        with open(file) as f:
            if "_backward" not in f.readline():
                continue
        lines, traces = PyCodeCache.linemaps.get(file) or ((), ())
        out.append({"file": file, "linemap": list(zip(lines, traces))})
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "train")
