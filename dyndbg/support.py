"""The Python and torch releases dyndbg was tested on, and the one line it
says at start on anything else. Outside the range dyndbg goes on: what it
cannot read safely (an unvalidated frame layout, a missing torch API) is
refused by the feature that needs it, each in its own line.

The range is what .ci/run and the README's versions table cover; widen it
only together with them.
"""
from __future__ import annotations

import re
import sys

TESTED_PYTHON = ((3, 11), (3, 15))                    # oldest and newest, inclusive
TESTED_TORCH = ((2, 13, 0), (2, 15, 0))


def _release(version: str) -> tuple[int, int, int] | None:
    """(2, 15, 0) from '2.15.0+cu132' or '2.15.0a0+git...'; None if unreadable."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def tested_range() -> str:
    """'torch 2.13.0-2.15.0 on Python 3.11-3.15'"""
    (py_low, py_high), (t_low, t_high) = TESTED_PYTHON, TESTED_TORCH
    return (f"torch {_dotted(t_low)}-{_dotted(t_high)} on Python "
            f"{_dotted(py_low)}-{_dotted(py_high)}")


def untested(python: tuple[int, int], torch_version: str) -> str | None:
    """The one line to say at start where this Python or torch is outside the
    tested range, else None."""
    outside = []
    if not TESTED_PYTHON[0] <= python <= TESTED_PYTHON[1]:
        outside.append(f"Python {_dotted(python)}")
    release = _release(torch_version)
    if release is None or not TESTED_TORCH[0] <= release <= TESTED_TORCH[1]:
        outside.append(f"torch {torch_version}")
    if not outside:
        return None
    return (f"dyndbg: {' and '.join(outside)} outside the tested range ({tested_range()}); "
            "going on, and what cannot be read safely is refused where it is needed")


def untested_here() -> str | None:
    """untested() for the running interpreter and the installed torch."""
    import torch  # noqa: F401 - imported, so that its version can be read
    from dyndbg.dynamo.versions import torch_version
    return untested(sys.version_info[:2], str(torch_version()))
