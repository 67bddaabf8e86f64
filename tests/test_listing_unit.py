"""The instruction finder of tests/listing.py, on `ll` texts captured from
dyndbg (samples/graph_break.py's f [0/0]): torch 2.15.0 and 2.13.0 on Python
3.11, torch 2.15.0 on 3.13. Pure and fast: no torch, no subprocess."""
from __future__ import annotations

import re

import pytest

from listing import Instr, parse_listing

LL_2_15_PY311 = """\
(dyndbg) ll
   graph_break.py:7  @torch.compile(backend="eager")
      0 @0            RESUME               0
->    1 @2            LOAD_GLOBAL          NULL + graph 2
      2 @14           LOAD_GLOBAL          torch.autograd.profiler
      3 @26           LOAD_ATTR            _is_profiler_enabled
      4 @36           STORE_FAST           tmp_3
      5 @38           LOAD_GLOBAL          torch._dynamo.utils
      6 @50           STORE_FAST           tmp_2
      7 @52           LOAD_CONST           None
      8 @54           STORE_FAST           tmp_1
      9 @56           LOAD_FAST            tmp_3
     10 @58           POP_JUMP_FORWARD_IF_FALSE to 104
     11 @60           LOAD_FAST            tmp_2
     12 @62           LOAD_METHOD          record_pregraph_bytecode_enter
     13 @84           PRECALL              0
     14 @88           CALL                 0
     15 @98           STORE_FAST           tmp_1
     16 @100          LOAD_CONST           None
     17 @102          JUMP_FORWARD         to 106
     18 @104       >> LOAD_CONST           None
     19 @106       >> NOP
     20 @108          POP_TOP
     21 @110          LOAD_FAST            x
     22 @112          LOAD_FAST            y
     23 @114          LOAD_FAST            tmp_1
     24 @116          LOAD_CONST           None
     25 @118          IS_OP                0
     26 @120          POP_JUMP_FORWARD_IF_TRUE to 168
     27 @122          LOAD_FAST            tmp_2
     28 @124          LOAD_METHOD          record_pregraph_bytecode_exit
     29 @146          LOAD_FAST            tmp_1
     30 @148          PRECALL              1
     31 @152          CALL                 1
     32 @162          POP_TOP
     33 @164          LOAD_CONST           None
     34 @166          JUMP_FORWARD         to 170
     35 @168       >> LOAD_CONST           None
     36 @170       >> NOP
     37 @172          POP_TOP
     38 @174          PRECALL              2
     39 @178          CALL                 2
     40 @188          STORE_FAST           graph_out_0
"""

LL_2_15_PY313 = """\
(dyndbg) ll
   graph_break.py:7  @torch.compile(backend="eager")
      0 @0            RESUME               0
->    1 @2            LOAD_GLOBAL          graph 2 + NULL
      2 @12           LOAD_GLOBAL          torch.autograd.profiler
      3 @22           LOAD_ATTR            _is_profiler_enabled
      4 @42           STORE_FAST           tmp_3
      5 @44           LOAD_GLOBAL          torch._dynamo.utils
      6 @54           STORE_FAST           tmp_2
      7 @56           LOAD_CONST           None
      8 @58           STORE_FAST           tmp_1
      9 @60           LOAD_FAST            tmp_3
     10 @62           TO_BOOL
     11 @70           POP_JUMP_IF_FALSE    to L1
     12 @74           LOAD_FAST            tmp_2
     13 @76           LOAD_ATTR            record_pregraph_bytecode_enter
     14 @96           PUSH_NULL
     15 @98           CALL                 0
     16 @106          STORE_FAST           tmp_1
     17 @108          LOAD_CONST           None
     18 @110          JUMP_FORWARD         to L2
     19 @112       >> LOAD_CONST           None
     20 @114       >> NOP
     21 @116          POP_TOP
     22 @118          LOAD_FAST            x
     23 @120          LOAD_FAST            y
     24 @122          LOAD_FAST            tmp_1
     25 @124          LOAD_CONST           None
     26 @126          IS_OP                0
     27 @128          POP_JUMP_IF_TRUE     to L3
     28 @132          LOAD_FAST            tmp_2
     29 @134          LOAD_ATTR            record_pregraph_bytecode_exit
     30 @154          PUSH_NULL
     31 @156          LOAD_FAST            tmp_1
     32 @158          CALL                 1
     33 @166          POP_TOP
     34 @168          LOAD_CONST           None
     35 @170          JUMP_FORWARD         to L4
     36 @172       >> LOAD_CONST           None
     37 @174       >> NOP
     38 @176          POP_TOP
     39 @178          CALL                 2
     40 @186          STORE_FAST           graph_out_0
"""

