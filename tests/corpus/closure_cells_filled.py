"""Closures over values made inside the compiled frame (a list they append
to, a tensor computed there), a graph break, then the closures used on both
sides of it: dynamo's code keeps the frame's cells in a list on the value
stack and fills them afterwards (STORE_DEREF), as for transformers'
output-capturing hooks."""
import torch


@torch.compile(backend="eager")
def f(x, scale):
    seen = []
    total = x.sum()

    def keep(t):                 # closure over `seen` and `total`
        seen.append(t * total)
        return t

    y = keep(x * scale)          # graph 1
    torch._dynamo.graph_break()
    z = keep(y + 1)              # graph 2
    return z, len(seen), seen[-1]


x = torch.arange(3, dtype=torch.float32)
for scale in (2, 3):
    z, n, last = f(x, scale)
    print(f"scale {scale}:", z.tolist(), n, last.tolist())
