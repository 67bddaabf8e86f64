"""Inductor's output code, read as steps (issue 50): pure text, no torch.

Inductor compiles a graph to a Python module (its "output code") whose
`call(args)` (torch 2.13: the method `Runner.call`; earlier, a module-level function) runs the
graph: one statement per step. Measured on torch 2.13 CPU:

    buf0 = empty_strided_cpu((3, 16), (16, 1), torch.float32)        allocation
    # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t, aten.addmm]
    extern_kernels.addmm(arg1_1, arg2_1, reinterpret_tensor(...), out=buf0)   extern kernel
    buf1 = buf0; del buf0  # reuse                                     (no step: an alias)
    cpp_fused_relu_0(buf1)                                             fused C++ kernel
    buf5 = reinterpret_tensor(buf3, (4, ), (1, ), 0); del buf3  # reuse   reinterpret
    return (buf3, )                                                    the return

On a GPU (read from torch's codegen/triton.py and wrapper.py, not run here)
a fused kernel is a triton kernel defined as `name = async_compile.triton(...)`
and called `name.run(buf0, ..., stream=stream0)`, inside `with
torch.cuda._DeviceGuard(0):`, with `empty_strided_cuda` allocations and the
same source-node comments before each kernel call (triton's codegen_comment
writes them; the C++ backend writes none for its fused kernels). The parsing
here takes both: kernels are the names the module defines through
`async_compile.*`, their `.run` calls, `extern_kernels.*` and aten ops; `with`
bodies are read through.

Which FX nodes a kernel computes, from inductor's own records only:
- the comment inductor writes above a kernel call (`Source Nodes: [a, b]`,
  the names of dynamo's nodes, `from_node`): extern kernels on CPU, every
  kernel on GPU;
- else (C++ fused kernels) the compiled graph's `cache_linemap`: (output
  line, stack trace of the last FX node of each scheduled node, entered
  before its code is written). The traces between the previous kernel call
  and this one are this kernel's, less the one an extern kernel entered
  just before the C++ group was flushed for it (its comment names it).
  Each trace names the dynamo nodes whose `stack_trace` is that text, line
  numbers aside (`trace_key`): inductor's FX graph cache keys ignore stack
  traces, so a graph loaded from it carries the line map of the compile
  that filled it, whose line numbers are stale once lines above moved.
"""
from __future__ import annotations

import ast
import re
from enum import Enum
from typing import NamedTuple

SOURCE_NODES = re.compile(r"Source Nodes: \[([^\]]*)\]")
_LINE_NUMBER = re.compile(r", line \d+,")


def trace_key(trace: str) -> str:
    """A stack trace's text less its line numbers and its files' folders:
    the files' names, functions, source lines and carets, the same in a
    cached line map after an edit that moved the lines but not the code, or
    from a copy of the program elsewhere (inductor's FX graph cache keys no
    stack trace: a graph cached by another checkout keeps its paths)."""
    return _FOLDERS.sub('File "', _LINE_NUMBER.sub(",", trace))


_FOLDERS = re.compile(r'File "[^"]*/')
ALLOCATORS = ("empty_strided", "alloc_from_pool", "torch.empty_strided")


class StepKind(Enum):
    KERNEL = "kernel"
    ALLOC = "allocate"
    REINTERPRET = "reinterpret"
    RETURN = "return"
    ALIAS = "alias"          # `buf1 = buf0; del buf0  # reuse`: not a stop


class KernelKind(Enum):
    EXTERN = "extern kernel"        # extern_kernels.mm, .addmm, ...
    CPP = "cpp kernel"              # async_compile.cpp_pybinding
    TRITON = "triton kernel"        # async_compile.triton, called with .run
    ATEN = "aten fallback"          # torch.ops.aten.X.default(...)
    OTHER = "kernel"                # another async_compile.* kind


class CodeStep(NamedTuple):
    """One statement of `call` (line numbers are the output code file's)."""

    line: int
    kind: StepKind
    text: str                       # the statement's source, as written
    kernel: str = ""                # the callee: `extern_kernels.addmm`, `cpp_fused_relu_0`
    kernel_kind: KernelKind | None = None
    defines: tuple[str, ...] = ()   # the names it binds (buf0 = ...)
    writes: tuple[str, ...] = ()    # the buffers a kernel writes (out=, non-const pointers)
    # of those, the ones written through a view (`out=reinterpret_tensor(buf5, ...)`): a part
    # of the buffer only, the rest maybe not written yet
    partly: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()     # the other names passed to it
    source: str = ""                # its alias's or reinterpret's base buffer
    nodes: tuple[str, ...] = ()     # dynamo FX node names inductor records for it
    provenance: str = ""            # "comment" | "line map" | ""
    # trace_key()s inductor's line map records for it whose nodes it does not
    # tell apart (several of dynamo's nodes have that stack trace): the kernel
    # computes work of those lines, which of their nodes is not known
    lines: tuple[str, ...] = ()

    @property
    def stops(self) -> bool:
        return self.kind is not StepKind.ALIAS

    @property
    def name(self) -> str:
        """What the stop calls it: the kernel, the buffer made, `return`."""
        if self.kind is StepKind.KERNEL:
            return self.kernel
        if self.kind is StepKind.RETURN:
            return "return"
        return self.defines[0] if self.defines else self.kind.value


