"""fullgraph=True: the function compiles to a single graph with no breaks;
torch.compiler.is_compiling() is True while tracing, False when run eagerly.
"""
import torch


def body(x):
    if torch.compiler.is_compiling():
        return x * 2 + 1             # taken in the compiled graph
    return x * 0                     # taken when run eagerly


@torch.compile(backend="eager", fullgraph=True)
def f(x, y):
    return body(x) + y.relu(), (x @ y).sum()


x = torch.arange(3, dtype=torch.float32)
y = torch.ones(3) - 2
for i in range(2):
    a, s = f(x, y)
    print(f"call {i}:", a.tolist(), s.item())
print("eager body:", body(x).tolist())
