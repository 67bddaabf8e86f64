"""torch.autocast("cpu", dtype=torch.bfloat16) spanning a graph break: the
matmul before and after the break runs in bfloat16, the add after exit in fp32.
"""
import torch


@torch.compile(backend="eager")
def f(a, b):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x = a @ b                    # bf16 under autocast
        torch._dynamo.graph_break()
        y = x @ b                    # still bf16 in the resume function
    z = y.float() + 1                # fp32 after the block
    return x, y, z


a = torch.eye(2) * 2
b = torch.arange(4, dtype=torch.float32).reshape(2, 2)
for i in range(2):
    x, y, z = f(a, b)
    print(f"call {i}:", x.dtype, y.dtype, z.dtype, z.tolist())
print("autocast enabled after:", torch.is_autocast_enabled("cpu"))
