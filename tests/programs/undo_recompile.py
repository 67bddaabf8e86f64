"""Undo after a recompile (issue 23, item 4): an entry compiled while an evict or a
`guard add` was active goes at undo only when the edit caused its compile.

`python undo_recompile.py api`: three cases through dyndbg.cache, each function
beside a twin that gets the same calls without edits; prints `name: value` lines.
`python undo_recompile.py unknown`: a compile torch records no guard failure for.
`python undo_recompile.py cli`: f called on lengths 3, 5, 5 (for the REPL test).
"""
import sys

import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

import dyndbg.cache as dc


def show(name, value):
    print(f"{name}: {value}", flush=True)


def total(function):
    """Entries torch holds for the function, evicted ones included (each a compile)."""
    return len(_debug_get_cache_entry_list(function.__code__))


def ran(function):
    """The number within the function of the entry the last call ran (torch moves
    the entry it used to the front)."""
    return dc.entries(function)[0].compile_id.split("/")[1]


def judged(undone):
    """(evicted, kept): what the undo did with the entries compiled meanwhile."""
    retired = [cid for edit in undone for cid in edit.retired]
    kept = [cid for edit in undone for cid in getattr(edit, "kept", ())]  # new in issue 23
    return retired, kept


def f(x):
    return (x * 2 + 1).sum()


def a(x):
    return (x * 2 + 1).sum()


def a_twin(x):
    return (x * 2 + 1).sum()


def case_a():
    """A guard that holds for every input; a new length recompiles because [0/0]'s
    own size guard failed, as it does without the edit: undo keeps that entry."""
    ca, ca_twin = torch.compile(a, backend="eager"), torch.compile(a_twin, backend="eager")
    lengths = [3, 5, 5, 7]
    twin_ran = []
    for length in lengths:
        ca_twin(torch.ones(length))
        twin_ran.append(ran(a_twin))
    results = [ca(torch.ones(3)).item()]
    edited_ran = [ran(a)]
    dc.add_guard(dc.entries(a)[0].compile_id, "x.shape[0] < 100")
    results.append(ca(torch.ones(5)).item())
    edited_ran.append(ran(a))
    retired, kept = judged(dc.undo_all())
    show("A retired", retired)
    show("A kept", kept)
    for length in lengths[2:]:
        results.append(ca(torch.ones(length)).item())
        edited_ran.append(ran(a))
    show("A ran", edited_ran)
    show("A twin ran", twin_ran)
    show("A compiled", total(a))
    show("A twin compiled", total(a_twin))
    show("A results", results == [a_twin(torch.ones(n)).item() for n in lengths])


def b(x):
    return (x * 3).sum()


def case_b():
    """Evicting the only entry makes the same call recompile: the edit's doing, so
    undo evicts that entry and the first one runs again."""
    cb = torch.compile(b, backend="eager")
    cb(torch.ones(3))
    first = dc.entries(b)[0].compile_id
    edit = dc.evict(first)
    cb(torch.ones(3))
    retired, kept = judged(dc.undo(edit.number))
    show("B retired", retired)
    show("B kept", kept)
    cb(torch.ones(3))
    show("B ran first again", dc.entries(b)[0].compile_id == first)


def c(x):
    return (x - 1).sum()


def c_twin(x):
    return (x - 1).sum()


def case_c():
    """Static shapes. A guard refusing length 3 makes a call of length 3 recompile
    (the edit's doing); a call of length 7 then recompiles because every entry fails a
    size guard of its own, though torch's reason for [0/0] names only the added guard
    (checked first). Undo evicts the first, keeps the second."""
    cc = torch.compile(c, backend="eager", dynamic=False)
    cc_twin = torch.compile(c_twin, backend="eager", dynamic=False)
    cc(torch.ones(3))
    edit = dc.add_guard(dc.entries(c)[0].compile_id, "x.shape[0] == 5")
    cc(torch.ones(3))
    cc(torch.ones(7))
    before_undo = total(c)
    retired, kept = judged(dc.undo(edit.number))
    show("C retired", retired)
    show("C kept", kept)
    results = [cc(torch.ones(n)).item() for n in [3, 7]]
    show("C compiled after undo", total(c) - before_undo)
    show("C ran 7 by", dc.entries(c)[0].compile_id)
    for n in [3, 3, 7, 3, 7]:
        cc_twin(torch.ones(n))
    show("C entries not evicted", total(c) - len(retired))
    show("C twin entries", total(c_twin))
    show("C results", results == [c_twin(torch.ones(n)).item() for n in [3, 7]])


def d(x):
    return (x + 2).sum()


def case_unknown():
    """A torch that records no guard failure at a recompile (its analysis stubbed
    out): nothing tells why the entry was compiled, so undo evicts it, as before
    issue 23, and says that it does not know."""
    import torch._dynamo.convert_frame as convert_frame

    from dyndbg.dynamo.edits import fell_through_lines
    cd = torch.compile(d, backend="eager")
    cd(torch.ones(3))
    analysis = convert_frame.get_and_maybe_log_recompilation_reasons
    convert_frame.get_and_maybe_log_recompilation_reasons = lambda *args, **kwargs: []
    try:
        edit = dc.add_guard(dc.entries(d)[0].compile_id, "x.shape[0] < 100")
        cd(torch.ones(5))
        undone = dc.undo(edit.number)
    finally:
        convert_frame.get_and_maybe_log_recompilation_reasons = analysis
    show("D retired", judged(undone)[0])
    show("D said", " | ".join(line for edit in undone for line in fell_through_lines(edit)))


if sys.argv[1] == "cli":
    cf = torch.compile(f, backend="eager")
    for length in [3, 5, 5]:
        print(f"call length={length}: {cf(torch.ones(length)).item()}")
    print(f"entries compiled: {total(f)}")
elif sys.argv[1] == "api":
    case_a()
    case_b()
    case_c()
else:
    case_unknown()
