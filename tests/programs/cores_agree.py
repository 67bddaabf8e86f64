"""Run a program with `record on`, on the compiled core, and at every
recorded instruction also on the pure-Python core in the same process:
the two slot readers must give the same objects, and a shadow History
recording with the Python code must make the same record as the compiled
one (the same instruction, frame and caller; equal kept values).

    python tests/programs/cores_agree.py PROGRAM...

Runs the programs one after the other (dynamo reset between them) and prints
one line per program: `CORES {"program": P, "records": N, "compared": N,
"differences": [...]}`.
"""
import io
import json
import sys

import torch

from dyndbg import cores
from dyndbg.attach import attach
from dyndbg.cpython import valuestack
from dyndbg.engine.recording import history as history_module
from dyndbg.engine.recording.recorded_values import Summary

from in_process import run_attached  # beside this file

differences: list[str] = []
counts = {"records": 0, "compared": 0, "reads": 0, "fast": 0}


def same(a: object, b: object, depth: int = 0) -> bool:
    """Equal as kept values: the same object, or copies/summaries/containers alike."""
    if a is b:
        return True
    if type(a) is not type(b) or depth > 8:
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and bool(
            torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                  and torch.equal(a.nan_to_num(), b.nan_to_num())))
    if isinstance(a, Summary):
        return a.type_name == b.type_name and a.text == b.text
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, (set, frozenset)):
        return a == b
    return False


def note(what: str) -> None:
    if len(differences) < 20:
        differences.append(what)


def run(program: str) -> None:
    """One program, attached anew, its records compared as they are made."""
    differences.clear()
    counts.update(records=0, compared=0, reads=0, fast=0)
    torch._dynamo.reset()
    engine = attach(io.StringIO(), ["record on", "continue"], read_rc=False, read_input=False)
    live = engine.history
    shadow = history_module.History()
    shadow._recorder = None         # the pure-Python core's record
    shadow.on = True
    record, forget, pause = live.record, engine.forget, live.pause

    def python_reader(read, frame):  # noqa: ANN001, ANN202
        reader = valuestack._reader
        valuestack._reader = valuestack._read_python
        try:
            return read(frame)
        finally:
            valuestack._reader = reader

    def both_record(frame, entry, info):  # noqa: ANN001, ANN202
        """History.record: where the engine records (an armed instruction)."""
        before = compare_slots(frame)
        record(frame, entry, info)
        python_reader(lambda f: shadow.record(f, entry, info), frame)
        compare_last(frame, before)

    def both_fast(frame, spec):  # noqa: ANN001, ANN202
        """The compiled record the tracing mechanism calls itself (engine.fast_paths.record)."""
        counts["fast"] += 1
        before = compare_slots(frame)
        result = compiled_record(frame, spec)
        python_reader(lambda f: shadow.after_record(shadow._record(f, spec)), frame)
        compare_last(frame, before)
        return result

    def compare_slots(frame):  # noqa: ANN001, ANN202
        compiled = valuestack.read_frame_slots(frame)
        python = python_reader(valuestack.read_frame_slots, frame)
        counts["reads"] += 1
        if len(compiled) != len(python) or any(a is not b for a, b in zip(compiled, python)):
            note(f"slots differ at {frame.f_code.co_name} @{frame.f_lasti}")
        return len(live)

    def compare_last(frame, before):  # noqa: ANN001, ANN202
        if len(live) == before:
            return
        counts["records"] += 1
        a, b = live[-1], shadow[-1]
        counts["compared"] += 1
        where = f"{a.instr.opname} @{a.instr.offset} in {frame.f_code.co_name}"
        if (a.seq, a.frame_id, a.caller) != (b.seq, b.frame_id, b.caller) or \
                a.entry is not b.entry or a.instr is not b.instr or a.globals is not b.globals:
            note(f"record header differs at {where}")
        if not same(a.stack, b.stack):
            note(f"stack differs at {where}: {a.stack!r} / {b.stack!r}"[:300])
        if not same(a.slots, b.slots):
            note(f"locals differ at {where}: {a.slots!r} / {b.slots!r}"[:300])

    def both_forget(frame):  # noqa: ANN001, ANN202
        """The engine forgets a frame (it empties the live history's tracks of it)."""
        forget(frame)
        shadow.tracks.pop(id(frame), None)

    def both_pause():  # noqa: ANN202
        pause()
        shadow.pause()

    live.record, engine.forget, live.pause = both_record, both_forget, both_pause
    compiled_record, fast_record = live.compiled_record, engine.fast_paths.record

    def fast(entry):  # noqa: ANN001, ANN202
        found = fast_record(entry)
        return None if found is None else found._replace(record=both_fast)

    engine.fast_paths.record = fast
    # Called from the compiled trace function: dynamo must not compile them.
    engine.hooks.shield(both_fast, compare_slots, compare_last, python_reader)
    run_attached(program, engine)
    print("CORES " + json.dumps({"program": program, "tracer": engine.tracer.name, **counts,
                                 "differences": differences}), flush=True)


def main() -> None:
    if cores.core() != "c":
        print(f"CORES {json.dumps({'error': 'not on the compiled core: ' + cores.note()})}")
        return
    for program in sys.argv[1:]:
        run(program)


if __name__ == "__main__":
    main()
