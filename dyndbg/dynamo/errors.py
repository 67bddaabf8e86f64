"""The one error dynamo/ raises for the user: an edit, lookup or check that
cannot be done, its message written for the user (dyndbg.cache re-exports it)."""


class CacheError(Exception):
    """An edit or lookup that cannot be done; the message is for the user."""
