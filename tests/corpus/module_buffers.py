"""An nn.Module with registered buffers (a running count updated in place and
a constant table), compiled; forward has a graph break.
"""
import torch


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("table", torch.arange(3, dtype=torch.float32) * 10)

    def forward(self, x):
        self.steps.add_(1)               # in-place buffer update
        y = x + self.table
        torch._dynamo.graph_break()
        return y * self.steps


m = torch.compile(Counter(), backend="eager")
x = torch.ones(3)
for i in range(2):
    print(f"call {i}:", m(x).tolist(), "steps:", m.steps.tolist())
print("buffers:", sorted(name for name, _ in m.named_buffers()))
