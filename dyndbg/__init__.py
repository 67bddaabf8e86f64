"""dyndbg: a step-through debugger for the bytecode TorchDynamo generates."""

__version__ = "0.1.0"

_API = ("set_trace", "breakpoint", "debug", "post_mortem", "listen", "wait_for_client")


def __getattr__(name: str) -> object:
    # Loaded on first use: `python -m dyndbg --version` must not import torch.
    if name == "core":   # 'c' or 'python': which core runs the per-instruction work
        from dyndbg.cores import core
        return core
    if name in _API:
        from dyndbg import api
        return getattr(api, name)
    raise AttributeError(f"module 'dyndbg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_API) + ["core"])


def load_ipython_extension(shell: object) -> None:
    """`%load_ext dyndbg` in IPython or Jupyter: %dyndbg and %%dyndbg (dyndbg/notebook.py)."""
    from dyndbg.notebook import load_ipython_extension as load
    load(shell)
