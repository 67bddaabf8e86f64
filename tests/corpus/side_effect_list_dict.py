"""Mutations of a list (append, extend) and a dict (setitem, pop) passed into
a compiled function, replayed by dynamo's bytecode around a graph break.
"""
import torch


@torch.compile(backend="eager")
def f(x, items, table):
    items.append(x + 1)              # list append
    table["double"] = x * 2          # dict setitem
    old = table.pop("old")           # dict pop
    torch._dynamo.graph_break()
    items.extend([x * 3, old])       # list extend after the break
    table["n"] = len(items)
    return x.sum()


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    items, table = [], {"old": torch.ones(2), "keep": 1}
    out = f(x, items, table)
    print(f"call {i}: out={out.item()}")
    print("  items:", [t.tolist() for t in items])
    print("  table:", {k: (v.tolist() if isinstance(v, torch.Tensor) else v)
                       for k, v in sorted(table.items())})
