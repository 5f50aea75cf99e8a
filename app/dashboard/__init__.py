"""The city-operations dashboard: map, saved locations, alerts and PDF reports (docs/dashboard.md).

``init_app(app)`` registers the ``/dashboard`` blueprint and the ``alerts`` CLI group. Sign-in is the
portal's (e-mail link, signed session cookie); what a signed-in account may do follows its plan
(:attr:`app.store.plans.Plan.dashboard`): Pro, Enterprise and Dashboard get the full dashboard, Developer and API
accounts a read-only map explorer.
"""

from __future__ import annotations


def init_app(app) -> None:
    """Register the dashboard blueprint and CLI on ``app`` (idempotent)."""
    from .cli import alerts_group
    from .views import bp

    if "dashboard" in app.blueprints:
        return
    app.register_blueprint(bp)
    app.cli.add_command(alerts_group)
    app.extensions.setdefault("dashboard", {"basemap": {}})
