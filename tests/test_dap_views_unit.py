"""The pure pieces of the DAP front end without a client: instruction
addresses and `disassemble` rows (dap/addresses.py), the virtual bytecode
source (dap/bytecode_source.py) and variables with their references
(dap/variables.py), on the code dynamo really generated for a function with
a graph break. Instructions are found by opname through tests/listing.py,
reading the listing the module itself makes (3.11's and 3.13's code differ:
instruction sizes, inline caches)."""
from __future__ import annotations

import collections
from typing import NamedTuple

import pytest
import torch

from dyndbg.cpython import NULL
from dyndbg.dap.addresses import MAX_INSTRUCTIONS, GraphRow, address, disassemble, \
    disassemble_graph, find_entry, graph_address, graph_of, graph_serial, parse_address
from dyndbg.dap.bytecode_source import bytecode_listing, serial_of_path, virtual_path
from dyndbg.dap.variables import References, StaleReference, variable
from dyndbg.dynamo.compiles import current_compile_id
from dyndbg.dynamo.compiles import GeneratedCode, Registry
from dyndbg.engine.codeinfo import CodeInfo, code_info
from dyndbg.engine.recording.recorded_values import Summary
from dyndbg.ui.text import render
from tests.listing import Listing, parse_listing


def _with_break(x, y):  # type: ignore[no-untyped-def]
    a = x.sin() + y
    print("graph break in test_dap_views_unit")
    b = a * 2 + x.cos()
    return b.sum()


class Generated(NamedTuple):
    entry: GeneratedCode
    info: CodeInfo
    listing: Listing       # the module's own listing, parsed as `ll` output is


@pytest.fixture(scope="module")
def generated() -> list[Generated]:
    """The transformed code of _with_break and its resume function, registered
    as the engine registers them."""
    registry = Registry()
    entries: list[GeneratedCode] = []

    def hook(original, new):  # type: ignore[no-untyped-def]
        entries.append(registry.add_transformed(original, new, current_compile_id()))

    handle = torch._dynamo.convert_frame.register_bytecode_hook(hook)
    try:
        torch._dynamo.reset()
        torch.compile(_with_break, backend="eager")(torch.arange(4.0), torch.ones(4))
    finally:
        handle.remove()
    assert [e.is_resume for e in entries] == [False, True]
    result = []
    for entry in entries:
        info = code_info(entry.extra, entry.code)
        result.append(Generated(entry, info, parse_listing(bytecode_listing(entry, info).text)))
    return result


@pytest.fixture
def transformed(generated: list[Generated]) -> Generated:
    return generated[0]


def _check_addresses(rows: list[dict]) -> list[int]:
    values = [int(row["address"], 0) for row in rows]
    assert all(row["address"] == row["address"].lower() and row["address"].startswith("0x")
               for row in rows)
    assert all(v > 0 for v in values)
    assert values == sorted(set(values)), "addresses not unique and ascending"
    return values


def _real(rows: list[dict]) -> list[dict]:
    real = [row for row in rows if row.get("presentationHint") != "invalid"]
    assert all(row["instruction"] == "" and set(row) == {"address", "instruction",
                                                         "presentationHint"}
               for row in rows if row not in real)
    return real


# -- addresses ---------------------------------------------------------------------------------
def test_address_is_the_serial_window_and_offset_and_parses_back() -> None:
    entry = GeneratedCode(_with_break.__code__, "transformed", None, "0/0", 0)
    assert address(entry, 0) == "0x100000" and address(entry, 0x2a) == "0x10002a"
    later = GeneratedCode(_with_break.__code__, "resume", None, "1/0", 11)
    assert address(later, 6) == "0xc00006"
    assert parse_address("0xc00006") == (11, 6) and parse_address(str(0xc00006)) == (11, 6)
    for garbage in ("", "zz", "0x", "-0x100000", "1.5", "0x10", None, "9" * 5000):
        assert parse_address(garbage) is None, garbage  # type: ignore[arg-type]
    assert find_entry([entry, later], 11) is later and find_entry([entry], 3) is None


