""".dyndbgrc, as pdb's .pdbrc: commands run at the first stop, before -c commands.

The file in the home directory is read first, then the one in the current
directory (unless it is the same file). Blank lines and '#' comments are
skipped. A missing file is silently skipped; one that exists but cannot be
read costs one line of output, never the session.
"""
from __future__ import annotations

import os
from typing import Callable

RC_NAME = ".dyndbgrc"


def rc_paths() -> list[str]:
    """~/.dyndbgrc, then ./.dyndbgrc when that is a different file."""
    home = os.path.join(os.path.expanduser("~"), RC_NAME)
    local = os.path.abspath(RC_NAME)
    paths = [home]
    try:
        same = os.path.samefile(home, local)
    except OSError:  # one of them does not exist (or cannot be looked at)
        same = os.path.abspath(home) == local
    if not same:
        paths.append(local)
    return paths


def read_commands(write: Callable[[str], None], paths: list[str] | None = None) -> list[str]:
    """The command lines of the rc files, in order; problems are reported through write."""
    commands: list[str] = []
    for path in rc_paths() if paths is None else paths:
        try:
            with open(path, encoding="utf-8", errors="strict") as handle:
                text = handle.read()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror \
                else type(error).__name__
            write(f"dyndbg: {path} not read ({reason}); skipped")
            continue
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                commands.append(line)
    return commands
