"""Guards from a global config attribute, a dict item and an argument, each
installed by its own line (tests/test_why.py)."""
import torch


class Config:
    flag = True


TABLE = {"scale": 2}


def f(x, n):
    if Config.flag:                    # a global config attribute
        x = x * TABLE["scale"]         # a dict item
    return x + n                       # an argument


def inputs():
    return torch.ones(3), 3


if __name__ == "__main__":
    print(torch.compile(f, backend="eager")(*inputs()).tolist())