def test_vscode_reload_shape_gives_exactly_400_rows_around_the_ip(transformed: Generated) -> None:
    entry, info, listing = transformed
    ip = listing.first("STORE_FAST", "graph_out_0")
    rows = disassemble(entry, info, ip.offset, 0, -200, 400)
    assert len(rows) == 400
    values = _check_addresses(rows)
    real = _real(rows)
    # Every instruction once, in order, with the text and label `ll` shows.
    assert [int(r["address"], 0) for r in real] == \
        [int(address(entry, i.offset), 0) for i in info.instructions]
    assert [r["instruction"] for r in real] == \
        [render.instruction_text(i) for i in info.instructions]
    assert {r["symbol"] for r in real} == {entry.label()}
    assert address(entry, ip.offset) in [r["address"] for r in rows]
    first_real = rows.index(real[0])
    assert first_real == 200 - ip.index            # padding rows before instruction 0
    assert values[first_real - 1] == values[first_real] - 1
    # Rows past the end start right after the last byte of the code.
    assert values[first_real + len(info)] == int(address(entry, 0), 0) + len(entry.code.co_code)


def test_other_vscode_shapes_count_exactly(generated: list[Generated]) -> None:
    for entry, info, listing in generated:
        ip = listing.first("STORE_FAST", "graph_out_0")
        focus = disassemble(entry, info, ip.offset, 0, -50, 100)
        assert len(focus) == 100 and focus[50]["address"] == address(entry, ip.offset)
        _check_addresses(focus)
        probe = disassemble(entry, info, ip.offset, 0, 0, 1)
        assert [r["address"] for r in probe] == [address(entry, ip.offset)]
        last = listing.instrs[-1]
        below = disassemble(entry, info, last.offset, 0, 1, 50)   # scrolling down past the end
        assert len(below) == 50 and _real(below) == []
        values = _check_addresses(below)
        assert values[0] > int(address(entry, last.offset), 0)
        assert disassemble(entry, info, ip.offset, 0, 0, 0) == []
        assert disassemble(entry, info, ip.offset, 0, 0, -5) == []
        assert len(disassemble(entry, info, 0, 0, 0, 10 * MAX_INSTRUCTIONS)) == MAX_INSTRUCTIONS


def test_start_snaps_into_the_instruction_holding_an_inline_cache(transformed: Generated) -> None:
    entry, info, listing = transformed
    # LOAD_GLOBAL has inline CACHE entries on 3.11-3.13 (a different number on each).
    load = listing.first("LOAD_GLOBAL")
    after = listing.at(load.index + 1)
    assert after.offset - load.offset > 2, "expected inline caches after LOAD_GLOBAL"
    for inside in range(load.offset + 1, after.offset):
        rows = disassemble(entry, info, load.offset, inside - load.offset, 0, 2)
        assert [r["address"] for r in rows] == [address(entry, load.offset),
                                                address(entry, after.offset)]
    # instructionBytes: its code units with their caches, as long as the gap.
    row = disassemble(entry, info, load.offset, 0, 0, 1)[0]
    assert row["instructionBytes"] == entry.code.co_code[load.offset:after.offset].hex()


def test_instruction_bytes_cover_the_code_object(generated: list[Generated]) -> None:
    for entry, info, _ in generated:
        rows = _real(disassemble(entry, info, 0, 0, 0, len(info)))
        assert len(rows) == len(info)
        assert "".join(r["instructionBytes"] for r in rows) == entry.code.co_code.hex()


def test_negative_instruction_offset_moves_back_by_instructions(transformed: Generated) -> None:
    entry, info, listing = transformed
    ip = listing.first("STORE_FAST", "graph_out_0")
    back = listing.at(ip.index - 3)
    rows = disassemble(entry, info, ip.offset, 0, -3, 4)
    assert [r["address"] for r in rows] == \
        [address(entry, listing.at(k).offset) for k in range(back.index, ip.index + 1)]
    # A byte `offset` relative to the reference counts too, before the instruction offset.
    rows = disassemble(entry, info, back.offset, ip.offset - back.offset, -1, 1)
    assert rows[0]["address"] == address(entry, listing.at(ip.index - 1).offset)


