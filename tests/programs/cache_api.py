"""dyndbg.cache on real torch.compile: every edit, its effect on the output and on
torch's compile counters, and undo. Prints `name: value` lines the test reads."""
import sys

import torch

import dyndbg.cache as dc

BACKEND = sys.argv[1]
counters = torch._dynamo.utils.counters


def f(x, n):
    y = x * n + 1
    print("graph break")
    return y.sum() + n


cf = torch.compile(f, backend=BACKEND)
x = torch.ones(3)


def call(n):
    return cf(x, n).item()


def graphs():
    return counters["stats"]["unique_graphs"]


def show(name, value):
    print(f"{name}: {value}", flush=True)


show("first", [call(2), call(3)])               # [0/0] for n == 2, [0/1] for any n
show("entries", [e.compile_id for e in dc.entries(f)])
show("check 0/0 n=2", dc.check("0/0", x, 2)[0])
show("check 0/0 n=5", dc.check("0/0", x, 5)[0])

g0 = graphs()
e = dc.evict("0/1")
show("evict 0/1, n=5", call(5))                  # falls through: recompiles
show("evict new graphs", graphs() - g0)
dc.undo(e.number)
show("evict undo also evicted", list(e.retired))  # compiled while 0/1 was evicted

e = dc.add_guard("0/0", "n != 2")
g0 = graphs()
show("guard add, n=2", call(2))                  # 0/0 refused; a dynamic entry runs it
show("guard add new graphs", graphs() - g0)
dc.undo(e.number)

number = [g.number for g in dc.guards("0/0") if "EQUALS_MATCH" in g.text][0]
e = dc.drop_guard("0/0", number)
show("guard drop, n=5", call(5))                 # 0/0's graph baked n=2: (3*2+1)*3 + 5
dc.undo(e.number)
show("after undo, n=5", call(5))
show("after undo, n=5 ran", dc.entries(f)[0].compile_id)  # torch moves the one used first

e = dc.force("0/0", once=True)
show("force once, n=7", [call(7), call(7)])      # forced, then normal again

code = dc.code("0/0")
ret = [k for k, i in enumerate(dc.patching.listing(code)) if i.opname == "RETURN_VALUE"][-1]
p1 = dc.patch("0/0", "insert", ret, "LOAD_CONST", 100)
p2 = dc.patch("0/0", "insert", ret + 1, "BINARY_OP", "+")
g0 = graphs()
show("patched, n=2", call(2))
show("patch new graphs", graphs() - g0)
show("edits", [ed.text for ed in dc.edits()])
show("run 0/0 by hand, n=2", dc.run("0/0", x, 2).item())
dc.undo_all()
show("undo all, n=2", call(2))
show("run 0/0 by hand after undo", dc.run("0/0", x, 2).item())

# A constant given as the object itself: a tensor (its repr is no literal).
constant = torch.tensor([100.0, 200.0])
p1 = dc.patch("0/0", "insert", ret, "LOAD_CONST", constant)
dc.patch("0/0", "insert", ret + 1, "BINARY_OP", "+")
show("tensor patched, n=2", cf(x, 2).tolist())
show("tensor patch edit", p1.text)
show("tensor patch loads the object itself",
     any(c is constant for c in dc.EDITS.code_to_run("0/0")[1].co_consts))
dc.undo_all()
show("tensor patch undone, n=2", call(2))


def alternative(x, n):
    return x.sum() * 0 + 42


e = dc.install("0/0", alternative.__code__)
show("installed, n=2", [call(2), dc.run("0/0", x, 2).item()])
dc.undo(e.number)

try:
    dc.patch("0/0", "insert", 3, "POP_TOP")
except dc.CacheError as error:
    show("refused", error)
show("final", [call(2), call(3), call(5)])
