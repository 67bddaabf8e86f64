"""A compiled function that makes a NaN (and an Inf) at one op, in its
second and third calls (tests/test_catch_nan.py). `python nan_graph.py
BACKEND[,BACKEND...]`: compiled with each backend in turn.

After its compiled run it prints its own eager account: the same function
run eagerly under a TorchFunctionMode that notes the first op whose output
is not finite, its line here, and which elements are NaN and Inf.
"""
import sys

import torch
from torch.overrides import TorchFunctionMode


def f(x, w):
    h = x @ w
    s = torch.tanh(h)
    shifted = s - 0.25
    y = torch.log(shifted)
    z = y * 2 + 1
    return z.sum(-1)


class FirstBad(TorchFunctionMode):
    """The first torch function (in f) whose tensor output is not finite."""

    def __init__(self):
        super().__init__()
        self.first = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.first is None and isinstance(out, torch.Tensor) and out.is_floating_point() \
                and not bool(torch.isfinite(out).all()):
            caller = sys._getframe(1)
            self.first = (getattr(func, "__name__", str(func)), caller.f_lineno, out.detach().clone())
        return out


def inputs(step):
    torch.manual_seed(step)
    x = torch.rand(3, 4)
    w = torch.eye(4) * (0.1 if step == 0 else 1.0)
    if step == 0:
        x = x + 3.0                               # tanh(0.3 .. 0.4) > 0.25: all finite
    else:
        x[0, 1] = -1.0                            # log of a negative: nan
        x[1, 2] = float(torch.atanh(torch.tensor(0.25)))  # tanh = 0.25: log(0) = -inf
    return x, w


def g(x, w):
    """Finite forward, an Inf in the backward: sqrt's gradient at 0."""
    r = torch.sqrt(torch.relu(x @ w))
    return (r * 3).sum()


def train(backend):
    """`train BACKEND`: g's gradient, compiled; then the eager account: the
    gradient reaching sqrt's input (what sqrt's backward computes), its Inf and NaN."""
    compiled = torch.compile(g, backend=backend)
    for step in range(2):
        x, w = inputs(step)
        x.requires_grad_(True)
        compiled(x, w).backward()
        print(f"train step {step}: {x.grad.tolist()}")
    print("--- eager ---")
    for step in range(2):
        x, w = inputs(step)
        x.requires_grad_(True)
        inner = torch.relu(x @ w)
        seen = []
        inner.register_hook(lambda grad: seen.append(grad.detach().clone()))
        (torch.sqrt(inner) * 3).sum().backward()
        grad = seen[0]
        line = next(i for i, text in enumerate(open(__file__), 1) if "torch.sqrt(torch.relu" in text)
        print(f"step {step} first sqrt {line} nan {torch.nonzero(torch.isnan(grad)).tolist()} "
              f"inf {torch.nonzero(torch.isinf(grad)).tolist()} of {grad.numel()}")
    print("--- end ---")


def opaque(gm, example_inputs):
    """A backend that gives a debugger no way in: a function of its own."""
    def run(*args):
        return gm(*args)
    return run


def main():
    if sys.argv[1:2] == ["train"]:
        return train(sys.argv[2])
    for backend in (sys.argv[1] if len(sys.argv) > 1 else "eager").split(","):
        torch._dynamo.reset()
        compiled = torch.compile(f, backend=opaque if backend == "opaque" else backend)
        for step in range(3):
            x, w = inputs(step)
            out = compiled(x, w)
            print(f"{backend} step {step}: {out.tolist()}")
    print("--- eager ---")
    for step in range(3):
        x, w = inputs(step)
        mode = FirstBad()
        with mode:
            f(x, w)
        if mode.first is None:
            print(f"step {step} finite")
            continue
        name, line, value = mode.first
        nan = torch.nonzero(torch.isnan(value)).tolist()
        inf = torch.nonzero(torch.isinf(value)).tolist()
        print(f"step {step} first {name} {line} nan {nan} inf {inf} of {value.numel()}")
    print("--- end ---")


if __name__ == "__main__":
    main()