def test_far_requests_stay_in_the_code_objects_window(generated: list[Generated]) -> None:
    entry, info, _ = generated[0]
    for instruction_offset in (-10**9, 10**9):
        rows = disassemble(entry, info, 0, 0, instruction_offset, 400)
        assert len(rows) == 400 and _real(rows) == []
        values = _check_addresses(rows)
        assert {parse_address(hex(v))[0] for v in values} == {entry.serial}  # type: ignore[index]


def test_padding_addresses_parse_back_to_the_same_rows(generated: list[Generated]) -> None:
    """A client may send any row's address back as a memoryReference (VS Code
    scrolls from its first row): it must name the same code object."""
    for entry, info, listing in generated:
        rows = disassemble(entry, info, listing.instrs[0].offset, 0, -30, len(info) + 60)
        for row in rows:
            parsed = parse_address(row["address"])
            assert parsed is not None and parsed[0] == entry.serial
            again = disassemble(entry, info, parsed[1], 0, 0, 1)
            assert again[0]["address"] == row["address"]


def test_location_only_on_the_first_row_and_where_the_line_changes(
        generated: list[Generated]) -> None:
    located = []
    for entry, info, listing in generated:
        second = listing.instrs[1]      # the first real row is not the code's first
        rows = _real(disassemble(entry, info, second.offset, 0, 0, len(info) + 10))
        assert len(rows) == len(info) - 1
        previous = object()
        assert "location" in rows[0]
        for row in rows:
            instr = info.at_offset(parse_address(row["address"])[1])  # type: ignore[index]
            changed = instr.line != previous
            assert ("location" in row) == (row is rows[0] or changed), row
            if "location" in row:
                assert row["location"] == {"name": "test_dap_views_unit.py",
                                           "path": entry.code.co_filename}
                assert row.get("line") == instr.line
            else:
                assert "line" not in row
            previous = instr.line
        located.append(sum("location" in row for row in rows))
    # The transformed code's graph call is on the def line, the break on the print's.
    assert max(located) >= 2, "no line change seen"


# -- a compiled graph's window (issue 50) ----------------------------------------------------
# Rows as a graph stop lists them: (text, the user's (file, line) or None).
GRAPH_ROWS = [GraphRow("x   placeholder  x", None),
              GraphRow("a   call_function  torch.sin", ("/p/prog.py", 7)),
              GraphRow("b   call_function  operator.add", ("/p/prog.py", 7)),
              GraphRow("c   call_function  torch.cos", ("/p/lib.py", 3)),
              GraphRow("output   output  output", None),
              GraphRow("d   call_method  sum", ("/p/prog.py", 7))]


def _graph_rows(reference: int, instruction_offset: int, count: int, serial: int | None = None,
                ) -> list[dict]:
    serial = graph_serial(2, False) if serial is None else serial
    return disassemble_graph(serial, len(GRAPH_ROWS), GRAPH_ROWS.__getitem__,
                             "graph 2 eager forward", reference, 0, instruction_offset, count)


def test_graph_windows_lie_above_every_code_objects_and_parse_back() -> None:
    forward, backward = graph_serial(2, False), graph_serial(2, True)
    assert len({forward, backward, graph_serial(3, False)}) == 3
    assert graph_of(forward) == (2, False) and graph_of(backward) == (2, True)
    assert graph_of(0) is None and graph_of(1000) is None     # code objects' serials
    for serial in (forward, backward):
        for index in (0, 5, -3):
            assert parse_address(graph_address(serial, index)) == (serial, index)