LL_2_13_PY311 = """\
(dyndbg) ll
   graph_break.py:7  @torch.compile(backend="eager")
      0 @0            RESUME               0
->    1 @2            LOAD_GLOBAL          NULL + graph 2
      2 @14           LOAD_GLOBAL          NULL + torch._dynamo.utils
      3 @26           LOAD_ATTR            record_pregraph_bytecode_enter
      4 @36           COPY                 1
      5 @38           STORE_FAST           tmp_1
      6 @40           PRECALL              0
      7 @44           CALL                 0
      8 @54           STORE_FAST           tmp_2
      9 @56           LOAD_FAST            x
     10 @58           LOAD_FAST            y
     11 @60           LOAD_GLOBAL          NULL + torch._dynamo.utils
     12 @72           LOAD_ATTR            record_pregraph_bytecode_exit
     13 @82           COPY                 1
     14 @84           STORE_FAST           tmp_3
     15 @86           LOAD_FAST            tmp_2
     16 @88           PRECALL              1
     17 @92           CALL                 1
     18 @102          POP_TOP
     19 @104          PRECALL              2
     20 @108          CALL                 2
     21 @118          DELETE_FAST          tmp_1
     22 @120          DELETE_FAST          tmp_3
     23 @122          STORE_FAST           graph_out_0
"""

# What `ll` prints with breakpoints (`B1`, `b2` disabled, `B3?` a candidate call),
# a cache edit (`*`) and the current instruction on a jump target.
MARKED = """\
   prog.py:4  y = x + 1
      0 @0            RESUME               0
      1 @2     B1     LOAD_GLOBAL          NULL + graph 2
      2 @14    b2     LOAD_FAST            x
   prog.py:5  return y
  *   3 @16    B3?    PRECALL              1
->*   4 @20    B12 >> CALL                 1
->    5 @30        >> POP_JUMP_FORWARD_IF_FALSE to 30
"""


def test_parse_fields_of_every_line() -> None:
    code = parse_listing(LL_2_15_PY311)
    assert [i.index for i in code] == list(range(41))
    first = code.at(1)
    assert first == Instr(index=1, offset=2, opname="LOAD_GLOBAL", arg="NULL + graph 2",
                          file="graph_break.py", line=7, current=True)
    assert code.current is first
    assert code.at(0).arg == "0" and code.at(0).opname == "RESUME"
    assert code.at(10) == Instr(10, 58, "POP_JUMP_FORWARD_IF_FALSE", "to 104", "graph_break.py", 7)
    assert code.at(18).jump_target and code.at(19).jump_target and not code.at(17).jump_target
    assert code.at(19).arg == ""                                    # NOP: no argument
    assert code.at_offset(104) is code.at(18)


def test_marks_breakpoints_edits_and_headers() -> None:
    code = parse_listing(MARKED)
    assert [(i.index, i.breakpoint, i.changed, i.current, i.jump_target, i.line) for i in code] == [
        (0, "", False, False, False, 4), (1, "B1", False, False, False, 4),
        (2, "b2", False, False, False, 4), (3, "B3?", True, False, False, 5),
        (4, "B12", True, True, True, 5), (5, "", False, True, True, 5)]
    assert code.at(4).opname == "CALL" and code.at(4).arg == "1"


def test_parse_skips_other_lines_and_takes_a_list_of_lines() -> None:
    transcript = ["(dyndbg) ll", "> f [0/0]  instr 1/135 @2  LOAD_GLOBAL   NULL + graph 2 x.py:7  f()",
                  "  stack: empty", "value stack, depth 1, bottom to top:",
                  "    0  tuple          (tensor(11.9179),)"] + LL_2_13_PY311.splitlines()
    code = parse_listing(transcript)
    assert len(code) == 24 and code.at(23).opname == "STORE_FAST"


def test_two_listings_are_refused() -> None:
    with pytest.raises(AssertionError, match="not one listing"):
        parse_listing(LL_2_13_PY311 + LL_2_13_PY311)


def test_find_by_opname_and_argument_on_each_version() -> None:
    for text, call, store in ((LL_2_13_PY311, 20, 23), (LL_2_15_PY311, 39, 40),
                              (LL_2_15_PY313, 39, 40)):
        code = parse_listing(text)
        assert code.find("STORE_FAST", "graph_out_0").index == store
        # The graph call: the CALL right before graph 2's output is stored.
        assert code.find_all("CALL", before=store)[-1].index == call
        assert code.first("LOAD_FAST", "x").line == 7


