"""Commands about what dynamo made: graphs, guards, cache entries."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

from dyndbg.cpython import call_site
from dyndbg.dynamo.graphs import lookup as graphs
from dyndbg.dynamo.guards import entries as guards
from dyndbg.dynamo.compiles import why
from dyndbg.dynamo.edits import EDITS
from dyndbg.dynamo.names import GRAPH_NAME, find_graph_global, graph_number, readable
from dyndbg.dynamo.graphs import graph_views
from dyndbg.ui.commands import graph_checks, graph_listing
from dyndbg.ui.commands.host import Host
from dyndbg.ui.text.parsing import CommandError
from dyndbg.ui.text.values import cut, summarize

if TYPE_CHECKING:
    from dyndbg.dynamo.guards import GuardLine
    from dyndbg.dynamo.shapes.story import ShapesAnswer
    from dyndbg.dynamo.compiles import GeneratedCode


class DynamoCommands:
    title = "dynamo"

    def __init__(self, host: Host) -> None:
        self.host = host

    # -- graphs ----------------------------------------------------------------------
    def _find_graph(self, spec: str) -> tuple[str, object]:
        """(global name, value) of a graph: by number, name, or the current call."""
        host = self.host
        frames = list(reversed(host.frames))
        if not spec:
            call = self.host.graph_call
            if call is not None and call.frame is host.stop.frame:  # type: ignore[union-attr]  # at a stop
                return call.name, call.frame.f_globals.get(call.name)
            names = [n for n in host.frame.f_code.co_names if GRAPH_NAME.fullmatch(n)]
            if not names:
                raise CommandError("no graph at this instruction or in this code: "
                                   "give a number or name (graph N)")
            spec = names[0]
        found = find_graph_global(spec, [f.f_globals for f in frames])
        if found is None:
            raise CommandError(f"no compiled graph {spec!r} found (yet)")
        namespace, name = found
        return name, namespace[name]

    def do_graph(self, arg: str) -> None:
        """graph [N | NAME] [--traced | --compiled] [--output-code] | graph run|capture|bisect|values [N] ...
        The FX graph of a compiled graph, with shapes and the user's source
        lines: the one called at the current instruction by default, with
        the backend that compiled it (named as `cache` names it). It lists
        dynamo's graph as traced, before the backend saw it (a backend may
        rewrite it in place), and says whether the graph the backend left
        differs; --compiled lists dynamo's graph as the backend left it. With
        --output-code, inductor's generated code for it.
        N below defaults to the graph called at this stop, with its inputs;
        elsewhere the inputs are those `graph capture N` kept.
        graph capture N: keep the inputs of graph N's next call; stopped at a
        call of graph N, those of that call.
        graph run N [INPUTS...]: call compiled graph N on INPUTS (Python
        expressions separated by spaces or commas; one with spaces inside
        brackets: `graph run 1 x (y + 1)`) and dynamo's graph (as traced,
        before the backend) eagerly on the same, and compare.
        graph bisect N [--rtol R] [--atol A] [--no-fp64] [--save FILE]: the
        first node whose value compiled by graph N's backend differs from
        dynamo's graph run eagerly, judged against a float64 run as
        torch._dynamo.utils.same judges (tolerances default to its 1e-4);
        --save writes a script reproducing it, its inputs beside it.
        graph values N NODE: one node's eager, float64 and compiled values."""
        host = self.host
        words = arg.split()
        if words and words[0] in graph_checks.ACTIONS:
            self._graph_check(words[0], words[1:], arg)
            return
        request = graph_listing.parse_request(words)
        name, value = self._find_graph(request.spec)
        if request.output_code:
            code = graphs.inductor_output_code(name, value)
            if code is None:
                raise CommandError(f"no inductor output code for graph {graph_number(name)} "
                                   "(only graphs compiled by inductor have it)")
            host.write(host.highlighter.python(code))
            return
        views = graph_views(name, value)
        if views is None:
            raise CommandError(f"{name} is not a compiled graph")
        lines, info = graph_listing.listing(views, request.view)
        for line in lines:
            host.write(line)
        host.write(host.highlighter.python(info.code))

    def _graph_check(self, action: str, words: list[str], arg: str) -> None:
        from dyndbg import cache as api
        number, rest = graph_checks.graph_number_of(words, action, self._graph_called_here)
        at_hand = self._call_at_hand(number)
        try:
            if action == "capture":
                if rest:
                    raise CommandError(f"usage: {graph_checks.USAGE[action]}")
                api.graph_capture(number, at_hand)
                if at_hand is None:
                    self.host.write(f"graph {number}: the inputs of its next call will be kept "
                                    f"(then: graph run {number})")
                else:
                    kept = f"{len(at_hand)} input{'s' if len(at_hand) != 1 else ''}"
                    self.host.write(f"graph {number}: kept the {kept} of the call at hand "
                                    f"(then: graph run {number}); its next call's will "
                                    "replace them")
            elif action == "run":
                self._graph_run(number, arg, at_hand)
            elif action == "bisect":
                options = graph_checks.parse_bisect_options(rest)
                found = api.graph_bisect(number, *(at_hand or ()), rtol=options.rtol,
                                         atol=options.atol, fp64=options.fp64,
                                         save=options.save)
                for line in graph_checks.bisect_lines(found):
                    self.host.write(line)
                if options.save is not None:
                    self.host.write(f"saved: python {options.save} reproduces it")
            else:
                if len(rest) != 1:
                    raise CommandError(f"usage: {graph_checks.USAGE[action]}")
                shown = api.graph_values(number, rest[0], *(at_hand or ()))
                for line in graph_checks.values_lines(shown):
                    self.host.write(line)
        except api.CacheError as error:
            raise CommandError(str(error)) from None

    def _graph_run(self, number: int, arg: str, at_hand: list[object] | None) -> None:
        from dyndbg import cache as api
        texts = graph_checks.run_inputs(arg)
        inputs = tuple(self._input(k, text) for k, text in enumerate(texts, 1)) if texts \
            else tuple(at_hand or ())
        ran = api.graph_run(number, *inputs)
        self.host.write(f"compiled graph {number}: {cut(summarize(ran.compiled), 150)}")
        if ran.eager is not None:
            self.host.write(f"dynamo's graph, eager: {cut(summarize(ran.eager), 150)}")
        self.host.write(("same: " if ran.same else "DIFFERENT: " if ran.same is False else "")
                        + ran.difference)

    def _input(self, k: int, text: str) -> object:
        """The value of the k-th input expression of `graph run`, or one line why not."""
        try:
            return self.host.evaluate(text)
        except Exception as error:  # noqa: BLE001 - the user's expression
            raise CommandError(f"input {k} ({text}): {type(error).__name__}: {error}") from None

    def _graph_called_here(self) -> int | None:
        """The number of the graph called at the live stop's instruction, if any."""
        stop, call = self.host.stop, self.host.graph_call
        if stop is None or call is None or self.host.past is not None \
                or call.frame is not stop.frame or call.index != stop.instr.index:
            return None
        return graph_number(call.name)

    def _call_at_hand(self, number: int) -> list[object] | None:
        """The arguments of graph `number`'s call when the live stop is at it (the
        graph already on the value stack: a capture put in the global now misses it)."""
        stop = self.host.stop
        if self._graph_called_here() != number or stop is None or stop.stack is None:
            return None
        site = call_site(stop.instr.opname, stop.instr.arg, stop.stack)
        return None if site is None else list(site.args)

    # -- cache entries and guards ----------------------------------------------------------
    def do_guards(self, arg: str) -> None:
        """guards [all]
        The guards of the cache entry that is running, evaluated against this
        call's inputs (each guard passed or failed), each with the line of
        yours that made dynamo install it (`# file.py:12`), or "(torch's own)"
        for one torch installs itself; 'all' for every entry."""
        host = self.host
        if arg.strip() not in ("", "all"):
            raise CommandError("usage: guards [all]")
        entry = self._selected_entry()
        frame_locals = self._entry_locals_of(host.frame)
        if entry.original is None:
            raise CommandError(f"{entry.label()} was never compiled: it has no guards")
        entries = guards.cache_entries(entry.original)
        running_code = self._entry_code(entry)
        if entry.edited is not None:
            host.write(f"the edited code of [{entry.compile_id}] runs; these are the entry's "
                       "own guards ('edits' says how an edit changes them)")
        targets = [e.code for e in entries] if arg.strip() == "all" else [running_code]
        for code in targets:
            compile_id = next((e.compile_id for e in entries if e.code is code), "?")
            tree = guards.guard_tree(entry.original, code, frame_locals, running=running_code)
            running = " (running)" if code is running_code else ""
            host.write(f"guards of [{compile_id}]{running}, against this call's inputs:")
            if isinstance(tree, str):
                host.write(f"  {tree}")
                continue
            unevaluated = False
            for line in tree:
                # A note has no number; a guard that could not be evaluated here, n/a.
                mark = {True: "ok  ", False: "FAIL",
                        None: "    " if line.number is None else "n/a "}[line.passed]
                unevaluated = unevaluated or mark == "n/a "
                number = "" if line.number is None else str(line.number)
                # Where the guard came from, kept whole however long the guard.
                origin = "" if line.origin is None else \
                    ("  (torch's own)" if line.origin == "torch" else f"  # {line.origin}")
                host.write(cut(f"  {mark} {number:>3}{'  ' * line.depth}{line.text}",
                               163 - len(origin)) + origin)
                if line.reason:
                    # Torch's hint (why dynamo guarded this) is kept out of the code and
                    # shown only where it helps: under the guard that failed.
                    hint = f"  (HINT: {line.hint})" if line.hint else ""
                    host.write(f"         {'  ' * line.depth}^ {line.reason}{hint}")
            if unevaluated:
                host.write("  n/a: not evaluated on its own here (its value or its code does not "
                           "evaluate out of the frame)")

    def do_why(self, arg: str) -> None:
        """why [guard N | shapes]
        Why dynamo made the selected frame's code: in a resume function, the
        graph break that made it (torch's reason, hints and the user's stack);
        in code that breaks its graph, that break; in a recompile [i/j], the
        older entries' failing guards for this call; in [i/0], the first compile;
        and each function it called that dynamo skipped, with torch's reason.
        'why guard N': the stack of your frames (innermost last) when dynamo
        installed guard N of the running entry (N as `guards` numbers it).
        'why shapes': each symbol of the running entry: its source, its value
        at this call and the one compiled for, its range as torch keeps it,
        why it is symbolic (automatic dynamic with the sizes seen before,
        mark_dynamic, dynamic=True, unbacked) with its line, and what torch
        replaced it by (a specialization), with torch's reason and line; then
        the shape guards torch added, each with its line."""
        host = self.host
        words = arg.split()
        if words == ["shapes"]:
            self._why_shapes()
            return
        if words and (words[0] != "guard" or len(words) != 2 or not words[1].isdigit()):
            raise CommandError("usage: why [guard N | shapes]")
        entry = self._selected_entry()
        if words:
            guard_line = self._guard_line(entry, int(words[1]))
            # A cache edit's code stands for its entry: that compile's stacks.
            compiled = self.host.engine.entry_for(self._entry_code(entry)) or entry
            for text in why.guard_story(compiled, guard_line):
                host.write(text)
            return
        explained = None
        if entry.original is not None:
            explained = guards.explain_entry(entry.original, entry.code,
                                             self._entry_locals_of(host.frame))
        for line in why.explain(entry, host.frame.f_globals, host.engine.registry, explained,
                                show=lambda value: cut(summarize(value), 120)):
            host.write(line)

    def _why_shapes(self) -> None:
        for line in self.shapes_answer().lines():
            self.host.write(line)

    def shapes_answer(self) -> ShapesAnswer:
        """`why shapes` in the selected frame (the prompt's, the editor's Shapes scope)."""
        entry = self._selected_entry()
        compiled = self.host.engine.entry_for(self._entry_code(entry)) or entry
        return why.shapes(compiled, self._entry_locals_of(self.host.frame),
                          show=lambda value: cut(summarize(value), 60))

    def do_cache(self, arg: str) -> None:
        """cache [FUNC]
        The cache entries of the selected frame's function (or FUNC): compile id,
        the graphs and resume functions its code calls, guard count, backend,
        and why dynamo compiled it (the first compile, or each older entry's
        failing guard with the line that installed it, as torch recorded it).
        Most recently used first, as dynamo tries them."""
        host = self.host
        if arg.strip():
            originals = self._originals_named(arg.strip())
        else:
            entry = self._selected_entry()
            if entry.original is None:
                raise CommandError(f"{entry.label()} was never compiled: it has no cache entries")
            originals = [entry.original]
        for original in originals:
            entries = guards.cache_entries(original)
            host.write(f"{original.co_name} ({original.co_filename}:{original.co_firstlineno}): "
                       f"{len(entries)} cache entr{'y' if len(entries) == 1 else 'ies'}")
            running = host.frame.f_code
            for e in entries:
                marker = "->" if e.code is running else "  "
                called = [readable(g) for g in e.graphs] + [
                    readable(r, host.frame.f_globals) for r in e.resume_functions]
                evicted = EDITS.eviction(original, e.compile_id)
                host.write(f"{marker} [{e.compile_id}]  guards {e.guard_count}  "
                           f"backend {e.backend or '?'}  calls {', '.join(called) or 'nothing'}"
                           + (f"  ({evicted})" if evicted else ""))
                generated = host.engine.registry.by_id.get(id(e.code))
                if generated is not None and generated.because:
                    for reason in generated.because:
                        host.write(f"     compiled because {reason.one_line()}")
                elif generated is not None and (e.compile_id or "").endswith("/0"):
                    host.write("     compiled: the first compile")

    def _guard_line(self, entry: GeneratedCode, number: int) -> GuardLine:
        """Line `number` of the running entry's `guards` listing."""
        if entry.original is None:
            raise CommandError(f"{entry.label()} was never compiled: it has no guards")
        code = self._entry_code(entry)
        tree = guards.guard_tree(entry.original, code,
                                 self._entry_locals_of(self.host.frame), running=code)
        if isinstance(tree, str):
            raise CommandError(tree)
        found = next((line for line in tree if line.number == number), None)
        if found is None:
            numbers = [line.number for line in tree if line.number is not None]
            raise CommandError(f"no guard {number}: `guards` numbers them "
                               f"{min(numbers, default=0)} to {max(numbers, default=0)}")
        return found

    def _entry_code(self, entry: GeneratedCode) -> types.CodeType:
        """The cache entry's code that `entry` runs as: a cache edit's code is not
        itself an entry, and stands for the entry of its compile id."""
        if entry.edited is None or entry.original is None:
            return entry.code
        return next((e.code for e in guards.cache_entries(entry.original)
                     if e.compile_id == entry.compile_id), entry.code)

    def _selected_entry(self) -> GeneratedCode:
        entry = self.host.engine.entry_for(self.host.frame.f_code)
        if entry is None:
            raise CommandError("the selected frame is not dynamo-generated code")
        return entry

    def _originals_named(self, name: str) -> list[types.CodeType]:
        found: dict[int, types.CodeType] = {}
        for entry in self.host.engine.registry.entries():
            if entry.original is not None and name in (entry.function, entry.qualname):
                found[id(entry.original)] = entry.original
        if not found:
            raise CommandError(f"no compiled function named {name!r} (yet)")
        return list(found.values())

    def _entry_locals_of(self, frame: types.FrameType) -> dict:
        """The inputs the guards saw: what the frame had bound when it started
        (its arguments and free variables); another frame's, as they are now."""
        stop = self.host.stop
        assert stop is not None
        if frame is stop.frame and stop.entry_locals is not None:
            return stop.entry_locals
        return dict(self.host.frame_locals(frame))

    def entry_explanation(self) -> str | None:
        """`running cache entry [0/1]; [0/0] rejected: <guard failure>` for a new frame."""
        stop = self.host.stop
        if stop is None or stop.entry.original is None or stop.entry_locals is None:
            return None
        explained = guards.explain_entry(stop.entry.original, stop.entry.code, stop.entry_locals)
        if explained is None:
            return None
        text = f"cache entry [{explained.running or stop.entry.compile_id}] runs"
        for compile_id, reason in explained.rejected:
            text += f"; [{compile_id}] guard failed: {reason}"
        return text
