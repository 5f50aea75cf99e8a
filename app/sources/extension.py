"""What ``app.extensions["urban_sources"]`` holds for one app, and the hooks run after a published refresh."""

from __future__ import annotations

from typing import Any, Callable, Protocol, TypedDict

from .settings import SourceSettings

EXTENSION = "urban_sources"


class Watcher(Protocol):
    """What the serving code asks of the reload watcher (:class:`app.sources.serving.SnapshotWatcher`)."""

    def maybe_reload(self, holder, *, urgent: bool = False) -> bool: ...


class SourcesState(TypedDict):
    """``app.extensions[EXTENSION]``: the settings, the reload watcher (None without reloading), the
    freshness deadlines cached for the engine in use (``(engine, limits, {layers: deadline})``) and the
    hooks that run after each published refresh (:func:`on_publish`)."""

    settings: SourceSettings
    watcher: Watcher | None
    fresh_until: tuple[Any, Any, dict] | None
    after_publish: list[Callable[[Any, Any], None]]


def on_publish(app, hook: Callable[[Any, Any], object]) -> None:
    """Run ``hook(app, report)`` after each refresh that published a snapshot (the dashboard's alerts):
    a feature above the sources registers itself here, the sources import nothing of it."""
    app.extensions[EXTENSION]["after_publish"].append(hook)


def publish_hooks(app) -> "PublishHooks":
    """``after_publish(report)`` for :func:`app.sources.cli.run_rounds`: every registered hook, in order."""
    return PublishHooks(app, app.extensions[EXTENSION]["after_publish"])


class PublishHooks:
    """Calls every hook registered with :func:`on_publish`; ``close()`` (when the refresher stops) closes
    those that have a ``close()``."""

    def __init__(self, app, hooks: list):
        self.app, self.hooks = app, hooks

    def __call__(self, report) -> None:
        for hook in self.hooks:
            hook(self.app, report)

    def close(self) -> None:
        for hook in self.hooks:
            close = getattr(hook, "close", None)
            if close is not None:
                close()
