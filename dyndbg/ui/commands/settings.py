"""The commands about the session itself: pdb's aliases, sticky mode, the
options of `set`, and help, which pdb-like comes from the `do_*` docstrings
(first line: usage)."""
from __future__ import annotations

import inspect
from typing import Sequence

from dyndbg.ui.text import values
from dyndbg.ui.commands.host import Host, commands_of, usage
from dyndbg.ui.text.parsing import (CommandError, check_alias_body, format_bytes, parse_bytes,
                               parse_count, parse_int)


def command_help(doc: str) -> list[str]:
    """One command's help: the usage line, then the rest indented by two with
    its own indentation kept, as pdb's (break's table of locations)."""
    first, *rest = inspect.cleandoc(doc).splitlines()
    return [first] + [f"  {line}" if line.strip() else "" for line in rest]


def help_table(rows: Sequence[tuple[str, str]]) -> list[str]:
    """`help`'s table: each title padded to the longest title, then its text, so
    that every row's text starts in one column."""
    width = max((len(title) for title, _ in rows), default=0)
    return [f"  {title:<{width}}  {text}" for title, text in rows]


class SessionCommands:
    title = "other"

    def __init__(self, host: Host) -> None:
        self.host = host
        self.aliases: dict[str, str] = {}   # `alias NAME COMMAND`
        self.vi = False

    # -- aliases (pdb's) ---------------------------------------------------------------------------
    def do_alias(self, arg: str) -> None:
        """alias [NAME [COMMAND]]
        Make NAME run COMMAND: in COMMAND, %1..%9 are replaced by the words
        after NAME and %* by all of them. Aliases apply to the first word of
        a line, again while it is an alias, and may hide a command; COMMAND
        may hold ';;'. 'alias NAME' shows one alias, 'alias' all of them."""
        words = arg.split()
        if not words:
            if not self.aliases:
                self.host.write("No aliases.")
            for name in sorted(self.aliases):
                self.host.write(f"{name} = {self.aliases[name]}")
            return
        name = words[0]
        if len(words) == 1:
            if name not in self.aliases:
                raise CommandError(f"no alias {name!r}")
            self.host.write(f"{name} = {self.aliases[name]}")
            return
        if name in ("alias", "unalias"):
            raise CommandError(f"{name!r} cannot be an alias (it could not be undone)")
        body = arg.strip()[len(name):].strip()
        check_alias_body(body)
        self.aliases[name] = body

    def do_unalias(self, arg: str) -> None:
        """unalias NAME
        Delete the alias NAME."""
        words = arg.split()
        if len(words) != 1:
            raise CommandError("usage: unalias NAME")
        if self.aliases.pop(words[0], None) is None:
            raise CommandError(f"no alias {words[0]!r}")

    # -- settings --------------------------------------------------------------------------------
    def do_sticky(self, arg: str) -> None:
        """sticky
        Toggle sticky mode: at every stop, show the instructions around the
        current one, the value stack and the locals together (as pdb++)."""
        host = self.host
        host.sticky = not host.sticky
        host.write(f"sticky mode {'on' if host.sticky else 'off'}")
        if host.sticky and host.stop is not None:
            host.print_sticky(host.stop)

    def do_set(self, arg: str) -> None:
        """set [OPTION [on|off|VALUE]]
        Options: vi (Vi keys at the prompt; off means Emacs keys), sticky,
        color, width (characters of a value shown in summaries), trace (as
        the trace command); the history's bounds (see record): record-size
        N (instructions), record-memory SIZE (of tensor copies, e.g. 512MB),
        record-copy-limit N (elements of the largest tensor copied). With no
        argument, show the options."""
        host = self.host
        words = arg.split()
        if not words:
            host.write(f"vi {'on' if self.vi else 'off'}, "
                       f"sticky {'on' if host.sticky else 'off'}, "
                       f"color {'on' if host.highlighter.enabled else 'off'}, "
                       f"width {values.width()}, "
                       f"trace {'on' if host.engine.instruction_trace else 'off'}")
            return
        option, value = words[0], (words[1] if len(words) > 1 else "on")
        history = host.engine.history
        if option == "width":
            values.set_width(parse_int(value, "width"))
        elif option == "record-size":
            history.resize(parse_count(value, "record-size"))
        elif option == "record-memory":
            history.memory = parse_bytes(value, "record-memory")
            value = format_bytes(history.memory)
        elif option == "record-copy-limit":
            history.copy_limit = parse_int(value, "record-copy-limit")
        elif value not in ("on", "off"):
            raise CommandError(f"set {option} takes on or off")
        elif option in ("vi", "emacs"):
            on = (value == "on") == (option == "vi")
            set_vi = getattr(host.reader, "set_vi", None)
            if set_vi is None:
                raise CommandError("vi keys need the terminal prompt (not in plain mode)")
            set_vi(on)
            self.vi = on
        elif option == "sticky":
            host.sticky = value == "on"
        elif option == "trace":
            host.engine.instruction_trace = value == "on"
        elif option == "color":
            if value == "on" and not host.color:
                raise CommandError("colour needs a terminal (and no NO_COLOR or --no-color)")
            host.highlighter.enabled = value == "on"
        else:
            raise CommandError(f"unknown option {option!r} (vi, sticky, color, width, trace, "
                               "record-size, record-memory, record-copy-limit)")
        host.write(f"{option} {value}")

    def do_trace(self, arg: str) -> None:
        """trace [on|off]
        While on, print every generated instruction that runs, before it runs
        (under continue too), and a line when a generated frame starts and
        when it returns or is left by an exception; each line is flushed, so
        the last one before a hard crash names its instruction (--trace: on
        from the start). Without an argument, say whether it is on."""
        value = arg.strip()
        if value not in ("", "on", "off"):
            raise CommandError("usage: trace [on|off]")
        if value:
            self.do_set(f"trace {value}")
        else:
            self.host.write(f"trace {'on' if self.host.engine.instruction_trace else 'off'}")

    # -- help -------------------------------------------------------------------------------------
    def do_help(self, arg: str) -> None:
        """h(elp) [COMMAND]
        List the commands, or show one command's help."""
        host = self.host
        name = arg.strip()
        if name:
            command = host.command(name)
            if command is None or not command.__doc__:
                raise CommandError(f"no help for {name!r}")
            for line in command_help(command.__doc__):
                host.write(line)
            return
        if host.compile_stop is not None:
            from dyndbg.ui.commands.compile_stops import ANYWHERE
            host.write("At a stop while dynamo compiles (type 'help COMMAND' for one):")
            rows = [(host.compile_commands.title, ", ".join(usage(c) for c in commands_of(host.compile_commands))),
                    ("as anywhere", ", ".join(sorted(ANYWHERE)))]
            for line in help_table(rows):
                host.write(line)
            host.write("Anything else is Python: the symbolic locals (dynamo's "
                       "VariableTrackers), __stack__, __graph__, __tx__.")
            return
        host.write("Commands (type 'help COMMAND' for one):")
        for line in help_table([(family.title, ", ".join(usage(c) for c in commands_of(family)))
                                for family in host.families]):
            host.write(line)
        host.write("Anything else is Python, run in the selected frame "
                   "(__stack__ is the value stack); '!' forces Python.")
        host.write("An empty line repeats the last command; ';;' separates commands.")

    do_h = do_help
