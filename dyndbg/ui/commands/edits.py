"""Commands that edit dynamo's cache: evict, force, guard, patch, run; edits, undo, keep.

Built on dyndbg.cache (the Python API); an entry is named by its compile id as
`cache` lists it (`0/1`, or `[0/1]`)."""
from __future__ import annotations

import contextlib
import types
from typing import Iterator

from dyndbg import cache
from dyndbg.dynamo.guards import live_entries
from dyndbg.dynamo.edits import patching
from dyndbg.dynamo.edits import Edit, EditKind, fell_through_lines
from dyndbg.ui.commands.host import Host
from dyndbg.ui.text.parsing import CommandError
from dyndbg.ui.text.values import cut, summarize


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    """A refusal from the cache layer is one line at the prompt."""
    try:
        yield
    except live_entries.CacheError as error:
        raise CommandError(str(error)) from None


def parse_entry(word: str) -> str:
    """`0/1` or `[0/1]` -> `0/1`."""
    text = word.strip().strip("[]")
    frame, _, number = text.partition("/")
    if not (frame.isdigit() and number.isdigit()):
        raise CommandError(f"ENTRY is a compile id as `cache` lists it (like 0/1), not {word!r}")
    return text


class CacheCommands:
    title = "editing the cache"

    def __init__(self, host: Host) -> None:
        self.host = host

    # -- edits -------------------------------------------------------------------------
    def do_evict(self, arg: str) -> None:
        """evict ENTRY | evict all [FUNC]
        The entry (a compile id, as `cache` lists it) is no longer used: the
        next call falls through to the next entry whose guards pass, or
        recompiles. An evicted entry still counts toward recompile_limit, as
        torch counts it. 'all': every entry of FUNC (default: the selected
        frame's function). Undone by `undo`."""
        words = arg.split()
        if not words or (words[0] != "all" and len(words) != 1) or len(words) > 2:
            raise CommandError("usage: evict ENTRY | evict all [FUNC]")
        with _one_line():
            if words[0] == "all":
                edit = cache.evict_all(words[1] if len(words) > 1 else self._selected_function())
            else:
                edit = cache.evict(parse_entry(words[0]))
            self._made(edit)

    def do_force(self, arg: str) -> None:
        """force ENTRY [once]
        The next call (or, without 'once', every call until `undo`) runs the
        entry's code without checking its guards. Results may be wrong: every
        stop says so while a force is active."""
        words = arg.split()
        if len(words) not in (1, 2) or (len(words) == 2 and words[1] != "once"):
            raise CommandError("usage: force ENTRY [once]")
        with _one_line():
            self._made(cache.force(parse_entry(words[0]), once=len(words) == 2))

    def do_guard(self, arg: str) -> None:
        """guard add ENTRY EXPR | guard drop ENTRY N
        add: the entry is used only where EXPR (over the frame's arguments,
        e.g. `n != 2`) is also true; an EXPR that raises counts as false.
        drop: the entry runs with guard N of its `guards` listing left out
        (a copy of its guards is installed; the entry itself is untouched)."""
        words = arg.split(None, 2)
        if len(words) < 3 or words[0] not in ("add", "drop"):
            raise CommandError("usage: guard add ENTRY EXPR | guard drop ENTRY N")
        entry = parse_entry(words[1])
        with _one_line():
            if words[0] == "add":
                edit = cache.add_guard(entry, words[2])
            else:
                if not words[2].strip().isdigit():
                    raise CommandError("N is a guard's number as `guards` lists it")
                edit = cache.drop_guard(entry, int(words[2]))
            self._made(edit)

    def do_patch(self, arg: str) -> None:
        """patch ENTRY replace|insert INDEX OPNAME [ARG] | patch ENTRY delete INDEX
        Edit the entry's code by the indexes `ll` shows (insert goes before
        INDEX); ARG as dis shows it: a number, a constant, a name. Each patch
        applies to the code as already patched; the next call runs the patched
        code under the entry's guards. Refused, in one line, when it does not
        assemble or could corrupt memory (README: Editing the cache)."""
        words = arg.split()
        if len(words) < 3:
            raise CommandError("usage: patch ENTRY replace|insert INDEX OPNAME [ARG] | "
                               "patch ENTRY delete INDEX")
        entry = parse_entry(words[0])
        with _one_line():     # ARG may be several words: `LOAD_CONST (1, 2)`
            self._made(cache.EDITS.patch(entry, patching.parse_op(words[1:])))

    def _made(self, edit: Edit) -> None:
        host = self.host
        host.write(f"edit {edit.describe()}")
        for note in edit.notes:
            host.write(f"  note: {note}")
        if edit.kind is EditKind.FORCE:
            host.write("  forced: guards are not checked, results may be wrong")
        frame_locals = self._call_inputs(edit.original)
        if frame_locals is not None:
            host.write(f"  a call with this call's inputs now "
                       f"{cache.EDITS.next_call(edit.original, frame_locals)}")

    # -- running by hand ---------------------------------------------------------------
    def do_run(self, arg: str) -> None:
        """run ENTRY ARGS...
        Run the entry's code on ARGS (Python expressions, evaluated here; name=
        value for keywords) outside dynamo: no guards are checked, resume
        functions it calls run as plain Python. Shows the result."""
        word, _, rest = arg.strip().partition(" ")
        if not word:
            raise CommandError("usage: run ENTRY ARGS...")
        entry = parse_entry(word)
        args, kwargs = self._arguments(rest)
        with _one_line():
            result = cache.run(entry, *args, **kwargs)
        self.host.write(f"[{entry}] returned {cut(summarize(result), 200)}")

    def _arguments(self, text: str) -> tuple[tuple, dict]:
        def collect(*args: object, **kwargs: object) -> tuple[tuple, dict]:
            return args, kwargs
        namespace = dict(self.host.namespace()) if self.host.stop is not None else {}
        namespace["__dyndbg_collect__"] = collect
        globals_ = self.host.frame.f_globals if self.host.stop is not None else {}
        try:
            return eval(f"__dyndbg_collect__({text})", globals_, namespace)  # noqa: S307
        except SyntaxError:
            raise CommandError(f"not Python arguments: {text!r}") from None
        except Exception as error:  # noqa: BLE001
            raise CommandError(f"the arguments raised {type(error).__name__}: {error}") from None

    # -- what is active ----------------------------------------------------------------
    def do_edits(self, arg: str) -> None:
        """edits
        The active edits of dynamo's cache, by number (for `undo`)."""
        edits = cache.EDITS.edits
        if not edits:
            self.host.write("no edits of dynamo's cache")
            return
        for edit in edits:
            self.host.write(edit.describe())
        if cache.EDITS.keep:
            self.host.write("kept when dyndbg detaches ('keep off' to undo them then)")

    def do_undo(self, arg: str) -> None:
        """undo N | undo all
        Undo an edit (or all): the next call runs what would have run without
        it. When the last evict or guard add of a function goes, the entries
        compiled meanwhile because of the edits are evicted too; those compiled
        because an entry's own guard failed stay (each said, with why)."""
        word = arg.strip()
        with _one_line():
            if word == "all":
                undone = cache.undo_all()
            elif word.isdigit():
                undone = cache.undo(int(word))
            else:
                raise CommandError("usage: undo N | undo all")
        if not undone:
            self.host.write("no edits to undo")
        for edit in undone:
            self.host.write(f"undid {edit.describe()}")
            for line in fell_through_lines(edit):
                self.host.write(f"  {line}")

    def do_keep(self, arg: str) -> None:
        """keep [off]
        Keep the edits when dyndbg detaches (end of input, quit, the end of a
        debug() block); by default detaching undoes them."""
        if arg.strip() not in ("", "off"):
            raise CommandError("usage: keep [off]")
        cache.EDITS.keep = arg.strip() != "off"
        self.host.write("edits are " + ("kept when dyndbg detaches" if cache.EDITS.keep
                                        else "undone when dyndbg detaches"))

    def notice(self) -> str | None:
        """The one line a stop shows while edits are active."""
        edits = cache.EDITS.edits
        if not edits:
            return None
        text = f"!! {len(edits)} cache edit{'s' if len(edits) != 1 else ''} active: " + \
            "; ".join(f"{e.number} {e.text}" for e in edits)
        if cache.EDITS.forcing():
            text += " (forced: guards not checked, results may be wrong)"
        return cut(text, 200) + " ('edits', 'undo')"

    # -- inside ------------------------------------------------------------------------
    def _selected_function(self) -> types.CodeType:
        entry = self.host.engine.entry_for(self.host.frame.f_code) \
            if self.host.stop is not None else None
        if entry is None or entry.original is None:
            raise CommandError("the selected frame is not a compiled function: evict all FUNC")
        return entry.original

    def _call_inputs(self, original: types.CodeType) -> dict | None:
        """The arguments of the stopped call, where it is a call of `original`."""
        stop = self.host.stop
        if stop is None or stop.entry.original is not original or stop.entry_locals is None:
            return None
        return stop.entry_locals


