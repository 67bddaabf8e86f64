"""Why dynamo compiled an entry while an evict or a guard add made calls fall through.

Undo evicts such an entry only when the edits caused its compile. An entry compiled
because an entry failed a guard of its own is one plain python compiles too: evicting
it would make the next call compile again, and compile ids and counts would differ
from a run without the edits.

How it is told, from torch's own recompile analysis (the same on torch 2.13-2.15):
when a call misses the cache and the function has entries, dynamo checks every
entry's guards again inside the new compile's CompileContext
(`get_and_maybe_log_recompilation_reasons`) and appends each entry's first failing
guard to `torch._dynamo.utils.guard_failures[original]`. An edit's switch that
refuses there records the entry and the call's inputs; the bytecode hook of the same
compile then checks each refused entry's guards again with every switch bypassed.
The edits caused the compile when a refused entry passes its own guards (unless that
entry is itself the edits' doing: plain python has no such entry). Torch's reason
alone cannot tell: it names the first failing guard only, and a switch checked before
a failing size guard hides it.
"""
from __future__ import annotations

import types
from typing import NamedTuple

from dyndbg.dynamo.guards import live_entries
from dyndbg.dynamo.compiles import recompiles as recompile_reasons
from dyndbg.dynamo.errors import CacheError
from dyndbg.dynamo.compiles import current_compile_id
from dyndbg.dynamo.shield import shield
from dyndbg.dynamo.edits.kinds import Cause, CompileCause, Switch, switches_bypassed


class _Refusal(NamedTuple):
    original: types.CodeType
    compile_id: str          # the entry the switch refused
    label: str               # the edit, as "edit 3 (evict 0/1)"
    frame_locals: dict       # the call's inputs, as torch's analysis passed them


class EditGuard:
    """The lambda guard an evict or a guard add puts on one entry's root: the edit's
    switch, which also reports a refusal made during torch's recompile analysis.
    Called from torch's C++: never raises."""

    def __init__(self, switch: Switch, original: types.CodeType, compile_id: str,
                 recorder: CauseRecorder) -> None:
        self.switch = switch
        self.original = original
        self.compile_id = compile_id
        self.recorder = recorder

    def __call__(self, frame_locals: dict) -> bool:
        passed = self.switch(frame_locals)
        if not passed:
            self.recorder.refused(self, frame_locals)
        return passed


class CauseRecorder:
    """Judges each compile of a watched function (one with an active evict or guard
    add) when dynamo makes it; `take` hands the judgements over at undo."""

    def __init__(self) -> None:
        self._reasons_seen: dict[int, int] = {}    # id(original) -> torch reasons read
        self._causes: dict[int, dict[str, CompileCause]] = {}
        self._compiling: str | None = None         # the compile the refusals belong to
        self._refusals: list[_Refusal] = []
        self._hooked = False

    def watch(self, original: types.CodeType) -> None:
        self._install()
        self._reasons_seen[id(original)] = len(_torch_reasons(original))
        self._causes[id(original)] = {}

    def take(self, original: types.CodeType) -> dict[str, CompileCause]:
        """The judged compiles of `original` (by compile id); it is watched no more."""
        self._reasons_seen.pop(id(original), None)
        self._refusals = [r for r in self._refusals if r.original is not original]
        return self._causes.pop(id(original), {})

    def guard(self, switch: Switch, original: types.CodeType, compile_id: str) -> EditGuard:
        return EditGuard(switch, original, compile_id, self)

    def refused(self, guard: EditGuard, frame_locals: dict) -> None:
        try:
            compiling = current_compile_id()
            if compiling is None or id(guard.original) not in self._reasons_seen:
                return                      # an ordinary cache lookup, not the analysis
            if compiling != self._compiling:
                self._compiling, self._refusals = compiling, []
            if any(r.original is guard.original and r.compile_id == guard.compile_id
                   for r in self._refusals):
                return                      # torch checks the entries more than once
            self._refusals.append(_Refusal(guard.original, guard.compile_id,
                                           guard.switch.label, frame_locals))
        except BaseException:  # noqa: BLE001 - inside torch's guard check
            pass

    def _bytecode_hook(self, code: types.CodeType, new_code: types.CodeType) -> None:
        """torch's BytecodeHook: `code` is the user's, about to get `new_code`."""
        original = code
        try:
            compiling = current_compile_id()
            refusals = self._refusals if compiling == self._compiling else []
            self._compiling, self._refusals = None, []    # the inputs are not kept
            causes = self._causes.get(id(original))
            if compiling is not None and causes is not None and compiling not in causes:
                causes[compiling] = self._judge(
                    original, compiling, [r for r in refusals if r.original is original])
        except BaseException:  # noqa: BLE001 - never break dynamo's compile
            pass
        return None

    def _judge(self, original: types.CodeType, compiling: str,
               refusals: list[_Refusal]) -> CompileCause:
        reasons = _torch_reasons(original)
        seen = self._reasons_seen[id(original)]
        new = reasons[seen:] if len(reasons) >= seen else list(reasons)  # reset: all new
        self._reasons_seen[id(original)] = len(reasons)
        judged = self._causes[id(original)]
        own: dict[str, str] = {}
        for refusal in refusals:
            earlier = judged.get(refusal.compile_id)
            if earlier is not None and earlier.cause is Cause.EDIT:
                continue                    # the edits' own entry: not in a plain run
            try:
                entry = live_entries.find(refusal.compile_id, original)
            except CacheError:
                continue
            with switches_bypassed():
                passed, why = live_entries.check(entry.guard_manager, refusal.frame_locals)
            if passed:
                return CompileCause(compiling, Cause.EDIT,
                                    f"{refusal.label} refused [{refusal.compile_id}], whose "
                                    "own guards pass for that call")
            own[refusal.compile_id] = why
        if not new and not refusals:
            return CompileCause(compiling, Cause.UNKNOWN, "")
        return CompileCause(compiling, Cause.OWN, _own_failures(new, own))

    def _install(self) -> None:
        """Hook dynamo's compiles, once for the process. Without the hook every
        compile is judged UNKNOWN (undo then evicts as it always did, and says so)."""
        if self._hooked:
            return
        try:
            from torch._dynamo import convert_frame
            shield(self._bytecode_hook, EditGuard.__call__, self.refused)
            convert_frame.register_bytecode_hook(self._bytecode_hook)
            self._hooked = True
        except Exception:  # noqa: BLE001 - a torch without these: nothing is judged
            pass


def _own_failures(reasons: list[str], own: dict[str, str]) -> str:
    """`[0/0] <its own failing guard>; ...`: torch's reason for each entry, but the
    bypassed check's where a switch refused it (torch's then names the switch)."""
    parts = []
    for reason in reasons:
        first = str(reason).splitlines()[0] if str(reason) else ""
        compile_id, _, text = first.partition(": ")
        if compile_id in own:
            text = own.pop(compile_id)
        elif text.startswith("dyndbg: "):
            continue                        # an entry the edits evicted for good
        parts.append(f"[{compile_id}] {text}")
    parts += [f"[{cid}] {text}" for cid, text in own.items()]
    return "; ".join(parts) or "no entry's guards passed"


def _torch_reasons(original: types.CodeType) -> list:
    """The guard failures torch recorded for `original`'s recompiles, oldest first."""
    return list(recompile_reasons.failures(original) or ())
