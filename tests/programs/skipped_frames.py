"""Frames dynamo skips: a graph break in a loop, which dynamo cannot resume
from, so the function runs eagerly from then on. `helper` is skipped when
g's generated code calls it after g's graph break at that call; `f`,
compiled itself, when the program calls it. The second calls of each run
eagerly with no compile."""
import torch


def helper(y, items):
    for i, it in enumerate(items):
        y = y + it
        if i == 1:
            print("helper", i)         # the break in helper's loop
    return y


@torch.compile(backend="eager")
def g(x):
    y = x + 1
    y = helper(y, [1.0, 2.0, 3.0])     # g's call of helper
    return y * 3


@torch.compile(backend="eager")
def f(x, items):
    total = x
    for i, it in enumerate(items):
        total = total + it
        if i == 1:
            print("mid", i)            # the break in f's loop
        total = total * 2
    return total


def main():
    print(g(torch.ones(2)))
    print(f(torch.ones(2), [1.0, 2.0, 3.0, 4.0]))   # the call dynamo skips f at
    print(f(torch.ones(2), [1.0, 2.0, 3.0, 4.0]))
    print(g(torch.ones(2)))


if __name__ == "__main__":
    main()
