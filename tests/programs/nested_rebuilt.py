"""At the graph break dynamo rebuilds the nested function g: its generated
code loads g's code object and the module's globals dict as constants."""
import torch


@torch.compile(backend="eager")
def f(x):
    def g(y):
        return y + x
    torch._dynamo.graph_break()
    return g(x)


print(f(torch.ones(2)))