def test_graph_rows_page_as_code_rows_do() -> None:
    """VS Code's shapes on a graph's window: exactly the rows asked for, one
    address a row, ascending, padding below the first and past the last row,
    far requests kept in the window, count <= 0 none."""
    serial = graph_serial(2, False)
    rows = _graph_rows(3, -200, 400)
    assert len(rows) == 400 and rows[200]["address"] == graph_address(serial, 3)
    values = _check_addresses(rows)
    real = _real(rows)
    assert [r["instruction"] for r in real] == [row.text for row in GRAPH_ROWS]
    assert [r["address"] for r in real] == \
        [graph_address(serial, i) for i in range(len(GRAPH_ROWS))]
    assert {r["symbol"] for r in real} == {"graph 2 eager forward"}
    assert all(v - values[0] == i for i, v in enumerate(values))    # one address a row, padding too
    assert [r["address"] for r in _graph_rows(3, 0, 1)] == [graph_address(serial, 3)]
    below = _graph_rows(len(GRAPH_ROWS) - 1, 1, 20)
    assert len(below) == 20 and _real(below) == [] and \
        below[0]["address"] == graph_address(serial, len(GRAPH_ROWS))
    for far in (-10**9, 10**9):
        rows = _graph_rows(0, far, 400)
        assert len(rows) == 400 and _real(rows) == []
        _check_addresses(rows)
        assert {parse_address(r["address"])[0] for r in rows} == {serial}  # type: ignore[index]
    assert _graph_rows(0, 0, 0) == [] and _graph_rows(0, 0, -5) == []
    assert len(_graph_rows(0, 0, 10 * MAX_INSTRUCTIONS)) == MAX_INSTRUCTIONS
    for row in _graph_rows(0, -30, 60):     # any row's address sent back names the same row
        window, index = parse_address(row["address"])  # type: ignore[misc]
        assert window == serial and _graph_rows(index, 0, 1)[0]["address"] == row["address"]


def test_graph_rows_name_their_user_line_where_it_changes() -> None:
    """The first row with a source names it, then each row whose source
    differs from the last one named; a row torch kept no line for names none."""
    rows = _real(_graph_rows(0, 0, len(GRAPH_ROWS)))
    located = [(r["location"], r["line"]) if "location" in r else None for r in rows]
    assert located == [None, ({"name": "prog.py", "path": "/p/prog.py"}, 7), None,
                       ({"name": "lib.py", "path": "/p/lib.py"}, 3), None,
                       ({"name": "prog.py", "path": "/p/prog.py"}, 7)]
    # a page starting mid-graph names the first row's source
    assert _real(_graph_rows(2, 0, 1))[0]["location"]["path"] == "/p/prog.py"


# -- the virtual bytecode source -----------------------------------------------------------------
def test_listing_instruction_lines_are_the_ll_lines(generated: list[Generated]) -> None:
    for entry, info, listing in generated:
        text = bytecode_listing(entry, info).text
        lines = text.split("\n")
        assert lines[0].startswith(f"# {entry.label()}  (") and entry.function in lines[0]
        ll = render.disassembly(info, 0, len(info) - 1, None, {})
        headers = [f"# {line.strip()}" for line in ll if parse_listing([line]).instrs == []]
        assert [ln for ln in lines[1:] if ln.startswith("#")] == headers
        assert [ln for ln in lines if not ln.startswith("#")] == \
            [ln for ln in ll if parse_listing([ln]).instrs]
        assert "\x1b" not in text


def test_listing_lines_and_offsets_map_both_ways(generated: list[Generated]) -> None:
    for entry, info, listing in generated:
        source = bytecode_listing(entry, info)
        lines = source.text.split("\n")
        seen = set()
        for instr in listing.instrs:
            line = source.line_of(instr.offset)
            assert line is not None and line not in seen
            seen.add(line)
            assert parse_listing([lines[line - 1]]).instrs[0].offset == instr.offset
            assert source.offset_at(line) == instr.offset
        # A comment line maps to the instruction below it; the header to the first.
        assert source.offset_at(1) == listing.instrs[0].offset
        for number, text in enumerate(lines, 1):
            if text.startswith("# ") and number > 1:
                below = parse_listing([lines[number]]).instrs
                assert below and source.offset_at(number) == below[0].offset
        assert source.offset_at(len(lines) + 1) is None and source.offset_at(0) is None
        assert source.line_of(-1) is None
        load = listing.first("LOAD_GLOBAL")
        assert source.line_of(load.offset + 1) == source.line_of(load.offset)


