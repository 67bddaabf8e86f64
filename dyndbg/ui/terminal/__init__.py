"""Where command lines come from and how they are typed: a prompt-toolkit
prompt in a terminal (prompt), lines from a script or pipe (reader), keys
typed ahead while the program runs (typeahead), tab completion (completion)
and .dyndbgrc (rcfile)."""
