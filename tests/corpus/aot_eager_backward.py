"""aot_eager backend with autograd: a compiled loss with a graph break, then
backward() through both AOT-traced graphs; gradients printed.
"""
import torch


@torch.compile(backend="aot_eager")
def loss_fn(w, x):
    h = (x * w).tanh()
    torch._dynamo.graph_break()
    return (h * h).sum()


x = torch.arange(3, dtype=torch.float32) / 4
for i in range(2):
    w = torch.ones(3, requires_grad=True)
    loss = loss_fn(w, x)
    loss.backward()
    print(f"call {i}: loss={round(loss.item(), 4)} grad={[round(g, 4) for g in w.grad.tolist()]}")
