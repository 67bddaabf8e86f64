"""Two ranks (torchrun, gloo on CPU) run a compiled step with a graph break
around an all_reduce: graph 1 computes each rank's part, the all_reduce sums
them across ranks (run eagerly: dynamo does not trace into it), and the resume
function's graph uses the sum. Each rank prints the same result.

    torchrun --nproc-per-node 2 samples/distributed_allreduce.py
    torchrun --nproc-per-node 2 -m dyndbg --rank 0 samples/distributed_allreduce.py

Run with plain python (or plain `python -m dyndbg`), it is a group of one rank.
"""
import os
import sys

import torch
import torch.distributed as dist


@torch.compiler.disable
def all_reduce(t):
    dist.all_reduce(t)                # sum over the ranks, in place
    return t


@torch.compile(backend="eager")
def step(x):
    y = x * 2 + 1                     # graph 1: this rank's part
    y = all_reduce(y)                 # graph break: the collective runs eagerly
    return (y - 1).sum()              # graph 2, in the resume function


if "RANK" in os.environ:          # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    dist.init_process_group("gloo")
else:                             # plain python: a group of one
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
rank = dist.get_rank()
result = step(torch.arange(4.0) + rank)
# One write per line: the ranks share stdout, and print() writes the newline apart.
sys.stdout.write(f"rank {rank}: result {result.item():g}\n")
dist.destroy_process_group()
