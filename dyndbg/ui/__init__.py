"""The user interface: commands, rendering, and the input loop."""
