"""Into a compiled graph (README: "Inside a compiled graph"): a small model
trained for two steps, compiled with aot_eager. At the graph's call `s`
steps into the forward graph node by node, each node at your line with the
values it reads; `catch backward` stops in the compiled backward inside
`loss.backward()`, each gradient node at the forward line it differentiates."""
import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(4, 8)
        self.l2 = torch.nn.Linear(8, 1)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        return self.l2(h).sigmoid()


torch.manual_seed(0)
model = MLP()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x, y = torch.randn(6, 4), torch.rand(6, 1)
compiled = torch.compile(model, backend="aot_eager")
for i in range(2):
    loss = torch.nn.functional.mse_loss(compiled(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(f"step {i}: loss {loss.item():.4f}")
