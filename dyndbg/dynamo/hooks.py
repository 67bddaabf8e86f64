"""The adapter between torch's hooks and the engine.

- bytecode hook: every code object dynamo generates is registered with its
  compile id.
- bytecode debugger callback (torch >= 2.12): called from C before every run of
  transformed code. If it raises, the process aborts, so the wrapper swallows
  everything; the engine uses it to turn tracing on only when needed.
- compile start/end callbacks: the engine suspends tracing while dynamo compiles.
- the backend's call: a copy of each graph as dynamo traced it (graphs/copies.py).
- a ShapeEnv's replacements, symbols and SLocs: what it does not keep (shapes/watch.py).
- a function dynamo gives up on (compiles/give_ups.py) or skips (compiles/skips.py): told
  to the engine; a skip is also kept on the generated code that called it.
dyndbg.cache's log of compiles (compile_log) installs the bytecode hook, the
start callback and the graph copies alone (watch_compiles), from its import.
Where torch lacks the C callback (or DYNDBG_NO_CALLBACK=1), `has_callback` is
False and the engine falls back to a global trace function.
"""
from __future__ import annotations

import os
import types
from typing import TYPE_CHECKING, Callable

from dyndbg.dynamo.compiles import skips as frame_skips, give_ups
from dyndbg.dynamo.graphs import copies as graph_copies
from dyndbg.dynamo.shapes import watch as shape_watch
from dyndbg.dynamo.compiles import program_frame
from dyndbg.dynamo.compiles import CompileLog
from dyndbg.dynamo.compiles import FrameSkip
from dyndbg.dynamo.compiles import Registry
from dyndbg.dynamo.shield import shield
from dyndbg.faults import maybe_fault

if TYPE_CHECKING:
    from torch._dynamo.types import BytecodeHook
    from torch.utils.hooks import RemovableHandle



def watch_compiles(bytecode_hook: BytecodeHook,
                   compile_start: Callable[[object], None]) -> RemovableHandle:
    """Torch calls `compile_start(args)` as each compile starts and
    `bytecode_hook(code, new_code)` with the code it made, and a copy of each
    graph is kept as dynamo traced it (graphs/copies.py): the install that both
    the engine's hooks and dyndbg.cache's log of compiles make. Both functions
    are shielded from dynamo and must never raise into torch."""
    import torch._dynamo  # noqa: F401  (imports convert_frame and the callback handler)
    from torch._dynamo import convert_frame
    shield(bytecode_hook, compile_start)
    handle = convert_frame.register_bytecode_hook(bytecode_hook)
    graph_copies.keep()     # dynamo's graphs as traced, for graph run / bisect
    shape_watch.install()   # what a ShapeEnv does not keep (shapes/watch.py)
    torch._dynamo.callback_handler.register_start_callback(compile_start)
    return handle


def compile_log() -> CompileLog | None:
    """Torch's account of each compile from now on, in a registry of its own
    (dyndbg.cache's, from its import; its hooks only read and swallow whatever
    goes wrong); None without torch."""
    try:
        import torch._dynamo  # noqa: F401
        from torch._dynamo import convert_frame  # noqa: F401
    except ImportError:
        return None
    log = CompileLog(Registry())

    def started(_args: object) -> None:
        try:
            log.started()
        except BaseException:  # noqa: BLE001 - never break dynamo's compile
            pass

    def compiled(code: types.CodeType, new_code: types.CodeType) -> None:
        try:
            log.compiled(code, new_code)
        except BaseException:  # noqa: BLE001 - never break dynamo's compile
            pass
        return None

    watch_compiles(compiled, started)
    return log


