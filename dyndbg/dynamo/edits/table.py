"""Numbered, undoable edits of dynamo's cache (one table for the whole process).

How each edit is made (see guards/live_entries.py for the torch calls and why):
- evict, guard add: a switch guard on the entry's live root. Undo turns the
  switch off: the guard passes again. When the last such edit of the function
  goes, the entries compiled meanwhile whose compile the edits caused are evicted
  (torch tries the newest first: left there, one would run instead); those compiled
  because an entry's own guard failed stay, as plain python has them too
  (edits/causes.py tells which from torch's recompile analysis).
- force, guard drop, patch: the entry's replacement, a precompile entry that
  torch checks before the normal ones: (no guards | a filtered copy of the
  guards | the live guards, the entry's code patched or not). The function's
  precompile entries are rebuilt from the active edits after every change.
Entries are named by compile id and fetched afresh for every change.
"""
from __future__ import annotations

import types
from typing import Callable

from dyndbg.dynamo.guards import live_entries, tree as guard_walk
from dyndbg.dynamo.edits import patching
from dyndbg.dynamo.errors import CacheError
from dyndbg.dynamo.guards import LiveEntry
from dyndbg.dynamo.edits.causes import CauseRecorder
from dyndbg.dynamo.edits.kinds import (FALL_THROUGH, Cause, CompileCause, Edit, EditKind,
                                        Latch, Replacement, Retired, Switch, cut_text,
                                        fell_through_lines)
from dyndbg.dynamo.edits.guard_drop import without_guards

__all__ = ["EDITS", "CacheEdits", "Edit", "EditKind", "fell_through_lines"]


