"""A local that is neither a tensor nor a container, alive across a graph break:
the history keeps only a summary of it (tests/test_history.py)."""
import torch


class Settings:
    """No __repr__ of its own: object.__repr__'s text is its summary."""

    def __init__(self, factor: float) -> None:
        self.factor = factor


@torch.compile(backend="eager")
def scale(x, settings):
    y = x * 2
    torch._dynamo.graph_break()     # settings is an argument of the resume function
    return y * settings.factor


print(scale(torch.ones(3), Settings(3.0)).tolist())
