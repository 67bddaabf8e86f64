"""torch's own marker: torch._dynamo.bytecode_debugger.breakpoint() makes
dynamo put `LOAD_CONST <BREAKPOINT>` into the generated code (no graph break).
dyndbg stops there as breakpoint 0; `disable 0` turns it off.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    y = x + 1
    torch._dynamo.bytecode_debugger.breakpoint()
    return y * 2


for i in range(2):
    print(f"call {i}:", f(torch.ones(3)).tolist())
