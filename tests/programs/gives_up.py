"""A function dynamo compiles again for each new value of a global, until it
hits config.recompile_limit and gives up; then another compiled function
runs (tests/test_why.py)."""
import torch

n = 0


def f(x):
    return x + n                       # the global each compile guards


def after(x):
    return x * 2                       # generated code that runs after the give-up


if __name__ == "__main__":
    compiled = torch.compile(f, backend="eager")
    for i in range(torch._dynamo.config.recompile_limit + 2):
        n = i
        compiled(torch.ones(1))        # the call dynamo gives up on
    print("done", torch._dynamo.config.recompile_limit,
          torch.compile(after, backend="eager")(torch.ones(1)).tolist())