class DynamoHooks:
    def __init__(self, registry: Registry,
                 on_code_start: Callable[[types.CodeType], None],
                 on_compile_start: Callable[[], None],
                 on_compile_end: Callable[[], None],
                 report_error: Callable[[str, BaseException], None],
                 force_fallback: bool = False,
                 on_give_up: Callable[[give_ups.GiveUp], None] | None = None,
                 on_skip: Callable[[FrameSkip], None] | None = None) -> None:
        self.registry = registry
        self._on_code_start = on_code_start
        self._on_compile_start = on_compile_start
        self._on_compile_end = on_compile_end
        self._report_error = report_error
        self.force_fallback = force_fallback or os.environ.get("DYNDBG_NO_CALLBACK") == "1"
        self.has_callback = False
        self.interrupt_pending = False
        self._quiet = False
        self._callback_active = False
        self._handle: RemovableHandle | None = None   # of the bytecode hook
        self._previous_callback: Callable[[types.CodeType], None] | None = None
        self._callback: Callable[[types.CodeType], None] = self._code_callback   # what torch calls
        self._log = CompileLog(registry)           # torch's account of each compile
        self._on_give_up = on_give_up              # dynamo gave up on a function
        self._give_ups: give_ups.GiveUpHandler | None = None
        self._on_skip = on_skip                    # dynamo skipped a frame
        self._watching_skips = False

    # -- installation -----------------------------------------------------
    def shield(self, *functions: Callable[..., object] | types.CodeType) -> None:
        shield(*functions)

    def install(self) -> None:
        import torch._dynamo  # noqa: F401  (imports the callback handler)
        self.shield(self._code_callback, self._compile_end)
        self._handle = watch_compiles(self._bytecode_hook, self._compile_start)
        if self._on_give_up is not None:
            self._give_ups = give_ups.install(self._gave_up)
        if self._on_skip is not None:
            self._watching_skips = frame_skips.listen(self._skipped)
        torch._dynamo.callback_handler.register_end_callback(self._compile_end)
        if not self.force_fallback:
            try:
                from torch._C._dynamo import eval_frame
                self._previous_callback = eval_frame.get_bytecode_debugger_callback()
                eval_frame.set_bytecode_debugger_callback(self._callback)
                self.has_callback = True
                self._callback_active = True
            except (ImportError, AttributeError):
                self.has_callback = False

    def set_callback_active(self, active: bool) -> None:
        """Hook or unhook the C callback. Unhooked, generated code runs with no
        call into dyndbg at all (the engine does this while nothing can stop)."""
        if not self.has_callback or active == self._callback_active:
            return
        from torch._C._dynamo import eval_frame
        eval_frame.set_bytecode_debugger_callback(
            self._callback if active else self._previous_callback)
        self._callback_active = active

    def put_in_front(self, make: Callable[[Callable[[types.CodeType], None]],
                                          Callable[[types.CodeType], None]]) -> None:
        """torch calls make(callback) instead: a compiled filter that answers
        the common calls itself and hands the others to the callback, which
        catches everything (the settrace mechanism's, _settrace.c)."""
        if not self.has_callback:
            return
        self._callback = make(self._code_callback)
        if self._callback_active:
            from torch._C._dynamo import eval_frame
            eval_frame.set_bytecode_debugger_callback(self._callback)

    def uninstall(self) -> None:
        """Stop receiving events (the engine detaches). The Python hooks stay
        registered but go quiet: removing them from inside torch's own loop
        over them would change a dict it is iterating."""
        self._quiet = True
        try:
            if self.has_callback:
                from torch._C._dynamo import eval_frame
                eval_frame.set_bytecode_debugger_callback(self._previous_callback)
                self.has_callback = False
        except Exception:
            pass

    def remove(self) -> None:
        """Unregister the Python hooks too. Only from outside torch's loops over
        them (a hook itself must not call this)."""
        self.uninstall()
        try:
            import torch._dynamo
            if self._handle is not None:
                self._handle.remove()
                self._handle = None
            if self._give_ups is not None:
                give_ups.remove(self._give_ups)
                self._give_ups = None
            if self._watching_skips:
                frame_skips.stop_listening(self._skipped)
                self._watching_skips = False
            torch._dynamo.callback_handler.remove_start_callback(self._compile_start)
            torch._dynamo.callback_handler.remove_end_callback(self._compile_end)
        except Exception:  # noqa: BLE001 - already gone
            pass

    # -- hooks (each must never raise into torch) ---------------------------
    def _bytecode_hook(self, code: types.CodeType, new_code: types.CodeType) -> None:
        """torch's BytecodeHook: `code` is the user's, `new_code` dynamo's transform."""
        if self._quiet:
            return None
        try:
            maybe_fault("hook")
            entry = self._log.compiled(code, new_code)
            if entry.has_marker:
                # Unhooked, torch would start its own debugger at the marker.
                self.set_callback_active(True)
        except BaseException as error:  # noqa: BLE001 - never break dynamo's compile
            self._report_error("bytecode hook", error)
        return None

    def _gave_up(self, give_up: give_ups.GiveUp) -> None:
        """Dynamo stopped compiling a function (from torch's logging)."""
        if self._quiet or self._on_give_up is None:
            return
        try:
            self._on_give_up(give_up)
        except BaseException as error:  # noqa: BLE001 - called from torch's logging
            self._report_error("recompile-limit notice", error)

    def _skipped(self, skip: FrameSkip) -> None:
        """Dynamo skipped a frame (torch suppressed its compile's exception):
        kept on the generated code that called it, where one did, then told."""
        if self._quiet or self._on_skip is None:
            return
        try:
            caller = program_frame()
            entry = self.registry.get(caller.f_code) if caller is not None else None
            if entry is not None:
                entry.skipped += (skip,)
            self._on_skip(skip)
        except BaseException as error:  # noqa: BLE001 - called from torch's suppression
            self._report_error("frame-skip notice", error)

    def _code_callback(self, code: types.CodeType) -> None:
        # Called from C++: an exception escaping here aborts the process.
        try:
            self._on_code_start(code)
        except KeyboardInterrupt:
            self.interrupt_pending = True
        except BaseException as error:  # noqa: BLE001
            try:
                self._report_error("code callback", error)
            except BaseException:
                pass

    def _compile_start(self, _args: object) -> None:
        if self._quiet:
            return
        try:
            self._log.started()
            self._on_compile_start()
        except BaseException as error:  # noqa: BLE001
            self._report_error("compile start", error)

    def _compile_end(self, _args: object) -> None:
        if self._quiet:
            return
        try:
            self._on_compile_end()
        except BaseException as error:  # noqa: BLE001
            self._report_error("compile end", error)
