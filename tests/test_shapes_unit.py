"""Reading torch's text for its shape guards, and what `why shapes` and `why`
say from a compile's record (issue 51): pure functions, on texts made by
torch's own SLoc and format_frame, as produce_guards_verbose writes them."""
from __future__ import annotations

import traceback

from torch._guards import SLoc
from torch.utils._traceback import format_frame

from dyndbg.dynamo.compiles.recompiles import parse
from dyndbg.dynamo.guards.tree import installed_at
from dyndbg.dynamo.shapes import parts, story
from dyndbg.dynamo.shapes.record import ReplacementFact, ShapeRecord, SymbolFact, Symbolic

TORCH_FRAME = traceback.FrameSummary("/site-packages/torch/_dynamo/variables/tensor.py", 2606,
                                     "evaluate_expr")
RANGE_PROSE = ("user code shown is first use of this value--the guard itself is not due user "
               "code but due to 0/1 specialization in the framework")


def user_sloc(line: int, text: str, framework: object = TORCH_FRAME) -> SLoc:
    frame = traceback.FrameSummary("/home/me/prog.py", line, "f", line=text)
    return SLoc(framework, format_frame(frame, line=True))  # type: ignore[arg-type]


def test_a_shape_guards_comment_gives_the_user_line_never_torchs_file() -> None:
    sloc = user_sloc(9, "for i in range(1, y.shape[0]):  # a loop")
    part = parts.shape_part(f"L['x'].size()[0] != 8  # {sloc}")
    assert part is not None and part.code == "L['x'].size()[0] != 8"
    assert part.origin == "prog.py:9" and part.sloc.user is not None
    assert part.sloc.user.text == "for i in range(1, y.shape[0]):  # a loop"
    assert installed_at(str(sloc)) == "prog.py:9"
    # torch's recompile reason for a failing shape guard carries the same comment
    assert parse(f"0/1: (x.size()[0] // 2) == 3  # {sloc}").where == "prog.py:9"


def test_torchs_own_shape_guards_are_said_so() -> None:
    ranged = parts.shape_part(f"2 <= L['x'].size()[0]  # {user_sloc(5, 'y = x + 1', RANGE_PROSE)}")
    nowhere = parts.shape_part(f"L['n'] != 0  # {SLoc(TORCH_FRAME, None)}")
    both = parts.shape_part(f"2 <= L['x'].size()[0] <= 9  # {user_sloc(5, 'y', RANGE_PROSE)} "
                            f"and {user_sloc(7, 'z')}")
    for part in (ranged, nowhere, both):
        assert part is not None and part.origin == "torch", part
    assert ranged is not None and ranged.note == RANGE_PROSE


def test_only_the_shape_guards_lambda_is_read_as_one() -> None:
    shaped = [f"(L['x'].size()[0] % 2) == 0  # {user_sloc(3, 'if x.shape[0] % 2 == 0:')}",
              f"2 <= L['x'].size()[0]  # {user_sloc(3, 'x', RANGE_PROSE)}"]
    assert parts.is_shape_lambda("LAMBDA_GUARD", shaped)
    # torch 2.13's object aliasing lambda: a Guard's comment, with no framework part
    aliasing = ["L['a'] is L['b']      # return a if a is b else b  # prog.py:4 in f"]
    assert not parts.is_shape_lambda("LAMBDA_GUARD", aliasing)
    assert not parts.is_shape_lambda("EQUALS_MATCH", shaped)


def record(symbolic: Symbolic, target: object = None) -> ShapeRecord:
    fact = SymbolFact("s77", ("L['x'].size()[0]",), 6, 2, "int_oo", symbolic,
                      user_sloc(4, "if x.shape[0] == 8:"), None)
    replaced = () if target is None else (ReplacementFact(
        "s77", ("L['x'].size()[0]",), target, "range_refined_to_singleton",
        user_sloc(9, "for i in range(1, y.shape[0]):  # specializes"), None),)
    return ShapeRecord((fact,), replaced, (), True)


def test_a_dynamic_dim_specialized_again_is_said_plainly() -> None:
    import sympy
    shown = story.answer("f [0/1]", record(Symbolic.AUTOMATIC, sympy.Integer(6)),
                         lambda source: (True, 7),
                         [("0/0", "tensor 'x' size mismatch at index 0. expected 8, actual 6")],
                         entries=2, limit=8)
    [symbol] = shown.symbols
    assert (symbol.value, symbol.compiled_for, symbol.range) == ("7", "6", "[2, int_oo]")
    assert symbol.seen == ("8 ([0/0])",) and symbol.made.where == "prog.py:4"
    assert symbol.plain == ("dim 0 of L['x'] is specialized to 6 by "
                            "`for i in range(1, y.shape[0]):` (prog.py:9): each new size compiles "
                            "again (2 cache entries now; dynamo stops compiling it at "
                            "config.recompile_limit, 8)")
    said = story.recompile_lines("0/1", "tensor 'L['x']' size mismatch at index 0. expected 6, "
                                 "actual 7", "", record(Symbolic.AUTOMATIC, sympy.Integer(6)),
                                 None, "f", 3, 8)
    assert said == ["    [0/1] had specialized dim 0 of L['x'] to 6 by "
                    "`for i in range(1, y.shape[0]):` (prog.py:9, range_refined_to_singleton): "
                    "each new size compiles again; f has 3 cache entries toward "
                    "config.recompile_limit (8)"]


def test_a_shape_guard_that_fails_at_a_recompile_names_its_line() -> None:
    pinned = story.recompile_lines("0/1", "L['x'].size()[0] == 6", "prog.py:10", None,
                                   None, "f", 3, 8)
    assert pinned == ["    a shape guard torch added at prog.py:10: it holds for one value "
                      "only: each new value compiles again; f has 3 cache entries toward "
                      "config.recompile_limit (8)"]
    # (x // 2) == 3 holds for 6 and 7: not one value
    for guard in ("(L['x'].size()[0] // 2) == 3", "L['x'].size()[0] != 8"):
        other = story.recompile_lines("0/1", guard, "prog.py:5", None, None, "f", 3, 8)
        assert other[0].endswith("sizes that fail it compile again; f has 3 cache entries "
                                 "toward config.recompile_limit (8)"), other
    assert story.recompile_lines("0/0", "G['scale'] == 1.0", "prog.py:3", None, None, "f", 2,
                                 8) == []


def test_no_record_and_static_shapes_are_said_in_one_line() -> None:
    assert story.answer("f [0/0]", None, lambda s: (False, None), []).lines() == [
        "f [0/0]: its shapes are not known (its compile ran before dyndbg attached); "
        "`guards` lists its shape guards with their lines"]
    assert len(story.answer("f [0/0]", ShapeRecord((), (), (), True), lambda s: (False, None),
                            []).lines()) == 1
    assert story.code_of("y = x  # a comment with 'quotes'") == "y = x"
    assert story.code_of("s = '#' + x  # the rest") == "s = '#' + x"
