"""User objects that fight the debugger: a repr that raises, a huge repr, a
repr that hangs, and a tensor whose truth value is ambiguous."""
import time

import torch


class Raises:
    def __repr__(self):
        raise RuntimeError("no repr for you")


class Huge:
    def __repr__(self):
        return "h" * 1_000_000


class Hangs:
    def __repr__(self):
        time.sleep(60)
        return "never"


@torch.compile(backend="eager")
def f(x, raises, huge, hangs):
    y = x * 2
    print("in f", len(repr(huge)))
    return y + 1


print("result:", f(torch.ones(3), Raises(), Huge(), Hangs()).tolist())