def test_virtual_paths_are_stable_distinct_and_parse_back(generated: list[Generated]) -> None:
    paths = [virtual_path(g.entry) for g in generated]
    assert len(set(paths)) == len(paths)
    for g, path in zip(generated, paths):
        assert path.endswith(".py") and "/" in path and " " not in path
        again = GeneratedCode(g.entry.code, g.entry.kind, g.entry.original,
                              g.entry.compile_id, g.entry.serial)   # the next run's entry
        assert virtual_path(again) == path
        assert serial_of_path(path) == g.entry.serial
        assert serial_of_path("/home/me/" + path) == g.entry.serial
    assert serial_of_path("/home/me/model.py") is None
    assert serial_of_path("dyndbg-bytecode/x-f.dis.py") is None


# -- variables and references ----------------------------------------------------------------------
def test_references_die_on_clear_and_are_never_reused() -> None:
    refs = References()
    scope = refs.scope([("x", [1, 2, 3]), ("n", 4)])
    children = refs.variables(scope)
    assert [(v["name"], v["value"], v["type"]) for v in children] == \
        [("x", "[1, 2, 3]", "list"), ("n", "4", "int")]
    inner = children[0]["variablesReference"]
    assert inner > 0 and children[1]["variablesReference"] == 0
    assert children[0]["indexedVariables"] == 3
    assert [v["value"] for v in refs.variables(inner)] == ["1", "2", "3"]
    refs.clear()
    for old in (scope, inner, 0, -1, 10**6):
        with pytest.raises(StaleReference):
            refs.variables(old)
    fresh = refs.scope([("y", {"k": 1})])
    assert fresh not in (scope, inner)
    with pytest.raises(KeyError):       # StaleReference is a KeyError
        refs.variables(inner)


def test_paging_of_lists_and_dicts() -> None:
    refs = References()
    big = list(range(1000))
    mapping = {f"k{i}": i for i in range(30)}
    scope = refs.scope([("big", big), ("mapping", mapping)])
    listed, named = refs.variables(scope)
    assert listed["indexedVariables"] == 1000 and "namedVariables" not in listed
    assert named["namedVariables"] == 30 and "indexedVariables" not in named
    page = refs.variables(listed["variablesReference"], start=500, count=3)
    assert [(v["name"], v["value"]) for v in page] == [("500", "500"), ("501", "501"),
                                                       ("502", "502")]
    assert len(refs.variables(listed["variablesReference"])) == 1000
    assert refs.variables(listed["variablesReference"], start=999, count=10)[0]["name"] == "999"
    keys = refs.variables(named["variablesReference"], start=28, count=0)
    assert [(v["name"], v["value"]) for v in keys] == [("'k28'", "28"), ("'k29'", "29")]
    # The same object under two names has one reference within a stop.
    again = refs.variables(refs.scope([("same", big)]))[0]
    assert again["variablesReference"] == listed["variablesReference"]


def test_tensors_expand_to_their_properties_and_small_values() -> None:
    refs = References()
    small = torch.arange(6.0).reshape(2, 3).requires_grad_()
    large = torch.zeros(100)
    scope = refs.scope([("small", small), ("large", large), ("size", small.shape),
                        ("slot", NULL), ("kept", Summary("Config", "<Config object>"))])
    shown = {v["name"]: v for v in refs.variables(scope)}
    assert shown["small"]["value"].startswith("Tensor f32[2, 3] cpu grad")
    assert shown["small"]["variablesReference"] > 0
    assert shown["size"]["value"] == "torch.Size([2, 3])"
    assert shown["size"]["variablesReference"] == 0          # a Size is a value, not a tuple
    assert (shown["slot"]["value"], shown["slot"]["type"],
            shown["slot"]["variablesReference"]) == (repr(NULL), "", 0)
    assert (shown["kept"]["value"], shown["kept"]["type"],
            shown["kept"]["variablesReference"]) == ("<Config object>", "Config", 0)
    props = {v["name"]: v for v in refs.variables(shown["small"]["variablesReference"])}
    assert list(props) == ["shape", "dtype", "device", "requires_grad", "grad_fn", "is_leaf",
                           "stride", "values"]
    assert props["dtype"]["value"] == "torch.float32" and props["stride"]["value"] == "(3, 1)"
    assert props["requires_grad"]["value"] == "True" and props["is_leaf"]["value"] == "True"
    rows = refs.variables(props["values"]["variablesReference"])
    assert [v["value"] for v in rows] == ["[0.0, 1.0, 2.0]", "[3.0, 4.0, 5.0]"]
    big = {v["name"] for v in refs.variables(shown["large"]["variablesReference"])}
    assert "values" not in big and "shape" in big
    assert not small.grad_fn and small.grad is None    # nothing ran on the tensor


