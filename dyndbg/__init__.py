"""dyndbg: a step-through debugger for the bytecode TorchDynamo generates."""

__version__ = "0.1.0"
