"""What every alert delivery shares (:mod:`app.dashboard.changedelivery` sends the change alerts): the lease,
retry and give-up rules, the signed webhook POST, accounts in turn, a failure as one line.

A sender claims a row for ``LEASE_SECONDS`` (two senders never send it at once, a sender that died frees it
when the lease ends); a failed row is due again after ``RETRY_DELAYS`` and given up after ``MAX_ATTEMPTS``
attempts (``gave_up_at``, with ``last_error``).

Webhook: ``POST`` of the body with ``X-Urban-Timestamp`` (Unix seconds) and
``X-Urban-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>``; any 2xx is success,
redirects are not followed. How it is sent (public addresses only, one deadline, a few bytes read):
:mod:`app.dashboard.webhook`.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import OrderedDict, deque

from . import webhook

LEASE_SECONDS = 600
MAX_ATTEMPTS = 5
#: seconds to wait after the 1st, 2nd, 3rd and 4th failed attempt; the 5th gives up
RETRY_DELAYS = (60, 300, 1800, 3600)
ERROR_CHARS = 300


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>`` over ``b"<timestamp>." + body``.

    Examples
    --------
    >>> sign("whsec_x", 1700000000, b'{}')[:7]
    'sha256='
    """
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def post_webhook(
    url: str,
    secret: str,
    body: bytes,
    config,
    *,
    now: float | None = None,
    content_type: str = "application/json",
    connections: webhook.Connections | None = None,
) -> None:
    """POST one signed event; :class:`~app.dashboard.webhook.WebhookError` (an ``OSError``) unless 2xx.
    ``connections``: a delivery round's kept connections (their settings stand), or a connection of its own."""
    ts = int(now if now is not None else time.time())
    headers = {
        "Content-Type": content_type,
        "User-Agent": "UrbanConditions-Alerts/1",
        "X-Urban-Timestamp": str(ts),
        "X-Urban-Signature": sign(secret, ts, body),
    }
    if connections is not None:
        status = connections.post(url, headers, body)
    else:
        status = webhook.post(url, headers, body, **webhook.options(config))
    if not 200 <= status < 300:
        raise webhook.WebhookError(f"the webhook answered {status}")


def in_turn(rows) -> list:
    """``rows`` reordered so that accounts take turns: each account's first event, then each second one …"""
    queues: OrderedDict = OrderedDict()
    for row in rows:
        queues.setdefault(row["account_id"], deque()).append(row)
    out = []
    while queues:
        for account in list(queues):
            out.append(queues[account].popleft())
            if not queues[account]:
                del queues[account]
    return out


def describe(exc: BaseException) -> str:
    """One printable line about a failure (for ``last_error`` and the log)."""
    text = str(exc) if isinstance(exc, OSError) and str(exc) else f"{type(exc).__name__}: {exc}"
    return "".join(c if c.isprintable() else " " for c in text)[:ERROR_CHARS]
