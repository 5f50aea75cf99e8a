"""The error of the history store's own operations, below both the store and the versions it reads."""

from __future__ import annotations


class HistoryError(RuntimeError):
    """The store cannot do what was asked (message says why)."""
