"""torch.nn containers as arguments of a compiled function with a graph
break: one with children, one empty (an empty Sequential is the identity)."""
import torch
from torch import nn

layers = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
blocks = nn.ModuleList([nn.Linear(3, 3)])
nothing = nn.Sequential()


@torch.compile(backend="eager")
def f(layers, blocks, nothing, x):
    y = layers(x)
    torch._dynamo.graph_break()
    return nothing(blocks[0](y)) + 1


torch.manual_seed(0)
print(f(layers, blocks, nothing, torch.ones(2, 3)).shape)
