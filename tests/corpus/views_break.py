"""Tensor views (view, transpose, slice) created before a graph break and used
after it, including an in-place write through a view to its base.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    v = x.view(2, 3)
    t = v.transpose(0, 1)            # non-contiguous view
    torch._dynamo.graph_break()
    t[0].fill_(-1.0)                 # writes through the view into x's storage
    return t.contiguous(), t.is_contiguous(), x[1:].sum()


for i in range(2):
    x = torch.arange(6, dtype=torch.float32)
    t, contig, s = f(x)
    print(f"call {i}:", t.tolist(), contig, s.item(), x.tolist())
