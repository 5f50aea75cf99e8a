"""The city-operations dashboard: map, saved locations, alerts and PDF reports (docs/dashboard.md).

``init_app(app)`` registers the ``/dashboard`` blueprint, the ``alerts`` CLI group and the alert round
after each published snapshot refresh (:func:`app.sources.on_publish`). Sign-in is the
portal's (e-mail link, signed session cookie); what a signed-in account may do follows its plan
(:attr:`app.store.plans.Plan.dashboard`): Pro, Enterprise and Dashboard get the full dashboard, Developer and API
accounts a read-only map explorer.
"""

from __future__ import annotations

from app import sources

from .cli import alerts_group
from .limits import check_settings
from .run import AlertHook
from .views import bp
from .changeviews import public


def init_app(app) -> None:
    """Register the dashboard blueprint, its CLI and its refresh hook on ``app`` (idempotent; after
    ``sources.init_app``)."""
    if "dashboard" in app.blueprints:
        return
    check_settings(app.config)
    app.register_blueprint(bp)
    app.register_blueprint(public)
    app.cli.add_command(alerts_group)
    sources.on_publish(app, AlertHook())
    app.extensions.setdefault("dashboard", {"basemap": {}})
