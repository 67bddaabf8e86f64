"""Patches that crashed CPython (3.11-3.14) before the rules in dyndbg.dynamo.edits.patching,
each on a plain function: refused, or applied so that the code raises a Python error
instead. Prints `name: outcome` lines the test reads; a crash is the test's failure."""
import sys
import types

from dyndbg.cache import CacheError
from dyndbg.dynamo.edits import patching
from dyndbg.dynamo.edits import PatchAction, PatchOp


def closure(a):
    def inner():
        return a
    b = 5
    return inner() + a + b          # `a` is a cell: read by LOAD_DEREF


def nested(a):
    def inner():
        return 1
    return inner() + a


def bound(a):
    b = a + 1
    return b * 2


def loop(a):
    t = 0
    for i in a:
        t += i
    return t


def call_local(f):
    return f(1)                     # PUSH_NULL: 3.11/3.12 below f, 3.13 above it


def call_global(a):
    return len(a)                   # LOAD_GLOBAL NULL + len: 3.13 leaves the NULL on top


def call_method(a):
    return a.count(1)               # 3.12+ LOAD_ATTR with the method bit: a NULL or self


def while_loop(n, a):
    i, out = 0, None
    while i < n:                    # 3.11 jumps back with POP_JUMP_BACKWARD_IF_TRUE
        out = [*a, i]               # LIST_EXTEND, run again after the `1` below
        i += 1
    return out


def comprehension(a):
    return {x: 1 for x in a}        # 3.11: a function that FOR_ITERs its `.0` unchecked


def compare(a, b):
    return a + b, a < b


def borrowed(n):
    x, y = [n, n], [n]
    return x + y                    # 3.14: LOAD_FAST_BORROW_LOAD_FAST_BORROW x, y


def borrowed_kept(n):
    x = [n, n]
    z = x + [n]                     # 3.14: LOAD_FAST_BORROW x, consumed by the +
    x = None
    return z


def index(code, opname, argval=None):
    # 3.14 loads a small int constant with LOAD_SMALL_INT.
    names = (opname, "LOAD_SMALL_INT") if opname == "LOAD_CONST" else (opname,)
    return next(k for k, i in enumerate(patching.listing(code))
                if i.opname in names and (argval is None or i.argval == argval))


def attempt(name, function, op, *args):
    try:
        patched = patching.apply(function.__code__, [op])
    except CacheError as error:
        print(f"{name}: refused: {str(error).removeprefix('refused: ')}", flush=True)
        return
    try:
        value = types.FunctionType(patched.code, globals())(*args)
    except Exception as error:  # noqa: BLE001
        print(f"{name}: raises {type(error).__name__}", flush=True)
    else:
        print(f"{name}: ran: {value}", flush=True)


R = PatchAction.REPLACE
attempt("store into a cell", closure,
        PatchOp(R, index(closure.__code__, "STORE_FAST", "b"), "STORE_FAST", "a"), 1)
const = next(i.argval for i in patching.listing(nested.__code__)
             if isinstance(i.argval, types.CodeType))
attempt("not a code object for MAKE_FUNCTION", nested,
        PatchOp(R, index(nested.__code__, "LOAD_CONST", const), "LOAD_CONST", "1"), 1)
attempt("store removed", bound, PatchOp(R, index(bound.__code__, "STORE_FAST", "b"), "POP_TOP"), 1)
attempt("load before the store", bound,
        PatchOp(R, index(bound.__code__, "LOAD_CONST", 1), "LOAD_FAST", "b"), 1)
attempt("before FOR_ITER", loop,
        PatchOp(R, index(loop.__code__, "LOAD_CONST", 0), "LOAD_CONST", "5"), [1, 2])

def after(function, opname):
    return PatchOp(PatchAction.INSERT, index(function.__code__, opname) + 1, "UNARY_NEGATIVE")


attempt("NULL of PUSH_NULL", call_local, after(call_local, "PUSH_NULL"), len)
attempt("NULL of LOAD_GLOBAL", call_global, after(call_global, "LOAD_GLOBAL"), [1])
attempt("NULL of LOAD_ATTR", call_method,
        after(call_method, "LOAD_METHOD" if sys.version_info < (3, 12) else "LOAD_ATTR"), [1])
attempt("on the iterator of a comprehension", comprehension,
        PatchOp(PatchAction.INSERT, index(comprehension.__code__, "GET_ITER") + 1, "UNARY_NOT"),
        [1])
attempt("in a while loop, before LIST_EXTEND", while_loop,
        PatchOp(R, index(while_loop.__code__, "LOAD_CONST", 1), "LOAD_CONST", "2"), 3, [1])
binary, comparison = index(compare.__code__, "BINARY_OP"), index(compare.__code__, "COMPARE_OP")
attempt("BINARY_OP out of range", compare, PatchOp(R, binary, "BINARY_OP", "99"), 1, 2)
attempt("COMPARE_OP out of range", compare, PatchOp(R, comparison, "COMPARE_OP", "99"), 1, 2)
attempt("COMPARE_OP >=", compare, PatchOp(R, comparison, "COMPARE_OP", ">="), 1, 2)
attempt("plain value", bound,
        PatchOp(R, index(bound.__code__, "LOAD_CONST", 2), "LOAD_CONST", "3"), 1)
# 3.14's borrowed loads: the patch makes x's object die under the reference on the
# stack (x stored over), or keeps a borrowed reference in z after x is rebound.
attempt("store into a local borrowed on the stack", borrowed,
        PatchOp(R, index(borrowed.__code__, "BINARY_OP"), "STORE_FAST", "x"), 1)
attempt("borrowed value kept in another local", borrowed_kept,
        PatchOp(R, index(borrowed_kept.__code__, "BINARY_OP"), "POP_TOP"), 1)
