"""Guards from a global config attribute, a dict item and an argument, each
installed by its own line, the dict item's in a function that f calls: its
user stack has both lines (tests/test_why.py)."""
import torch


class Config:
    flag = True


TABLE = {"scale": 2}


def scaled(x):
    return x * TABLE["scale"]          # a dict item, read in a function f calls


def f(x, n):
    if Config.flag:                    # a global config attribute
        x = scaled(x)                  # a global function, inlined
    return x + n                       # an argument


def inputs():
    return torch.ones(3), 3


if __name__ == "__main__":
    print(torch.compile(f, backend="eager")(*inputs()).tolist())
