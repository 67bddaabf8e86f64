"""Compiling a method of a plain class (bound method and a decorated method)
that reads and writes instance state, with a graph break.
"""
import torch


class Acc:
    def __init__(self, w):
        self.w = w
        self.calls = 0

    @torch.compile(backend="eager")
    def step(self, x):
        self.calls += 1              # attribute side effect
        y = x * self.w
        torch._dynamo.graph_break()
        return y + self.calls

    def plain(self, x):
        return (x - self.w).abs()


acc = Acc(torch.full((3,), 2.0))
x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"step {i}:", acc.step(x).tolist(), "calls:", acc.calls)
bound = torch.compile(acc.plain, backend="eager")   # compile a bound method
print("plain:", bound(x).tolist())