def test_find_with_patterns_lines_and_bounds() -> None:
    code = parse_listing(LL_2_15_PY311)
    modules = code.find_all("LOAD_GLOBAL", re.compile(r"torch\.[\w.]+"))
    assert [(i.index, i.arg) for i in modules] == [(2, "torch.autograd.profiler"),
                                                   (5, "torch._dynamo.utils")]
    assert [i.index for i in code.find_all(re.compile("POP_JUMP_.*"))] == [10, 26]
    assert [i.index for i in code.find_all("LOAD_CONST", "None", after=16, before=35)] == [18, 24, 33]
    assert code.first("LOAD_CONST", "None", after=code.at(16)).index == 18
    assert code.find_all("LOAD_FAST", "x", line=8) == []
    assert len(code.find_all(line=7)) == 41
    # A whole-text match: "x" is not "x_1", a pattern must cover the whole argument.
    assert code.find_all("LOAD_FAST", re.compile("tmp")) == []


def test_find_wants_exactly_one_and_says_what_it_saw() -> None:
    code = parse_listing(LL_2_15_PY311)
    with pytest.raises(AssertionError, match=r"2 instructions match opname='LOAD_METHOD'.*"
                                             r"12 @62 LOAD_METHOD record_pregraph_bytecode_enter"):
        code.find("LOAD_METHOD")
    with pytest.raises(AssertionError, match=r"0 instructions match opname='CALL_FUNCTION_EX'"):
        code.find("CALL_FUNCTION_EX")
    with pytest.raises(AssertionError, match=r"no instruction matches opname='LOAD_FAST', "
                                             r"arg='z', after=3 in:\n\(dyndbg\) ll"):
        code.first("LOAD_FAST", "z", after=code.at(3))
    with pytest.raises(AssertionError, match="no instruction 99"):
        code.at(99)


def test_jump_targets_by_offset_and_by_label() -> None:
    py311, py313 = parse_listing(LL_2_15_PY311), parse_listing(LL_2_15_PY313)
    assert py311.jump_target(py311.at(10)).index == 18          # to 104
    assert py311.jump_target(py311.at(17)).index == 19          # to 106
    assert py311.jump_target(py311.at(9)) is None
    # 3.13's dis numbers the jump targets L1, L2... in code order.
    assert py313.at(11).arg == "to L1" and py313.jump_target(py313.at(11)).index == 19
    assert py313.jump_target(py313.at(27)).index == 36          # to L3
    assert py313.jump_target(py313.at(35)).index == 37          # to L4


def test_successors_and_paths() -> None:
    code = parse_listing(LL_2_15_PY311)
    assert code.successors(code.at(9)) == [10]
    assert code.successors(code.at(10)) == [11, 18]             # conditional
    assert code.successors(code.at(17)) == [19]                 # JUMP_FORWARD: no fall-through
    assert code.successors(code.at(40)) == []                   # the end of the captured text
    # The profiler is off: both `if`s skip their bodies.
    ran = list(range(1, 11)) + [18, 19] + list(range(20, 27)) + list(range(35, 41))
    assert code.path_problem(ran) is None
    assert code.path_problem(list(range(1, 41))) == \
        "18 ran after 17 @102 JUMP_FORWARD to 106, which can only be followed by [19]"
    skipped_one = [i for i in ran if i != 19]
    assert "20 ran after 18 @104 LOAD_CONST None" in code.path_problem(skipped_one)
    assert code.path_problem([1, 2, 77]) == "instruction 77 is not in the listing"
    py313 = parse_listing(LL_2_15_PY313)
    ran = list(range(1, 12)) + list(range(19, 28)) + list(range(36, 41))
    assert py313.path_problem(ran) is None
    assert py313.path_problem(list(range(1, 12)) + [12]) is None          # profiler on
    assert py313.path_problem([17, 18, 19]) is not None


def test_on_every_path() -> None:
    code = parse_listing(LL_2_15_PY311)
    # Inside the bodies of the template's two `if`s, and their else-branch constants: no.
    assert [i.index for i in code if not code.on_every_path(i)] == \
        list(range(11, 19)) + list(range(27, 36))
    old = parse_listing(LL_2_13_PY311)                  # torch 2.13: no branch
    assert all(old.on_every_path(i) for i in old)
    py313 = parse_listing(LL_2_15_PY313)
    assert py313.on_every_path(py313.find("STORE_FAST", "graph_out_0"))
    assert not py313.on_every_path(py313.find("CALL", "0"))
