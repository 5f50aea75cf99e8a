"""Plans: which carry API access, how many calls a day they admit (None = unlimited), and which include the
dashboard (saved locations, alerts, PDF reports; docs/dashboard.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """One plan. ``daily_quota`` None means unlimited (Enterprise). ``dashboard``: the full dashboard
    (editable saved locations, alerts, PDF reports); the others get the read-only map explorer."""

    name: str
    api_access: bool
    daily_quota: int | None
    label: str
    dashboard: bool = False


PLANS: dict[str, Plan] = {
    "developer": Plan("developer", True, 100, "Developer"),
    "api": Plan("api", True, 10_000, "API"),
    "pro": Plan("pro", True, 10_000, "Pro", dashboard=True),
    "enterprise": Plan("enterprise", True, None, "Enterprise", dashboard=True),
    "dashboard": Plan("dashboard", False, 0, "Dashboard (no API access)", dashboard=True),
}


def alert_plans() -> tuple[str, ...]:
    """The names of the plans whose alerts are evaluated and delivered: those with the full dashboard.

    Examples
    --------
    >>> alert_plans()
    ('pro', 'enterprise', 'dashboard')
    """
    return tuple(name for name, plan in PLANS.items() if plan.dashboard)


def get_plan(name: str) -> Plan:
    """The plan called ``name``; ``KeyError`` names the valid ones.

    Examples
    --------
    >>> get_plan("developer").daily_quota
    100
    >>> get_plan("enterprise").daily_quota is None
    True
    """
    try:
        return PLANS[name]
    except KeyError:
        raise KeyError(f"unknown plan {name!r}; choose one of {', '.join(PLANS)}") from None
