"""Recompile when a compiled module's plain Python attribute changes
(self.scale = 2 then 3): dynamo guards on the attribute's value.
"""
import torch


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2

    def forward(self, x):
        return x * self.scale + 1


m = Scale()
cm = torch.compile(m, backend="eager")
x = torch.arange(3, dtype=torch.float32)
print("scale=2:", cm(x).tolist())
m.scale = 3
print("scale=3:", cm(x).tolist())       # guard fails -> recompile
print("scale=3 again:", cm(x).tolist())  # cache hit
