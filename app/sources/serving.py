"""Which snapshot a request is served from, and whether it is fresh enough to answer (docs/sources.md).

- :func:`current_engine`: the engine of this request, read once and kept for the whole request (a reload
  swaps the app's engine between requests, never within one); when a reload check is due (every
  ``URBAN_RELOAD_INTERVAL`` seconds) the snapshot pointer is checked first (:mod:`app.sources.reload`).
- :func:`served_engine`: the same for a data endpoint that reads some layers, with the freshness decision
  made before anything is computed: when a live layer the endpoint reads is past its limit, a newer
  published snapshot is loaded first (an idle worker never answers a false 502), and if the engine is
  still stale the endpoint gets the 502 ``upstream_error`` to raise once its client errors (400, 404,
  422) are ruled out.
"""

from __future__ import annotations

from datetime import timedelta

from flask import current_app, g

from app.web.clock import wall_now

from . import EXTENSION, SourcesState
from .errors import UpstreamError
from .freshness import fresh_until, stale_error, stale_layers

#: before a layer's deadline by more than this, nothing can be stale and no timestamp is parsed
_MARGIN = timedelta(milliseconds=1)


def current_engine():
    """The engine of this request (None without a snapshot): pinned on first use."""
    ctx_g = g._get_current_object()
    if "urban_engine" not in ctx_g:
        holder = current_app.extensions["urban"]
        state: SourcesState | None = current_app.extensions.get(EXTENSION)
        if state is not None and state["watcher"] is not None:
            state["watcher"].maybe_reload(holder)
        ctx_g.urban_engine = holder.engine
    return ctx_g.urban_engine


def served_engine(layers: tuple[str, ...]) -> tuple[object, UpstreamError | None]:
    """``(engine, stale)`` for an endpoint reading ``layers``: the pinned engine, after an urgent reload
    when it is past a freshness limit, and the 502 to answer when it still is (None: fresh)."""
    engine = current_engine()
    state: SourcesState | None = current_app.extensions.get(EXTENSION)
    if state is None or engine is None:
        return engine, None
    stale = _stale(state, engine, layers)
    if stale and state["watcher"] is not None:
        holder = current_app.extensions["urban"]
        state["watcher"].maybe_reload(holder, urgent=True)
        if holder.engine is not engine:
            engine = g.urban_engine = holder.engine
            stale = _stale(state, engine, layers)
    if not stale:
        return engine, None
    error = stale_error(stale)
    current_app.logger.warning("502 upstream_error: %s", error.message)
    return engine, error


def _stale(state: SourcesState, engine, layers: tuple[str, ...]) -> list:
    """The live layers among ``layers`` that ``engine`` holds past their limit.

    Each engine's manifest gives a constant deadline per set of layers (``fresh_until``, cached for the
    engine in use): before it (with a 1 ms margin) nothing can be stale and no timestamp is parsed; near
    or past it the exact check runs.
    """
    manifest = getattr(engine, "manifest", None)
    if not layers or not manifest:
        return []
    limits = state["settings"].freshness
    cached_engine, cached_limits, deadlines = state["fresh_until"] or (None, None, {})
    if cached_engine is not engine or cached_limits is not limits:
        deadlines = {}
        state["fresh_until"] = (engine, limits, deadlines)
    if layers not in deadlines:
        deadlines[layers] = fresh_until(manifest, layers, limits)
    deadline = deadlines[layers]
    if deadline is None:
        return []
    now = wall_now()
    if now < deadline - _MARGIN:
        return []
    return stale_layers(manifest, layers, now, limits)
