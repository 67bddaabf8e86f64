"""`pytest --dyndbg` (README, "In pytest"): test_out_of_range fails inside
the resume function after pick's graph break."""
import torch


@torch.compile(backend="eager")
def pick(x, index):
    y = x * 2
    print("graph break")
    return y[index] + 1         # y[7]: IndexError inside the resume function's graph call


def test_ok():
    assert pick(torch.ones(3), torch.tensor([1])).item() == 3.0


def test_out_of_range():
    pick(torch.ones(3), torch.tensor([7]))
