"""Who is signed in and what their plan lets them do on the dashboard.

Sign-in is the portal's session; ``full`` (Pro, Enterprise, Dashboard) may edit saved locations, subscribe
to alerts and download reports; every other signed-in account gets the read-only explorer.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import flash, redirect, url_for

from app.store.plans import Plan, get_plan


@dataclass(frozen=True)
class Viewer:
    """The signed-in account and its plan."""

    account: object
    plan: Plan

    @property
    def full(self) -> bool:
        return self.plan.dashboard


def current_viewer() -> Viewer | None:
    """The signed-in viewer, or None."""
    from app.portal.views import signed_in_account

    account = signed_in_account()
    if account is None:
        return None
    return Viewer(account, get_plan(account["plan"]))


def sign_in_first():
    """Redirect to the portal's sign-in page with a notice."""
    flash("Sign in first: enter your e-mail address to get a sign-in link.", "warn")
    return redirect(url_for("portal.index"))
