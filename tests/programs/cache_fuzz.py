"""Random patches and guard expressions on a real entry: each is applied or
refused in one CacheError, the program never crashes, and after undo_all the
output is the original one again."""
import dis
import random
import sys

import torch

import dyndbg.cache as dc


def f(x, n):
    y = x * n + 1
    print("graph break")
    return y.sum() + n


cf = torch.compile(f, backend="eager")
x = torch.ones(3)
before = [cf(x, 2).item(), cf(x, 3).item()]
rng = random.Random(int(sys.argv[1]))
opnames = ["NOP", "POP_TOP", "LOAD_CONST", "LOAD_FAST", "STORE_FAST", "BINARY_OP",
           "RETURN_VALUE", "SWAP", "COPY", "BUILD_LIST", "LOAD_GLOBAL", "JUMP_FORWARD", "ZZZ"]
args = [None, "0", "1", "3", "100", "'s'", "x", "n", "zz", "+", "NULL + print", "(1, 2)", "[", "-7"]
expressions = ["n != 2", "n > 1", "x.sum() > 0", "undefined_name", "1/0", "(", "n", "x"]
applied = refused = 0
for _ in range(int(sys.argv[2])):
    entry = rng.choice([e.compile_id for e in dc.entries(f)])
    try:
        kind = rng.random()
        if kind < 0.7:
            size = len(dc.patching.listing(dc.code(entry)))
            action = rng.choice(["replace", "insert", "delete"])
            index = rng.randrange(-1, size + 2)
            if action == "delete":
                dc.patch(entry, action, index)
            else:
                dc.patch(entry, action, index, rng.choice(opnames), rng.choice(args))
        elif kind < 0.85:
            dc.add_guard(entry, rng.choice(expressions))
        else:
            dc.drop_guard(entry, rng.randrange(-1, 20))
        applied += 1
    except dc.CacheError:
        refused += 1
        continue
    if "-v" in sys.argv:
        print("applied", [e.text for e in dc.edits()], flush=True)
    try:
        cf(x, rng.choice([2, 3]))          # the patched code may well raise: its own error
    except Exception:  # noqa: BLE001
        pass
    if rng.random() < 0.3:
        dc.undo_all()
dc.undo_all()
after = [cf(x, 2).item(), cf(x, 3).item()]
print(f"applied {applied} refused {refused} same {before == after}")
