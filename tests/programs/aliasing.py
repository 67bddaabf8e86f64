"""A function compiled for two arguments that are the same object ([0/0]), then
called with two different ones ([0/1]): dynamo guards `L['a'] is L['b']`."""
import torch


class Box:
    pass


@torch.compile(backend="eager")
def f(a, b, x):
    return x + 1 if a is b else x - 1


one, other = Box(), Box()
x = torch.zeros(2)
print("same:", f(one, one, x).tolist())
print("different:", f(one, other, x).tolist())
print("different again:", f(one, other, x).tolist())
