"""Two cache entries, a graph break and a resume function: try the cache edits.

    python -m dyndbg samples/cache_edit.py
    (dyndbg) cache                  # f's entries: [0/0] for n == 2, [0/1] for any n
    (dyndbg) evict 0/1              # the next calls fall through or recompile
    (dyndbg) patch 0/0 ...          # see docs/cache-editing.md
"""
import sys

import torch

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "eager"


def f(x, n):
    y = x * n + 1
    # The resume function takes over here. (Not an f-string of n: from torch
    # 2.14 on, formatting n specialises the graph on its value.)
    print("  f: graph break")
    return y.sum() + n


compiled = torch.compile(f, backend=BACKEND)
x = torch.ones(3)
for n in [2, 3, 2, 5]:
    print(f"call n={n}: {compiled(x, n).item()}")
counters = torch._dynamo.utils.counters
print(f"frames compiled: {counters['stats']['unique_graphs']}")