class CacheEdits:
    """The active edits. `on_code(original, code, compile_id, changed)` is told
    of each replacement code object (the debugger registers it as generated)."""

    def __init__(self) -> None:
        self.edits: list[Edit] = []
        self._next = 1
        self._installed: dict[int, int] = {}    # id(original) -> precompile entries of ours
        # id(original) -> its compile ids before its first active fall-through edit
        self._before_fall_through: dict[int, frozenset[str]] = {}
        # (original, why) of the entries an undo evicted for good
        self._retired: list[tuple[types.CodeType, CompileCause]] = []
        self._causes = CauseRecorder()          # why entries compiled while calls fell through
        self.keep = False                       # edits outlive the debugger session
        self.on_code: Callable[[types.CodeType, types.CodeType, str, frozenset[int]],
                               None] | None = None

    # -- making edits ----------------------------------------------------------
    def evict(self, compile_id: str) -> Edit:
        entry = live_entries.find(compile_id)
        self._note_entries(entry.original)
        switch = Switch()
        live_entries.add_switch_guard(entry.guard_manager,
                               self._causes.guard(switch, entry.original, compile_id),
                               f"dyndbg: evicted ({compile_id})")
        return self._add(Edit(0, EditKind.EVICT, entry.original, (compile_id,),
                              f"evict {compile_id}", switch=switch))

    def evict_all(self, original: types.CodeType) -> Edit:
        live = live_entries.entries_of(original)
        if not live:
            raise CacheError(f"{original.co_name} has no cache entries to evict")
        self._note_entries(original)
        switch = Switch()
        for entry in live:
            live_entries.add_switch_guard(entry.guard_manager,
                                   self._causes.guard(switch, original, entry.compile_id),
                                   f"dyndbg: evicted ({entry.compile_id})")
        ids = tuple(e.compile_id for e in live)
        return self._add(Edit(0, EditKind.EVICT, original, ids,
                              f"evict all {original.co_name} ({', '.join(ids)})", switch=switch))

    def add_guard(self, compile_id: str, expression: str) -> Edit:
        entry = live_entries.find(compile_id)
        try:
            switch = Switch(expression, dict(_globals_of(entry.original)))
        except SyntaxError as error:
            raise CacheError(f"not an expression: {error.msg}") from None
        self._note_entries(entry.original)
        live_entries.add_switch_guard(entry.guard_manager,
                               self._causes.guard(switch, entry.original, compile_id),
                               f"dyndbg: {expression}")
        return self._add(Edit(0, EditKind.GUARD_ADD, entry.original, (compile_id,),
                              f"guard add {compile_id} {expression}", switch=switch))

    def drop_guard(self, compile_id: str, number: int) -> Edit:
        entry = live_entries.find(compile_id)
        lines = guard_walk.guard_lines(entry.guard_manager)
        if not 0 <= number < len(lines):
            raise CacheError(f"no guard {number} in {compile_id} (guards lists 0.."
                             f"{len(lines) - 1})")
        line = lines[number]
        edit = Edit(0, EditKind.GUARD_DROP, entry.original, (compile_id,),
                    f"guard drop {compile_id} {number} ({cut_text(line.text)})",
                    dropped=(line.source, line.text))
        drops = self._active(entry.original, compile_id, EditKind.GUARD_DROP) + [edit]
        without_guards(entry.guard_manager, _numbers(lines, drops), edit.notes)
        return self._install(edit)

    def install_code(self, compile_id: str, code: types.CodeType) -> Edit:
        """The entry runs `code` (under its guards) instead of its own."""
        if not isinstance(code, types.CodeType):
            raise CacheError(f"not a code object: {type(code).__name__}")
        entry = live_entries.find(compile_id)
        if code.co_argcount != entry.code.co_argcount or \
                code.co_freevars != entry.code.co_freevars:
            raise CacheError("the code must take the same arguments and free variables "
                             f"as the entry's ({entry.code.co_varnames[:entry.code.co_argcount]})")
        return self._install(Edit(0, EditKind.CODE, entry.original, (compile_id,),
                                  f"install code {code.co_name} as {compile_id}", code=code))

    def force(self, compile_id: str, once: bool) -> Edit:
        entry = live_entries.find(compile_id)
        edit = Edit(0, EditKind.FORCE, entry.original, (compile_id,),
                    f"force {compile_id}{' once' if once else ''}",
                    latch=Latch() if once else None)
        return self._install(edit)

    def patch(self, compile_id: str, op: patching.PatchOp) -> Edit:
        entry = live_entries.find(compile_id)
        self._edited_code(entry, (op,))                   # refuses what does not assemble
        return self._install(Edit(0, EditKind.PATCH, entry.original, (compile_id,),
                                  f"patch {compile_id} {op.describe()}", patch=op))

    # -- undoing -------------------------------------------------------------------
    def undo(self, number: int) -> list[Edit]:
        """Undo edit `number`; returns the edits undone (later patches of the same
        entry that no longer assemble without it go too)."""
        edit = next((e for e in self.edits if e.number == number), None)
        if edit is None:
            raise CacheError(f"no edit {number} (edits lists them)")
        undone = [edit]
        self._remove(edit)
        if edit.kind in (EditKind.PATCH, EditKind.CODE):
            undone += self._drop_unassembled(edit.original, edit.compile_ids[0])
        self._retire_newer(edit)
        self._rebuild(edit.original)
        return undone

    def undo_all(self) -> list[Edit]:
        undone = list(self.edits)
        for edit in undone:
            self._remove(edit)
        for edit in undone:
            self._retire_newer(edit)
        for original in {id(e.original): e.original for e in undone}.values():
            self._rebuild(original)
        return undone

    # -- reading -------------------------------------------------------------------
    def code_to_run(self, compile_id: str) -> tuple[LiveEntry, types.CodeType]:
        """The entry, and its code as the active patches and installed code make it."""
        entry = live_entries.find(compile_id)
        return entry, self._edited_code(entry).code

    def next_call(self, original: types.CodeType, frame_locals: dict) -> str:
        """What a call of `original` with these inputs would run now."""
        forces = [e for e in self._live_forces() if e.original is original]
        if forces:
            return f"runs [{forces[-1].compile_ids[0]}] without checking guards (forced)"
        for replacement in self._replacements(original):
            if live_entries.check(replacement.guard_manager, frame_locals)[0]:
                return f"runs the edited [{replacement.entry.compile_id}]"
        for entry in live_entries.entries_of(original):
            if live_entries.check(entry.guard_manager, frame_locals)[0]:
                return f"runs [{entry.compile_id}]"
        limit = live_entries.recompile_limit()
        total = live_entries.entry_count(original)
        if limit is not None and total >= limit:
            return (f"runs {original.co_name} without compiling: its {total} entries "
                    f"(evicted ones count) reach recompile_limit {limit}")
        return (f"recompiles {original.co_name} ({total} entries, evicted ones count toward "
                f"recompile_limit {limit})")

    def eviction(self, original: types.CodeType, compile_id: str | None) -> str | None:
        """Why dyndbg keeps this entry from running, if it does."""
        for edit in self.edits:
            if edit.original is original and edit.kind is EditKind.EVICT \
                    and compile_id in edit.compile_ids:
                return f"evicted by edit {edit.number}"
        for retired_of, cause in self._retired:
            if retired_of is original and cause.compile_id == compile_id:
                return ("evicted at undo: the edits caused its compile"
                        if cause.cause is Cause.EDIT else
                        "evicted at undo: compiled while calls fell through, no recorded reason")
        return None

    def forcing(self) -> bool:
        return bool(self._live_forces())

    def end_session(self, message: Callable[[str], None]) -> None:
        """The debugger detaches: undo the edits unless the user said `keep`."""
        self.on_code = None
        if not self.edits:
            return
        if self.keep:
            message(f"dyndbg: cache edits kept: {'; '.join(e.text for e in self.edits)}")
            return
        try:
            undone = self.undo_all()
            message("dyndbg: detaching undid the cache edits: "
                    f"{'; '.join(e.text for e in undone)} ('keep' before detaching keeps them)")
            for edit in undone:
                for line in fell_through_lines(edit):
                    message(f"dyndbg: {line}")
        except Exception as error:  # noqa: BLE001 - the program goes on regardless
            message(f"dyndbg: could not undo the cache edits: {error}")

    # -- inside ------------------------------------------------------------------------
    def _add(self, edit: Edit) -> Edit:
        edit.number = self._next
        self._next += 1
        if edit.switch is not None:
            edit.switch.label = f"edit {edit.number} ({edit.text})"
        self.edits.append(edit)
        return edit

    def _install(self, edit: Edit) -> Edit:
        """Add an edit that changes the function's replacements, or refuse it whole."""
        original = edit.original
        if live_entries.precompile_count(original) != self._installed.get(id(original), 0):
            raise CacheError(f"{original.co_name} has precompile entries of torch's own "
                             "(from a precompiled artifact): dyndbg's edits would drop them")
        self._add(edit)
        try:
            self._rebuild(original)
        except BaseException:
            self._remove(edit)
            self._next -= 1
            self._rebuild(original)
            raise
        return edit

    def _remove(self, edit: Edit) -> None:
        self.edits.remove(edit)
        if edit.switch is not None:
            edit.switch.on = False

    def _note_entries(self, original: types.CodeType) -> None:
        """Before a fall-through edit: remember the entries there were without one."""
        if not any(e.original is original and e.kind in FALL_THROUGH for e in self.edits):
            self._before_fall_through[id(original)] = frozenset(
                e.compile_id for e in live_entries.entries_of(original))
            self._causes.watch(original)

    def _retire_newer(self, edit: Edit) -> None:
        """The last fall-through edit of a function is gone: of the entries compiled
        since the first (those no active edit names), evict the ones the edits caused
        (or that nothing says why were compiled), so that the next call runs what it
        would have run without the edits; keep those plain python compiles too."""
        original = edit.original
        if edit.kind not in FALL_THROUGH or any(
                e.original is original and e.kind in FALL_THROUGH for e in self.edits):
            return
        judged = self._causes.take(original)
        before = self._before_fall_through.pop(id(original), None)
        if before is None:
            return
        named = {cid for e in self.edits if e.original is original for cid in e.compile_ids}
        fell_through = []
        for entry in live_entries.entries_of(original):
            cid = entry.compile_id
            if cid in before or cid in named:
                continue
            cause = judged.get(cid, CompileCause(cid, Cause.UNKNOWN, ""))
            if cause.cause is not Cause.OWN:
                live_entries.add_switch_guard(entry.guard_manager, Retired(),
                                       f"dyndbg: evicted ({cid}), compiled while calls "
                                       "fell through")
                self._retired.append((original, cause))
            fell_through.append(cause)
        edit.fell_through = tuple(fell_through)

    def _live_forces(self) -> list[Edit]:
        return [e for e in self.edits if e.kind is EditKind.FORCE and not e.spent]

    def _edited_code(self, entry: LiveEntry,
                     more: tuple[patching.PatchOp, ...] = ()) -> patching.Patched:
        """The entry's code: the newest installed code or its own, with the active
        patches (and `more`) applied in order."""
        codes = self._active(entry.original, entry.compile_id, EditKind.CODE)
        ops = [e.patch for e in self._active(entry.original, entry.compile_id, EditKind.PATCH)]
        base = codes[-1].code if codes else entry.code
        ops += more
        if not ops:
            return patching.Patched(base, frozenset())  # type: ignore[arg-type]  # CODE edits hold code, PATCH edits ops
        return patching.apply(base, ops)  # type: ignore[arg-type]  # CODE edits hold code, PATCH edits ops

    def _active(self, original: types.CodeType, compile_id: str, kind: EditKind) -> list[Edit]:
        return [e for e in self.edits if e.original is original and e.kind is kind
                and compile_id in e.compile_ids]

    def _drop_unassembled(self, original: types.CodeType, compile_id: str) -> list[Edit]:
        dropped: list[Edit] = []
        try:
            entry = live_entries.find(compile_id, original)
        except CacheError:
            return dropped
        # Each patch is kept if it still applies after the ones kept before it.
        patches = self._active(original, compile_id, EditKind.PATCH)
        for edit in patches:
            self.edits.remove(edit)
        for edit in patches:
            try:
                self._edited_code(entry, (edit.patch,))  # type: ignore[arg-type]  # a PATCH edit holds its op
                self.edits.append(edit)
            except CacheError:
                dropped.append(edit)
        self.edits.sort(key=lambda e: e.number)
        return dropped

    def _rebuild(self, original: types.CodeType) -> None:
        """Install the function's replacements afresh."""
        if self._installed.get(id(original), 0):
            live_entries.reset_precompile(original)
            self._installed[id(original)] = 0
        for replacement in self._replacements(original):
            live_entries.load_precompile(original, replacement.guard_manager, replacement.code)
            self._installed[id(original)] = self._installed.get(id(original), 0) + 1
            if self.on_code is not None:
                self.on_code(original, replacement.code, replacement.entry.compile_id,
                             replacement.changed)

    def _replacements(self, original: types.CodeType) -> list[Replacement]:
        """The function's replacements in the order torch is to try them: forced
        entries first (newest first), then entries with guards dropped, then patched ones."""
        ranked = filter(None, map(self._replacement, live_entries.entries_of(original)))
        return [replacement for _, replacement in sorted(ranked, key=lambda pair: pair[0])]

    def _replacement(self, entry: LiveEntry) -> tuple[tuple, Replacement] | None:
        cid, original = entry.compile_id, entry.original
        patches = self._active(original, cid, EditKind.PATCH)
        codes = self._active(original, cid, EditKind.CODE)
        forces = [e for e in self._active(original, cid, EditKind.FORCE) if not e.spent]
        drops = self._active(original, cid, EditKind.GUARD_DROP)
        if not (patches or codes or forces or drops):
            return None
        code, changed = self._edited_code(entry)
        if forces:
            force = forces[-1]
            guard_manager = live_entries.no_guards()
            if force.latch is not None:
                live_entries.add_switch_guard(guard_manager, force.latch, f"dyndbg: {force.text}")
            return (0, -force.number), Replacement(entry, guard_manager, code, changed)
        if drops:
            # By what the lines say: edits' own root guards shift the numbers.
            numbers = _numbers(guard_walk.guard_lines(entry.guard_manager), drops)
            guard_manager = without_guards(entry.guard_manager, numbers, [])
            return (1, -drops[-1].number), Replacement(entry, guard_manager, code, changed)
        newest = max(e.number for e in patches + codes)
        return (2, -newest), Replacement(entry, entry.guard_manager, code, changed)


def _numbers(lines: list[guard_walk.GuardLine], drops: list[Edit]) -> list[int]:
    wanted = {e.dropped for e in drops}
    return [ln.number for ln in lines if (ln.source, ln.text) in wanted]  # type: ignore[misc]  # `guards` lines are numbered


def _globals_of(original: types.CodeType) -> dict:
    try:
        return live_entries.function_of(original).__globals__
    except CacheError:
        return {}


EDITS = CacheEdits()   # the process's edits: the REPL and dyndbg.cache share them
