"""The errors of ``asOf`` and of the history resources (codes documented in docs/api.md and docs/history.md)."""

from __future__ import annotations

from app.web.errors import ApiError


class InvalidAsOf(ApiError):
    status, code, default_message = 400, "invalid_as_of", "asOf must be an RFC 3339 instant"


class AsOfInFuture(ApiError):
    status, code, default_message = 422, "as_of_in_future", "asOf lies in the future"


class AsOfOutOfWindow(ApiError):
    status, code, default_message = 422, "as_of_out_of_window", "asOf lies outside the recorded history"


class HistoryUnavailable(ApiError):
    status, code, default_message = (
        503,
        "history_unavailable",
        "the history store cannot be read; retry shortly",
    )
    default_headers = {"Retry-After": "5"}


class InvalidWindow(ApiError):
    status, code, default_message = (
        400,
        "invalid_window",
        "from and to must be RFC 3339 instants with from before to",
    )


class WindowTooLong(ApiError):
    status, code, default_message = 422, "window_too_long", "the window is longer than one call may ask"


class WindowOutOfRange(ApiError):
    status, code, default_message = (
        422,
        "window_out_of_range",
        "the window lies outside the kept history (the last 365 days, up to now)",
    )


class InvalidCursor(ApiError):
    status, code, default_message = (
        400,
        "invalid_cursor",
        "the cursor is not one this service returned for this query or feed",
    )


class ForeignCursor(ApiError):
    status, code, default_message = 400, "foreign_cursor", "this cursor belongs to another change feed"


class CursorExpired(ApiError):
    status, code, default_message = 410, "cursor_expired", "this cursor points to events no longer kept"
