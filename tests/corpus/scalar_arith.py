"""Python int and float scalar arithmetic mixed with tensors: constants folded
into the graph, a float argument, and int math on a size, with a graph break.
"""
import torch


@torch.compile(backend="eager")
def f(x, alpha):
    n = x.numel()                    # Python int from a size
    k = n * 2 + 1                    # pure Python int arithmetic
    y = x * alpha + k / 4            # float scalar and float division
    torch._dynamo.graph_break()
    z = (y // 2) + (n % 2) - 0.25    # floor-div on a tensor, int modulo
    return z, k, alpha * 2


x = torch.arange(5, dtype=torch.float32)
for alpha in (1.5, 1.5):
    z, k, a2 = f(x, alpha)
    print("z:", z.tolist(), "k:", k, "alpha*2:", a2)
