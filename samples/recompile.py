"""Dynamo guards on shape and dtype: each new (shape, dtype) recompiles f.
Watch the guard failures and the three separate compiled code objects.
"""
import torch


# dynamic=False keeps shapes static, so a new shape forces a recompile.
@torch.compile(backend="eager", dynamic=False)
def f(x):
    return x * 2 + 1


# 1) f32[3]: first compile.
print("f32[3]:", f(torch.arange(3, dtype=torch.float32)).tolist())

# 2) f32[4]: shape guard fails -> recompile.
print("f32[4]:", f(torch.arange(4, dtype=torch.float32)).tolist())

# 3) i64[3]: dtype guard fails -> recompile.
print("i64[3]:", f(torch.arange(3, dtype=torch.int64)).tolist())