class OutputCode(NamedTuple):
    inputs: tuple[str, ...]        # `arg0_1, arg1_1 = args`: the graph's inputs, in order
    steps: list[CodeStep]          # every statement that is a step or an alias, in order


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _find_call(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    for node in tree.body:      # torch >= 2.9: class Runner: def call(self, args)
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    return item
    return None


def _kernel_defs(tree: ast.Module) -> dict[str, tuple[KernelKind, list[str]]]:
    """Module-level `name = async_compile.KIND(...)`: kernel name -> (kind,
    C++ argument types where given: `['const float*', 'float*']`)."""
    found: dict[str, tuple[KernelKind, list[str]]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        callee = _dotted(node.value.func)
        if not callee.startswith("async_compile."):
            continue
        method = callee.split(".", 1)[1]
        kind = KernelKind.CPP if method.startswith("cpp") else \
            KernelKind.TRITON if method.startswith("triton") else KernelKind.OTHER
        types: list[str] = []
        args = node.value.args
        if kind is KernelKind.CPP and args and isinstance(args[0], (ast.List, ast.Tuple)):
            types = [e.value for e in args[0].elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        for target in node.targets:
            if isinstance(target, ast.Name):
                found[target.id] = (kind, types)
    return found


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.AsyncWith)):     # GPU: with torch.cuda._DeviceGuard(0):
            out.extend(_statements(stmt.body))
        else:
            out.append(stmt)
    return out


def _names(nodes: list[ast.expr]) -> list[str]:
    """The variables an expression reads, less the functions it calls and
    the modules it reads from (`reinterpret_tensor`, `torch` of torch.float32)."""
    out: list[str] = []
    for arg in nodes:
        skip = {id(n.func) for n in ast.walk(arg) if isinstance(n, ast.Call)}
        skip |= {id(n.value) for n in ast.walk(arg) if isinstance(n, ast.Attribute)}
        out.extend(n.id for n in ast.walk(arg) if isinstance(n, ast.Name) and id(n) not in skip)
    return out


def parse(source: str) -> OutputCode | None:
    """The steps of the output code's `call`; None where it has none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    call = _find_call(tree)
    if call is None:
        return None
    kernels = _kernel_defs(tree)
    lines = source.splitlines()
    inputs: tuple[str, ...] = ()
    steps: list[CodeStep] = []
    for stmt in _statements(call.body):
        text = lines[stmt.lineno - 1].strip() if stmt.lineno <= len(lines) else ""
        if not inputs and isinstance(stmt, ast.Assign) and _dotted(stmt.value) == "args":
            target = stmt.targets[0]
            if isinstance(target, (ast.Tuple, ast.List)):
                inputs = tuple(e.id for e in target.elts if isinstance(e, ast.Name))
            elif isinstance(target, ast.Name):
                inputs = (target.id,)
            continue
        step = _step(stmt, text, kernels)
        if step is not None:
            steps.append(step)
    return OutputCode(inputs, steps)


def _step(stmt: ast.stmt, text: str, kernels: dict) -> CodeStep | None:
    line = stmt.lineno
    if isinstance(stmt, ast.Return):
        return CodeStep(line, StepKind.RETURN, text,
                        reads=tuple(_names([stmt.value])) if stmt.value is not None else ())
    if isinstance(stmt, ast.Assign):
        defines = tuple(_names(list(stmt.targets)))
        value = stmt.value
        if isinstance(value, ast.Name):
            return CodeStep(line, StepKind.ALIAS, text, defines=defines, source=value.id)
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
            # `buf4 = buf3[0]`: one output of a kernel that returns several
            return CodeStep(line, StepKind.ALIAS, text, defines=defines, source=value.value.id)
        if not isinstance(value, ast.Call):
            return None
        callee = _dotted(value.func)
        if callee.startswith(ALLOCATORS):
            return CodeStep(line, StepKind.ALLOC, text, defines=defines)
        if callee == "reinterpret_tensor":
            base = _names(value.args[:1])
            return CodeStep(line, StepKind.REINTERPRET, text, defines=defines,
                            source=base[0] if base else "")
        kind = _kernel_kind(callee, kernels)
        if kind is None:
            return None
        return CodeStep(line, StepKind.KERNEL, text, _kernel_name(callee), kind, defines,
                        writes=defines, reads=tuple(_names(list(value.args) + [k.value for k in value.keywords])))
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        value = stmt.value
        callee = _dotted(value.func)
        kind = _kernel_kind(callee, kernels)
        if kind is None:
            return None
        name = _kernel_name(callee)
        positional = list(value.args)
        out = [k for k in value.keywords if k.arg == "out"]
        writes: list[str] = _names([k.value for k in out])
        if kind is KernelKind.CPP:     # the pointers not declared const are written
            types = kernels[name][1]
            for arg, type_ in zip(positional, types):
                if isinstance(arg, ast.Name) and not type_.strip().startswith("const"):
                    writes.append(arg.id)
        # triton's `stream=stream0` is where it runs, not what it reads
        names = _names(positional + [k.value for k in value.keywords if k.arg not in ("out", "stream")])
        reads = tuple(n for n in dict.fromkeys(names) if n not in writes)
        partly = tuple(n for n in _names([k.value for k in out if not isinstance(k.value, ast.Name)]))
        return CodeStep(line, StepKind.KERNEL, text, name, kind,
                        writes=tuple(dict.fromkeys(writes)), reads=reads,
                        partly=tuple(dict.fromkeys(partly)))
    return None


def _kernel_name(callee: str) -> str:
    return callee[:-len(".run")] if callee.endswith(".run") else callee


def _kernel_kind(callee: str, kernels: dict) -> KernelKind | None:
    name = _kernel_name(callee)
    if name in kernels:
        return kernels[name][0]
    if callee.startswith("extern_kernels."):
        return KernelKind.EXTERN
    if callee.startswith(("aten.", "torch.ops.")):
        return KernelKind.ATEN
    return None


# -- provenance ----------------------------------------------------------------------

def comment_nodes(lines: list[str], line: int, floor: int = 0) -> tuple[str, ...] | None:
    """The nodes of the `Source Nodes: [...]` comment inductor wrote above
    line `line` (1-based), after line `floor` (the step before): on GPU a
    `stream0 = get_raw_stream(0)` may stand between the comment and the call."""
    for index in range(line - 2, max(floor, 0) - 1, -1):
        text = lines[index].strip()
        match = SOURCE_NODES.search(text) if text.startswith("#") else None
        if match:
            return tuple(n.strip() for n in match[1].split(",") if n.strip())
    return None


def with_provenance(code: OutputCode, source: str, linemap: list[tuple[int, str]],
                    traces: dict[str, tuple[str, ...]], node_names: set[str] | None = None) -> list[CodeStep]:
    """The steps, each kernel with the dynamo nodes inductor records for it.

    `linemap`: the compiled graph's cache_linemap, (line, stack trace);
    `traces`: trace_key(stack trace) -> the dynamo nodes (graph order) that have it;
    `node_names`: all of dynamo's node names, where known."""
    lines = source.splitlines()
    kernels = [i for i, s in enumerate(code.steps) if s.kind is StepKind.KERNEL]
    known = node_names if node_names is not None else set()
    commented: dict[int, tuple[str, ...] | None] = {}
    for i in kernels:
        nodes = comment_nodes(lines, code.steps[i].line, code.steps[i - 1].line if i else 0)
        if nodes is not None and known:
            # a guard (not seen): if a cached output code's comment names nodes
            # dynamo's graph no longer has, they are dropped, the line map used if none is left
            nodes = tuple(n for n in nodes if n in known) or None
        commented[i] = nodes
    # the node an extern kernel's comment names last is its output (its origin node)
    claimed = {nodes[-1] for nodes in commented.values() if nodes}
    steps = list(code.steps)
    previous = 0
    for position, i in enumerate(kernels):
        step = steps[i]
        nodes = commented[i]
        if nodes is not None:
            steps[i] = step._replace(nodes=nodes, provenance="comment")
        else:
            found = [trace_key(t) for at, t in linemap if previous < at <= step.line]
            following = commented.get(kernels[position + 1]) if position + 1 < len(kernels) else None
            if following and len(found) > 1:
                # the extern kernel that made the C++ group flush entered its context first
                last = following[-1]
                rest = [t for t in found if last not in traces.get(t, ())]
                found = rest or found
            names: list[str] = []
            unsure: list[str] = []
            for trace in dict.fromkeys(found):
                candidates = traces.get(trace, ())
                unclaimed = [n for n in candidates if n not in claimed]
                if len(unclaimed) == 1 or (not unclaimed and len(candidates) == 1):
                    names.extend(unclaimed or candidates)
                elif candidates:
                    # The line map keeps one trace per scheduled node: where
                    # several nodes have it (a torch module's nodes all carry
                    # its caller's line), it says the line, not the node.
                    unsure.append(trace)
            steps[i] = step._replace(nodes=tuple(dict.fromkeys(names)),
                                     provenance="line map" if names else "",
                                     lines=tuple(unsure))
        previous = step.line
    return steps
