"""The recorded history at the prompt: `record`, `back` (gdb's `rs`),
`forward`, `present`, `history` and `history save`. A past point is a
PastView the session shows instead of the live stop: stack, locals, where,
p and pp read the recorded values there."""
from __future__ import annotations

import ast
import json
from typing import Mapping

from dyndbg.engine.recording.history import Record
from dyndbg.engine.recording.recorded_values import Summary
from dyndbg.engine.stop import StopReason
from dyndbg.ui.text import render
from dyndbg.ui.commands.host import Host, PastView
from dyndbg.ui.text.parsing import CommandError, format_bytes, parse_count, parse_int
from dyndbg.ui.text.values import summarize, type_name

HISTORY_LINES = 20        # `history` with no count
SAVED_WIDTH = 200         # characters of a value in `history save`


def present_position(records: int, newest_is_now: bool) -> int:
    """The history position of 'now': the newest record when it is the live
    stop's own instruction (recorded just before the stop), else one past it
    (at an exception or post mortem the failing instruction already ran)."""
    return records - 1 if newest_is_now and records else records


def moved(position: int, count: int, present: int) -> tuple[int, str]:
    """The position `count` instructions away (negative: back), clamped to
    the history, and what to say where it was clamped."""
    target = position + count
    if target < 0:
        return 0, "the oldest recorded instruction"
    if target >= present:
        return present, "now"
    return target, ""


