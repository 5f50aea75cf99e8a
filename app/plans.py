"""Plans: which carry API access and how many calls a day they admit (None = unlimited)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """One plan. ``daily_quota`` None means unlimited (Enterprise)."""

    name: str
    api_access: bool
    daily_quota: int | None
    label: str


PLANS: dict[str, Plan] = {
    "developer": Plan("developer", True, 100, "Developer"),
    "api": Plan("api", True, 10_000, "API"),
    "pro": Plan("pro", True, 10_000, "Pro"),
    "enterprise": Plan("enterprise", True, None, "Enterprise"),
    "dashboard": Plan("dashboard", False, 0, "Dashboard (no API access)"),
}


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
