"""f breaks its graph at print(), and its resume function breaks again at a
data-dependent `if` after inlining scale(): what tests/test_symbolic_trace.py
steps through while dynamo compiles it. At the end it prints what dynamo
made, as torch reports it (its bytecode hook, the backend's graphs, the
guards through guard_export_fn): a run with compile stops must print the same.
With --explain: torch._dynamo.explain's break reasons for the same f."""
import json
import re
import sys
import types

import torch
import torch._dynamo
from torch._dynamo import convert_frame
from torch._guards import CompileContext

MADE = {"code": [], "graphs": [], "guards": []}


def scale(t, k):
    return t * k                      # inlined by dynamo


def f(x, n):
    a = x.sin() + n
    print("first graph break")        # print() is not traceable: graph break 1
    b = scale(a, 2).relu()            # traced in the resume function
    if b.sum() > 0:                   # data-dependent branch: graph break 2
        b = b + 1
    return b.cos()


def bytecode_hook(code, new_code):
    consts = [c.co_name if isinstance(c, types.CodeType) else repr(c) for c in new_code.co_consts]
    # A compiled graph's global name ends in a uuid made afresh each run.
    names = [re.sub(r"^(__compiled_fn_\d+)_[0-9a-f_]{36}$", r"\1", n) for n in new_code.co_names]
    MADE["code"].append([str(CompileContext.current_compile_id()), code.co_name,
                         new_code.co_code.hex(), names, consts])


def backend(gm, example_inputs):
    MADE["graphs"].append(gm.code)
    return gm.forward


def guard_export(guards):
    MADE["guards"].append(sorted(f"{g.name} {g.create_fn_name()}" for g in guards))


x = torch.arange(4, dtype=torch.float32)
if "--explain" in sys.argv:
    explained = torch._dynamo.explain(f)(x, 3)
    for reason in explained.break_reasons:
        print("break reason:", reason.reason.strip().splitlines()[0])
    sys.exit(0)
convert_frame.register_bytecode_hook(bytecode_hook)
compiled = torch._dynamo.optimize(backend, guard_export_fn=guard_export)(f)
print("f:", [round(v, 4) for v in compiled(x, 3).tolist()])
print("f again:", [round(v, 4) for v in compiled(x + 1, 4).tolist()])  # recompiles f: 0/1
print("made:", json.dumps(MADE, sort_keys=True))
