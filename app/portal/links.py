"""Sign-up and sign-in by e-mail link: the work behind ``POST /api/v1/signup``, the portal form and the link page.

Functions take the store connection and the clock value (``now``, aware UTC datetime) from the caller.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from flask import render_template

from app.store import accounts, tokens
from app.store.db import write
from app.mail import build_message

from . import throttle

log = logging.getLogger(__name__)

DEVELOPER_PLAN = "developer"
SUBJECT = {
    False: "Bevestig je aanmelding / Confirm your sign-up — Urban Conditions",
    True: "Aanmelden / Sign in — Urban Conditions",
}


@dataclass(frozen=True)
class Confirmation:
    """Outcome of a consumed link: the account, and the first key's plaintext if the account is new."""

    account: object
    key: str | None

    @property
    def created(self):
        return self.key is not None


def ttl_minutes():
    """Link validity in whole minutes (for pages and mails)."""
    return tokens.TOKEN_TTL // 60


def compose(sender, email, link, existing):
    """The bilingual (Dutch, then English) text+HTML message carrying ``link``."""
    context = {"link": link, "existing": existing, "ttl_minutes": ttl_minutes()}
    return build_message(
        sender,
        email,
        SUBJECT[existing],
        render_template("mail/link.txt", **context),
        render_template("mail/link.html", **context),
    )


def send_link(conn, mail, email, *, now, link_for, sender):
    """Issue a token for ``email`` and mail its link; the same work whether or not the account exists.

    An existing account gets a sign-in link, a new address a confirmation link. When the mail server fails
    the token is deleted again and :class:`app.mail.MailUnavailable` propagates: nothing is left behind.

    Examples
    --------
    >>> send_link(conn, mail, "an@stad.be", now=now, link_for=lambda t: f"https://x/portal/link/{t}",
    ...           sender="no-reply@x")                                             # doctest: +SKIP
    """
    stamp = int(now.timestamp())
    tokens.purge(conn, stamp)
    existing = accounts.find_account(conn, email) is not None
    token = tokens.issue(conn, email, stamp)
    try:
        mail.send(compose(sender, email, link_for(token), existing))
    except BaseException:
        tokens.discard(conn, token)
        raise


def send_link_within_limits(conn, mail, email, *, now, link_for, sender) -> bool:
    """:func:`send_link` unless this client already had ``SIGNUP_LIMIT_PER_ADDRESS`` links mailed to
    ``email`` in the window (then nothing is sent, and the caller answers exactly as if it were).
    Returns whether a mail went out; only a mail actually sent is counted."""
    if not throttle.may_mail(email):
        log.info("sign-up: per-address limit of this client reached; no link mailed")
        return False
    send_link(conn, mail, email, now=now, link_for=link_for, sender=sender)
    throttle.mailed(email)
    return True


def link_state(conn, token, *, now):
    """For the confirmation page (GET): ``None`` if unusable, else whether the address has an account."""
    email = tokens.peek(conn, token, int(now.timestamp()))
    if email is None:
        return None
    return {"existing": accounts.find_account(conn, email) is not None}


def confirm(conn, token, *, now):
    """Consume ``token``: sign in, or create the Developer account and its first key.

    Returns a :class:`Confirmation`, or ``None`` for a forged, expired or used token. Consuming the token and
    creating the account are one ``BEGIN IMMEDIATE`` transaction (:func:`app.store.db.write` nests), so of many
    concurrent confirmations exactly one gets past the token, and if the account cannot be written nothing
    is: the token stays usable and the error propagates (the user simply retries).
    """
    stamp = int(now.timestamp())
    with write(conn, durable=True):
        email = tokens.consume(conn, token, stamp)
        if email is None:
            return None
        account = accounts.find_account(conn, email)
        if account is not None:
            return Confirmation(account, None)
        account, key = accounts.create_account(conn, email, DEVELOPER_PLAN)
        return Confirmation(account, key)
