"""A backend with a wrong rewrite, and the node it makes wrong (README,
"Where a compiled result goes wrong"): `fast_gelu_backend` swaps gelu for
a cheaper approximation in the graph dynamo gives it, and the model's
output drifts. `graph bisect` names the node."""
import torch


def fast_gelu(x):
    return x * torch.sigmoid(1.702 * x)     # gelu's sigmoid approximation


def fast_gelu_backend(gm, example_inputs):
    """An 'optimizing' backend: rewrites dynamo's graph in place."""
    for node in gm.graph.nodes:
        if node.target in (torch.nn.functional.gelu, torch._C._nn.gelu):
            node.target = fast_gelu
    gm.recompile()
    return gm.forward


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.fc1 = torch.nn.Linear(16, 64)
        self.fc2 = torch.nn.Linear(64, 16)

    def forward(self, x):
        h = self.norm(x)
        h = self.fc1(h)
        h = torch.nn.functional.gelu(h)
        h = self.fc2(h)
        return torch.softmax(h, dim=-1)


torch.manual_seed(0)
model = MLP()
compiled = torch.compile(model, backend=fast_gelu_backend)
x = torch.randn(4, 16)
with torch.no_grad():
    print(f"max difference: {(compiled(x) - model(x)).abs().max():.2e}")
