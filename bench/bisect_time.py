"""How long `graph bisect` takes on an inductor graph of 37 nodes, and how many
compiles it makes: tests/programs/wrong_ops.py's attention_block (layer
norms, attention, an MLP, reductions), compiled by inductor, bisected on the
inputs of its second call, with inductor's own wrong-kernel switch
(`cpp.inject_relu_bug_TESTING_ONLY = "accuracy"`) and without it, in float32
and bfloat16. Each case in a fresh process with an empty inductor cache
directory (its caches would make later runs look cheaper): every compile is
a first one, C++ kernels built. Prints; checks nothing.

    PYTHONPATH=. python bench/bisect_time.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASE = r'''
import sys, time
sys.path.insert(0, {programs!r})
import torch
import torch._inductor.config
import dyndbg.cache as dc
import wrong_ops
case = {case!r}
dtype = torch.bfloat16 if case == "bfloat16" else torch.float32
patch = {{"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}} if case == "wrong kernel" else {{}}
with torch._inductor.config.patch(patch):
    f = torch.compile(wrong_ops.attention_block, backend="inductor")
    args = wrong_ops.attention_inputs(dtype)
    start = time.perf_counter()
    f(*args)
    first = time.perf_counter() - start
    name = next(n for n in vars(wrong_ops) if n.startswith("__compiled_fn_"))
    number = int(name.split("_")[4])
    dc.graph_capture(number)
    f(*args)
    found = dc.graph_bisect(number)
nodes = len(dc.graph_copies.kept(name).graph.nodes)
verdict = (found.first.line_text().split(": max abs")[0] if found.first
           else "no node differs")
print(f"{{case:13}} graph of {{nodes}} nodes ({{found.nodes}} compared): {{verdict}}; "
      f"{{found.compiles}} compile(s), {{found.seconds:.2f}} s "
      f"(the program's first compile: {{first:.2f}} s)")
'''


def main() -> None:
    import torch
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}")
    for case in ("wrong kernel", "float32", "bfloat16"):
        code = CASE.format(programs=str(ROOT / "tests" / "programs"), case=case)
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
            ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 cwd=ROOT, env=env)
        print(ran.stdout.strip() or ran.stderr[-2000:])


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s in all)")
