"""Two custom backends (tests/test_graph_backends.py): `tanh_to_sigmoid`
rewrites dynamo's graph in place (torch.tanh becomes torch.sigmoid) and
returns `gm.forward`; `wrapped_call` leaves the graph alone and returns a
function of its own that calls it. f is compiled with the first (static
shapes), g with the second (dynamic: an int input). Each backend prints,
the first time dynamo calls it, torch's listing of the graph it was given
and of the graph it leaves (`GraphModule.print_readable`)."""
import torch

SHOWN: set[str] = set()


def _show(backend: str, when: str, gm) -> None:
    print(f"--- {backend} {when} ---")
    print(gm.print_readable(print_output=False).rstrip())
    print(f"--- end {backend} {when} ---")


def tanh_to_sigmoid(gm, example_inputs):
    first = "tanh_to_sigmoid" not in SHOWN    # graph bisect calls it again, on parts
    SHOWN.add("tanh_to_sigmoid")
    if first:
        _show("tanh_to_sigmoid", "given", gm)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.tanh:
            node.target = torch.sigmoid
    gm.recompile()
    if first:
        _show("tanh_to_sigmoid", "left", gm)
    return gm.forward


def wrapped_call(gm, example_inputs):
    if "wrapped_call" not in SHOWN:
        SHOWN.add("wrapped_call")
        _show("wrapped_call", "given", gm)

    def run(*args):
        return gm(*args)
    return run


def f(x, y):
    h = x * y + 1
    h = torch.tanh(h)
    return h.sum()


def g(x, y, n: int):
    h = x - y * n
    h = torch.tanh(h)
    return h.sum()


print("backends:", tanh_to_sigmoid.__name__, wrapped_call.__name__)
x, y = torch.arange(4.0), torch.ones(4)
print("f:", round(torch.compile(f, backend=tanh_to_sigmoid)(x, y).item(), 4))
print("g:", round(torch.compile(g, backend=wrapped_call, dynamic=True)(x, y, 2).item(), 4))
print("graphs:", sorted(int(k.split("_")[4]) for k in globals() if k.startswith("__compiled_fn_")))
