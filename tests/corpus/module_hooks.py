"""An nn.Module with parameters, a forward pre-hook (rescales the input) and a
forward hook (modifies the output). torch.compile(m) compiles the
hooks and forward as separate frames; a compiled caller inlines them all.
"""
import torch


class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.eye(3) * 2)
        self.b = torch.nn.Parameter(torch.arange(3, dtype=torch.float32))

    def forward(self, x):
        return x @ self.w + self.b


def pre_hook(mod, args):
    return (args[0] + 1,)                # replaces the input


def post_hook(mod, args, out):
    return out * 10                      # replaces the output


m = Lin()
m.register_forward_pre_hook(pre_hook)
m.register_forward_hook(post_hook)
cm = torch.compile(m, backend="eager")
caller = torch.compile(lambda x: m(x).sum(), backend="eager")
x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    out = cm(x)
    print(f"call {i}:", out.tolist(), out.requires_grad, caller(x).item())
