"""A closure and a lambda created before a graph break live across it, so
dynamo's resume function receives them as cells/locals; the transformed code
object is then unhashable. Check that results are still correct.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    scale = 3.0

    def add_scaled(t):          # closure over `scale`
        return t + scale

    mul = lambda t: t * scale   # lambda capturing the same local
    h = x + 1                   # graph 1
    torch._dynamo.graph_break()  # explicit graph break
    return add_scaled(h) + mul(h)  # graph 2 uses both


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"call {i}:", f(x).tolist())   # expect 4 * (x + 1) + 3 = [7, 11, 15]
