"""A data-dependent `if` in forward() breaks the graph: dynamo cannot trace
the branch, so it runs it eagerly and resumes in a per-branch resume function.
Step through both calls to see each branch's resume code.
"""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        # Deterministic weights: no random init.
        with torch.no_grad():
            self.lin.weight.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3) / 10)
            self.lin.bias.fill_(0.5)

    def forward(self, x):
        h = self.lin(x)
        if h.sum() > 0:        # data-dependent branch -> graph break
            return h.relu() * 2
        return h.abs() - 1


net = torch.compile(Net(), backend="eager")

pos = net(torch.ones(3))         # takes the `if` branch
neg = net(-torch.ones(3) * 4)    # takes the fall-through branch
print("positive input:", [round(v, 4) for v in pos.tolist()])
print("negative input:", [round(v, 4) for v in neg.tolist()])
