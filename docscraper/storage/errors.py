"""The storage layer's errors, in a module that imports nothing: a command can catch them without loading
the database drivers, Chroma or the model."""

from __future__ import annotations

__all__ = ["StateError"]


class StateError(RuntimeError):
    """The state database cannot be opened or written; the message says which and why."""
