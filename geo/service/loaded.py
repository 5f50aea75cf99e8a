"""One loaded snapshot: load a snapshot directory and build everything the endpoints need at load time."""

from __future__ import annotations

from ..data.engine import Engine
from ..rules.prepared import prepare
from .lookups import lookups


def load(path) -> Engine:
    """``Engine.load(path)`` plus the rules' prepared data and the single-point lookup tables, built now
    (at start, so gunicorn's preloaded workers share them) and never per request.

    Examples
    --------
    >>> engine = load("data/snapshot")  # doctest: +SKIP
    """
    engine = Engine.load(path)
    prepare(engine)
    lookups(engine)
    return engine
