"""The one exception the source layer raises: an upstream failed (mapped to 502 ``upstream_error``)."""

from __future__ import annotations

try:  # subclass the platform's error when it exists, so its single handler renders ours too
    from app.errors import UpstreamError as _PlatformUpstreamError  # type: ignore[attr-defined]
except Exception:  # pragma: no cover - platform not installed or has no such class
    _PlatformUpstreamError = Exception


class UpstreamError(_PlatformUpstreamError):
    """An upstream source failed, answered garbage, or its layer is older than its freshness limit.

    Parameters
    ----------
    source : str
        Catalog name of the source (``gipod``, ``delijn``, ``ircel``, ``lez``).
    message : str
        Human-readable text; it always names the source.
    retry_after : float, optional
        Seconds after which a retry makes sense (e.g. the breaker's remaining cool-down).

    Examples
    --------
    >>> str(UpstreamError("gipod", "GIPOD: HTTP 500"))
    'GIPOD: HTTP 500'
    """

    status_code = 502
    code = "upstream_error"

    def __init__(self, source: str, message: str, *, retry_after: float | None = None):
        try:
            super().__init__(message)
        except TypeError:  # pragma: no cover - platform base with another signature
            Exception.__init__(self, message)
        self.source = source
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message
