"""The one exception the source layer raises: an upstream failed (502 ``upstream_error``).

It is the platform's ``app.web.errors.UpstreamError`` with the failing source attached, so the platform's single
handler renders it in the one error shape.
"""

from __future__ import annotations

import math

from app.web.errors import UpstreamError as _PlatformUpstreamError


class UpstreamError(_PlatformUpstreamError):
    """An upstream source failed, answered garbage, or its layer is older than its freshness limit.

    Parameters
    ----------
    source : str
        Catalog name of the source (``gipod``, ``delijn``, ``ircel``, ``lez``).
    message : str
        Human-readable text; it always names the source.
    retry_after : float, optional
        Seconds after which a retry makes sense; sent as ``Retry-After`` when the error reaches a client.

    Examples
    --------
    >>> e = UpstreamError("gipod", "GIPOD: HTTP 500")
    >>> (e.status, e.code, e.source, str(e))
    (502, 'upstream_error', 'gipod', 'GIPOD: HTTP 500')
    """

    def __init__(self, source: str, message: str, *, retry_after: float | None = None):
        headers = {"Retry-After": str(max(1, math.ceil(retry_after)))} if retry_after is not None else None
        super().__init__(message, headers=headers)
        self.source = source
        self.retry_after = retry_after


class MissingResponse(UpstreamError):
    """Replay only: the recording holds no answer for a request the adapter makes."""