def test_objects_and_modules_expand_to_their_attributes() -> None:
    class Point:
        def __init__(self) -> None:
            self.x, self.y = 1, [2]

    refs = References()
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
    Pair = collections.namedtuple("Pair", "left right")
    scope = refs.scope([("p", Point()), ("model", model), ("pair", Pair(1, "b"))])
    p, m, pair = refs.variables(scope)
    assert p["namedVariables"] == 2
    assert [(v["name"], v["value"]) for v in refs.variables(p["variablesReference"])] == \
        [("x", "1"), ("y", "[2]")]
    children = {v["name"]: v for v in refs.variables(m["variablesReference"])}
    assert {"0", "1", "training"} <= set(children) and "_modules" not in children
    linear = {v["name"] for v in refs.variables(children["0"]["variablesReference"])}
    assert {"weight", "bias", "in_features"} <= linear
    assert [(v["name"], v["value"]) for v in refs.variables(pair["variablesReference"])] == \
        [("left", "1"), ("right", "'b'")]


def test_hostile_user_objects_never_escape() -> None:
    class BadRepr:
        def __init__(self) -> None:
            self.inner = 5

        def __repr__(self) -> str:
            raise RuntimeError("no repr for you")

    class BadAttributes:
        def __getattribute__(self, name: str) -> object:
            raise RuntimeError(f"no {name}")

    class BadLen(list):
        def __len__(self) -> int:
            raise RuntimeError("no len")

    class BadItems(dict):
        def items(self):  # type: ignore[no-untyped-def, override]
            raise RuntimeError("no items")

    refs = References()
    scope = refs.scope([("r", BadRepr()), ("a", BadAttributes()), ("l", BadLen([1])),
                        ("d", BadItems(k=1))])
    shown = {v["name"]: v for v in refs.variables(scope)}
    assert "RuntimeError" in shown["r"]["value"] and "no repr for you" in shown["r"]["value"]
    inner = refs.variables(shown["r"]["variablesReference"])
    assert [(v["name"], v["value"]) for v in inner] == [("inner", "5")]
    assert shown["a"]["variablesReference"] == 0 and shown["l"]["variablesReference"] == 0
    items = refs.variables(shown["d"]["variablesReference"])
    assert len(items) == 1 and "no items" in items[0]["value"]
    # isinstance() reads __class__ through __getattribute__: summary and type still come.
    hostile = variable("v", BadAttributes(), refs)
    assert hostile["type"] == "BadAttributes" and hostile["value"].startswith("<test_dap_")
    assert "failed" not in hostile["value"]


def test_responses_match_the_dap_schema(transformed: Generated) -> None:
    """The bodies these modules make, in a response as the handlers send them,
    against debugProtocol.json (tests/dap_client.py's check)."""
    pytest.importorskip("jsonschema")
    pytest.importorskip("debugpy")
    from tests.dap_client import schema_errors
    entry, info, listing = transformed
    ip = listing.first("STORE_FAST", "graph_out_0")
    refs = References()
    scope = refs.scope([("t", torch.ones(2)), ("slot", NULL), ("m", {"a": [1]})])
    tensor_ref = refs.variables(scope)[0]["variablesReference"]
    bodies = {"disassemble": {"instructions": disassemble(entry, info, ip.offset, 0, -200, 400)},
              "variables": {"variables": refs.variables(scope) + refs.variables(tensor_ref)},
              "source": {"content": bytecode_listing(entry, info).text}}
    for command, body in bodies.items():
        message = {"seq": 1, "type": "response", "request_seq": 1, "success": True,
                   "command": command, "body": body}
        name, problems = schema_errors(message)
        assert name == command[0].upper() + command[1:] + "Response" and problems == [], problems
