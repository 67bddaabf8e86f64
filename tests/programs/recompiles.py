"""A function compiled again each time a global it reads changes (tests/test_why.py)."""
import torch

calls = 0


def step(x):
    return x * calls                   # the global a guard checks


if __name__ == "__main__":
    compiled = torch.compile(step, backend="eager")
    for i in range(3):
        calls = i
        print(compiled(torch.ones(2)).tolist())