class HistoryCommands:
    title = "history"

    def __init__(self, host: Host) -> None:
        self.host = host

    # -- recording -----------------------------------------------------------------
    def do_record(self, arg: str) -> None:
        """record [on|off]
        While on, every instruction that runs in dynamo-generated frames is
        recorded with its value stack and locals as they were before it ran
        (tensors of up to record-copy-limit elements as copies, other
        mutable objects as a summary taken then), from the instruction of the
        stop it is turned on at; back, forward, history and present move
        through it (--record: on from the start). Without an
        argument (or `info record`): what is held, and the bounds (set
        record-size N, set record-memory 512MB, set record-copy-limit N)."""
        value = arg.strip()
        engine = self.host.engine
        if value not in ("", "on", "off"):
            raise CommandError("usage: record [on|off]")
        if value:
            engine.recording = value == "on"
            self.host.write(f"record {value}")
            return
        info = engine.history.info()
        held = "no instructions" if not info.records else \
            f"{info.records} instructions (#{info.first} to #{info.last})"
        self.host.write(f"record {'on' if info.on else 'off'}: {held}, {info.copies} tensor "
                        f"copies in {format_bytes(info.bytes)}")
        self.host.write(f"  bounds: record-size {info.size} instructions, record-memory "
                        f"{format_bytes(info.memory)}, record-copy-limit {info.copy_limit} "
                        "elements")
        if info.dropped:
            self.host.write(f"  {info.dropped} older instructions dropped to keep the bounds")
        if info.unreadable:
            self.host.write(f"  {info.unreadable} instructions not recorded (frame not readable)")

    # -- moving ----------------------------------------------------------------------
    def _present(self) -> int:
        history = self.host.engine.history
        stop = self.host.stop
        newest_is_now = False
        if len(history) and stop is not None and \
                stop.reason in (StopReason.STEP, StopReason.BREAKPOINT):
            newest = history[-1]
            newest_is_now = newest.frame_id == id(stop.frame) and \
                newest.instr.offset == stop.instr.offset
        return present_position(len(history), newest_is_now)

    def _go(self, count: int) -> None:
        history = self.host.engine.history
        if not len(history):
            raise CommandError("nothing recorded ('record on' records from here on; "
                               "--record from the start)")
        present = self._present()
        past = self.host.past
        if present == 0:
            raise CommandError("no instruction recorded before now")
        # From the record in view (code run at the prompt may have added or dropped some).
        start = present if past is None else max(0, past.record.seq - history[0].seq)
        position, clamped = moved(start, count, present)
        if position == present:
            if past is None:
                raise CommandError("already at the present")
            self.host.past = None
            self.host.write("back at the present")
            if self.host.stop is not None:
                self.host.print_stop(self.host.stop)
            return
        if clamped:
            if past is not None and position == start:
                raise CommandError(f"already at {clamped}")
            dropped = history.info().dropped
            self.host.write(f"at the oldest recorded instruction"
                            f"{f' ({dropped} older ones dropped: set record-size)' if dropped else ''}")
        self.host.past = PastView(history[position], present - position)
        self.show()

    def do_back(self, arg: str) -> None:
        """back [N] | rs [N]
        Show the recorded instruction N (1) before the one in view: its stop
        display, and stack, locals, where, p and pp at it. It crosses frames
        (into the caller before a resume function started, into earlier graph
        calls). Needs `record on`."""
        self._go(-parse_count(arg.strip(), "count"))

    do_rs = do_back

    def do_forward(self, arg: str) -> None:
        """forward [N]
        The recorded instruction N (1) after the one in view; past the newest, the present."""
        self._go(parse_count(arg.strip(), "count"))

    def do_present(self, arg: str) -> None:
        """present
        Back to the live stop from a recorded point."""
        if self.host.past is None:
            raise CommandError("already at the present")
        self.host.past = None
        self.host.write("back at the present")
        if self.host.stop is not None:
            self.host.print_stop(self.host.stop)

    def show(self) -> None:
        """The stop display of the recorded point in view."""
        past = self.host.past
        assert past is not None
        record = past.record
        info = self.host.engine.info_for(record.entry)
        rename = render.renamer_for(record.globals)
        self.host.write(f"[{past.note()}]")
        self.host.write(render.location_line(record.entry.label(), info, record.instr, rename,
                                             self.host.highlighter.python))
        self.host.write("  " + render.stack_brief(list(record.stack), ""))
        what = render.effect_of(record.instr, list(record.stack))
        if what:
            self.host.write(f"  next: {what}")
        self.host.show_displays()

    # -- listing and saving -------------------------------------------------------------
    def do_history(self, arg: str) -> None:
        """history [N] | history save FILE
        The last N (20) recorded instructions, one line each: how many before
        now, function [compile id], instruction, opname, stack depth; the
        point in view is marked. `history save FILE` writes every recorded
        instruction as a JSON line (values as summaries) for a bug report."""
        words = arg.split(maxsplit=1)
        if words and words[0] == "save":
            if len(words) < 2:
                raise CommandError("usage: history save FILE")
            self._save(words[1].strip())
            return
        count = parse_int(words[0], "count") if words else HISTORY_LINES
        if count < 1:
            raise CommandError("count must be at least 1")
        history = self.host.engine.history
        if not len(history):
            raise CommandError("nothing recorded ('record on' records from here on)")
        present = self._present()
        past = self.host.past
        viewed = present if past is None else max(0, past.record.seq - history[0].seq)
        # The COUNT before now (and now, if recorded); around the point in
        # view if that is older.
        if viewed < present - count:
            first = max(0, viewed - count // 2)
            last = first + count - 1
        else:
            first, last = max(0, present - count), present
        for position in range(first, min(last + 1, len(history))):
            record = history[position]
            marker = "->" if position == viewed else "  "
            distance = present - position
            label = "now" if distance == 0 else f"-{distance}"
            self.host.write(f"{marker} {label:>7}  {record.entry.label()}  instr "
                            f"{record.instr.index} @{record.instr.offset}  "
                            f"{record.instr.opname:<20} depth {len(record.stack)}")
        if viewed == present and present == len(history):
            self.host.write(f"-> {'now':>7}  (not recorded: the failing instruction has run)"
                            if self.host.stop is not None and self.host.stop.exception
                            else f"-> {'now':>7}")

    def _save(self, path: str) -> None:
        history = self.host.engine.history
        try:
            with open(path, "w", encoding="utf-8") as out:
                for record in history:
                    out.write(json.dumps(record_json(record)) + "\n")
        except OSError as error:
            raise CommandError(f"can't write {path!r}: {error}") from None
        self.host.write(f"saved {len(history)} recorded instructions to {path}")


def summarized_names(expression: str, namespace: Mapping[str, object]) -> str:
    """Which names in the expression were recorded only as a summary (their
    attributes and items are not there), for the error of `p` at a recorded point."""
    try:
        names = {n.id for n in ast.walk(ast.parse(expression, mode="eval"))
                 if isinstance(n, ast.Name)}
    except (SyntaxError, ValueError):
        return ""
    found = [f"{name} = {namespace[name]!r}" for name in sorted(names)
             if isinstance(namespace.get(name), Summary)]
    return "only a summary was recorded of " + ", ".join(found) if found else ""


def _value_json(value: object) -> dict:
    return {"type": type_name(value) or type(value).__name__,
            "value": summarize(value, SAVED_WIDTH),
            **({"summary_only": True} if isinstance(value, Summary) else {})}


def record_json(record: Record) -> dict:
    """One line of `history save`: where, and the values as summaries."""
    entry, instr = record.entry, record.instr
    return {"seq": record.seq, "function": entry.function, "compile_id": entry.compile_id,
            "file": entry.code.co_filename, "line": instr.line, "index": instr.index,
            "offset": instr.offset, "opname": instr.opname, "argrepr": instr.argrepr,
            "caller_seq": record.caller if record.caller >= 0 else None,
            "stack": [_value_json(v) for v in record.stack],
            "locals": {name: _value_json(v) for name, v in record.locals().items()}}
