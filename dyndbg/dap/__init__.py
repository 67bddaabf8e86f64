"""The Debug Adapter Protocol front end: editors (VS Code, nvim-dap, Emacs)
drive the same engine and session logic as the prompt does.

`python -m dyndbg.dap` speaks DAP on stdio and runs the program in a child
process (adapter.py); inside that process, or under `python -m dyndbg
--listen`, server.py serves one client over a socket.
"""
