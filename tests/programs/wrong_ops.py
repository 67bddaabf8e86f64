"""Backends that make one op of dynamo's graph wrong, and graphs to compile
with them (tests/test_graph_bisect.py). Importable: `graph bisect --save`
saves these backends by reference."""
import torch

REWRITTEN: list[str] = []        # the name of each node a backend rewrote, in order


def relu_plus_one(x, inplace=False):
    return torch.relu(x) + 1


def _rewrite_relu(gm):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (torch.relu,
                                                          torch.nn.functional.relu):
            node.target = relu_plus_one
            REWRITTEN.append(node.name)
    gm.recompile()


def wrong_relu(gm, example_inputs):
    """relu computes relu + 1: dynamo's graph rewritten in place, run as it is."""
    _rewrite_relu(gm)
    return gm.forward


def wrong_relu_aot(gm, example_inputs):
    """The same rewrite, then AOT autograd (forward and backward) as aot_eager."""
    _rewrite_relu(gm)
    return torch._dynamo.lookup_backend("aot_eager")(gm, example_inputs)


def wrong_relu_when_fused(gm, example_inputs):
    """relu is wrong only in a graph returning one value (as block does, and a
    prefix of it returning one node), not when every node is returned: the
    shape of a bug that needs a fusion to show."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    if len(output.args[0]) == 1:
        _rewrite_relu(gm)
    return gm.forward


def block(x, w, b):
    h = x @ w + b
    h = torch.layer_norm(h, h.shape[-1:])
    h = torch.relu(h)                                   # the op the backends break
    g = h * torch.sigmoid(h)
    return g.sum(-1) + h.mean()


def inputs(training: bool = False, rows: int = 6):
    torch.manual_seed(0)
    x = torch.randn(rows, 8)
    w = torch.randn(8, 16, requires_grad=training)
    b = torch.randn(16, requires_grad=training)
    return x, w, b


def attention_block(x, wq, wk, wv, w1, w2, g, b):
    """A transformer block (layer norm, attention, an MLP, reductions): a graph
    of 30+ nodes for inductor."""
    h = torch.layer_norm(x, x.shape[-1:], g, b)
    q, k, v = h @ wq, h @ wk, h @ wv
    scores = q @ k.transpose(-1, -2) / 4.0
    a = torch.softmax(scores, dim=-1)
    h = x + a @ v
    m = torch.layer_norm(h, h.shape[-1:]) @ w1
    m = torch.relu(m)                                   # the op inductor's switch breaks
    h = h + m @ w2
    centred = h - h.mean(-1, keepdim=True)
    scale = torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5)
    y = centred * scale
    return y.sum(-1), y.amax(-1), y.var(-1), torch.logsumexp(y, -1), (y * y).cumsum(-1)


def attention_inputs(dtype=torch.float32, rows: int = 32, width: int = 16):
    torch.manual_seed(0)
    make = lambda *shape: (torch.randn(*shape) / shape[0] ** 0.5).to(dtype)  # noqa: E731
    return (torch.randn(rows, width).to(dtype), make(width, width), make(width, width),
            make(width, width), make(width, 4 * width), make(4 * width, width),
            torch.ones(width, dtype=dtype), torch.zeros(width, dtype=dtype))


class Normed(torch.nn.Module):
    """A module with buffers that a training-mode run updates in place."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.bn = torch.nn.BatchNorm1d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x)))
