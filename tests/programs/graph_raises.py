"""A compiled graph (eager) that raises inside, at its indexing node, on its
second of three calls (an index out of range, known only as it runs): the
program catches the error. For stepping into a graph that does not return
(tests/test_into_graph.py)."""
import torch


@torch.compile(backend="eager")
def f(x, i):
    y = x.sin() * 2
    return y[i] + 1


for index in (1, 7, 2):
    try:
        print("result", f(torch.ones(3), torch.tensor([index])).tolist())
    except IndexError as error:
        print("caught", type(error).__name__)
print("done")
