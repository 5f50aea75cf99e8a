"""The Flask edge of the Urban Conditions Service.

``create_app`` is :func:`app.factory.create_app`, imported on first use (PEP 562): importing a wing
(``app.server.worker``, ``app.store``, ``app.cli``) does not import the factory and every other wing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.factory import create_app, load_config, load_engine, trust_proxies

__all__ = ["create_app", "load_config", "load_engine", "trust_proxies"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module 'app' has no attribute {name!r}")
    from app import factory

    return getattr(factory, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
