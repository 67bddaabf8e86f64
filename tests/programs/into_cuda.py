"""A small model compiled by inductor on the device named on the command
line (cuda, or cpu to try the test's reading of it), with the mode named
second ("default" or "reduce-overhead": CUDA graphs), for
tests/test_graph_cuda.py. After the compiled calls it prints its result and
torch's own account of the output code it loaded: each kernel the code
defines (`NAME = async_compile.triton('NAME', ...)` or `.cpp_pybinding`)."""
import re
import sys

import torch


def make(device: str):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    return model.to(device), torch.randn(3, 8, device=device)


def forward(model, x):
    h = model(x)
    return (h * 2).sin().sum()


def main(device: str, mode: str) -> None:
    torch.set_printoptions(precision=10)
    model, x = make(device)
    compiled = torch.compile(forward, backend="inductor", mode=None if mode == "default" else mode)
    with torch.no_grad():
        for _ in range(3):      # cudagraph trees record on a later call than the first
            result = compiled(model, x)
    print("result", repr(result.item()))
    from torch._inductor.codecache import PyCodeCache
    print("--- torch's account ---")
    for module in list(PyCodeCache.modules):
        source = open(module.__file__).read()
        for name in re.findall(r"^(\w+) = async_compile\.(?:triton|cpp_pybinding|cpp)\(", source, re.M):
            print("kernel", name)
    print("--- end ---")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda", sys.argv[2] if len(sys.argv) > 2 else "default")
