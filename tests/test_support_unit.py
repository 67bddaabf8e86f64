"""The tested range and the one line said outside it (dyndbg/support.py)."""
from __future__ import annotations

import sys

import torch

from dyndbg.support import TESTED_PYTHON, TESTED_TORCH, untested
from dyndbg.support import tested_range as range_text  # not collected as a test


def test_inside_the_range_nothing_is_said() -> None:
    for version in ("2.13.0", "2.13.0+cpu", "2.14.1+cu130", "2.15.0"):
        for python in ((3, 11), (3, 13), (3, 15)):
            assert untested(python, version) is None, (python, version)


def test_outside_the_range_one_line_names_what_and_the_range() -> None:
    line = untested((3, 11), "2.12.1+cu128")
    assert line is not None and "\n" not in line
    assert "torch 2.12.1+cu128" in line and range_text() in line
    assert "Python" not in line.split("outside")[0]
    assert "torch 2.16.0a0+git1234" in (untested((3, 11), "2.16.0a0+git1234") or "")
    both = untested((3, 16), "2.16.0") or ""
    assert "Python 3.16 and torch 2.16.0" in both
    assert untested((3, 11), "not a version") is not None


def test_the_running_pair_is_in_the_range() -> None:
    # CI runs only tested pairs: a pair it runs that is outside the range means
    # the range (and the README's table) was not widened with .ci/run.
    assert untested(sys.version_info[:2], str(torch.__version__)) is None, (
        sys.version_info[:2], torch.__version__, TESTED_PYTHON, TESTED_TORCH)
