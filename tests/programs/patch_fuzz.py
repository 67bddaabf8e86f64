"""Random patches on plain functions of many shapes (closures, loops, handlers,
comprehensions, with blocks, f-strings, calls), each applied to the function's code and
run: refused in one CacheError, or run to a result or a Python error; never a
crash. `patch_fuzz.py SEED N [-v]`."""
import contextlib
import dis
import random
import sys
import types

from dyndbg.cache import CacheError
from dyndbg.dynamo.edits import patching
from dyndbg.dynamo.edits import PatchAction, PatchOp


def closure(a, b):
    def inner():
        return a * 2
    c = inner() + b
    return c


def loop(a, b):
    t = 0
    for i in a:
        t += i * b
    return t


def handler(a, b):
    try:
        return a[0] / b
    except ZeroDivisionError as error:
        return str(error)
    finally:
        a.append(b)


def comprehension(a, b):
    return [x + b for x in a if x], {x: b for x in a}


def with_block(a, b):
    with contextlib.suppress(KeyError):
        return {**{"k": a}, "b": b}["k"]


def text(a, b):
    return f"{a!r:>10} {b}", (*a, b), {b, *a}


def calls(a, b):
    return max(*a, b, key=abs), sorted(a, reverse=bool(b))


def local_call(a, b):
    f = len
    return f(a) + a.count(b) - abs(b)


FUNCTIONS = [closure, loop, handler, comprehension, with_block, text, calls, local_call]
OPNAMES = ["NOP", "POP_TOP", "LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "STORE_FAST",
           "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_ATTR", "BINARY_OP", "BINARY_SUBSCR", "COMPARE_OP",
           "RETURN_VALUE", "RETURN_CONST", "BUILD_TUPLE", "UNARY_NOT", "UNARY_NEGATIVE", "IS_OP",
           "SWAP", "COPY"]
ARGS = [None, "0", "1", "2", "+", "*", "None", "'s'", "(1, 2)", "a", "b", "c", "t", "i",
        "x", "error", "inner", "NULL + len", "len", "append", "-1", "3"]

# Replacements that keep the stack depth, which the rules may well accept
# (3.14 loads with LOAD_FAST_BORROW, LOAD_SMALL_INT, LOAD_COMMON_CONSTANT too).
LOADS = ["LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_GLOBAL"]
KINDS = {**{name: LOADS for name in LOADS + ["LOAD_FAST_BORROW", "LOAD_SMALL_INT",
                                             "LOAD_COMMON_CONSTANT"]},
         **{name: ["BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "IS_OP"]
            for name in ("BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "IS_OP", "CONTAINS_OP")},
         "STORE_FAST": ["STORE_FAST", "POP_TOP"], "POP_TOP": ["STORE_FAST", "POP_TOP"],
         "UNARY_NOT": ["UNARY_NOT", "UNARY_NEGATIVE", "NOP"], "NOP": ["UNARY_NEGATIVE", "NOP"],
         "LOAD_ATTR": ["LOAD_ATTR"]}
OPERATORS = ["+", "*", "-", "/", "<", "==", "0", "2", "1", "99", "None", "'s'", "(1, 2)", "-1"]


def argument(code, opname):
    """Mostly an argument OPNAME takes in `code`, sometimes any."""
    if rng.random() < 0.2:
        return rng.choice(ARGS)
    opcode = dis.opmap[opname]
    if opcode < dis.HAVE_ARGUMENT:
        return None
    if opcode in dis.haslocal:
        return rng.choice(code.co_varnames)
    if opcode in dis.hasfree:
        return rng.choice(code.co_cellvars + code.co_freevars or ("x",))
    if opcode in dis.hasname:
        return rng.choice(["len", "NULL + len", "real", "append", "x"])
    return rng.choice(OPERATORS)


# Where a call's NULL, an unbound local saved by a comprehension, or an iterator is
# on the stack.
NULL_MAKERS = ("PUSH_NULL", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD", "LOAD_FAST_AND_CLEAR",
               "LOAD_SPECIAL", "GET_ITER")


def random_op(code):
    shown = patching.listing(code)
    makers = [k for k, i in enumerate(shown) if i.opname in NULL_MAKERS]
    if makers and rng.random() < 0.15:
        return PatchOp(PatchAction.INSERT, rng.choice(makers) + 1,
                       rng.choice(["UNARY_NEGATIVE", "UNARY_NOT", "NOP", "UNARY_INVERT"]))
    kept = [k for k, i in enumerate(shown) if i.opname in KINDS]
    if kept and rng.random() < 0.7:
        k = rng.choice(kept)
        opname = rng.choice([n for n in KINDS[shown[k].opname] if n in dis.opmap])
        return PatchOp(PatchAction.REPLACE, k, opname, argument(code, opname))
    action = rng.choice(list(PatchAction))
    index = rng.randrange(len(shown) + 1)
    if action is PatchAction.DELETE:
        return PatchOp(action, index)
    opname = rng.choice([n for n in OPNAMES if n in dis.opmap])
    return PatchOp(action, index, opname, argument(code, opname))


rng = random.Random(int(sys.argv[1]))
applied = refused = 0
for _ in range(int(sys.argv[2])):
    function = rng.choice(FUNCTIONS)
    code = function.__code__
    ops = [random_op(code) for _ in range(rng.randint(1, 3))]
    try:
        patched = patching.apply(code, ops)
    except CacheError:
        refused += 1
        continue
    applied += 1
    if "-v" in sys.argv:
        print(function.__name__, [op.describe() for op in ops], flush=True)
    try:
        types.FunctionType(patched.code, globals(), closure=function.__closure__)(
            [rng.choice([0, 1, 2.5, -3]), 4], rng.choice([0, 2]))
    except Exception:  # noqa: BLE001 - the patched code's own error
        pass
print(f"applied {applied} refused {refused}")
