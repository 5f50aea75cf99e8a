"""Every edit of a cursor is refused: only the exact text the API gave is a cursor.

An edit of the last base64 character can change only padding bits and decode to the same bytes, so a
cursor check on the decoded content alone accepts some edited cursors (and a test editing the last
character passed or failed by chance).
"""

from __future__ import annotations

import string

import pytest

from app.api import history as history_api
from app.history import changes as feed
from app.history.errors import InvalidCursor

ALPHABET = string.ascii_letters + string.digits + "-_"


def edits(cursor: str, keep: int):
    """Every one-character substitution after the first ``keep`` characters, every truncation, every
    appended character and a padded copy."""
    for i in range(keep, len(cursor)):
        for c in ALPHABET:
            if c != cursor[i]:
                yield cursor[:i] + c + cursor[i + 1 :]
    for n in range(keep, len(cursor)):
        yield cursor[:n]
    for c in ALPHABET + "=":
        yield cursor + c


@pytest.mark.parametrize("position", [0, 7, 123_456])
def test_every_edit_of_a_change_feed_cursor_is_malformed(position):
    cursor = feed.encode_cursor("loc_3fK9xQ2mPa7Z", position, "a1b2c3d4e5f6")
    assert (
        feed.decode_cursor(cursor, "loc_3fK9xQ2mPa7Z", "a1b2c3d4e5f6", pruned_below=0, newest=10**6)
        == position
    )
    refused = 0
    for edited in edits(cursor, keep=len("cur_")):
        with pytest.raises(feed.CursorError) as caught:
            feed.decode_cursor(edited, "loc_3fK9xQ2mPa7Z", "a1b2c3d4e5f6", pruned_below=0, newest=10**6)
        assert caught.value.reason in {"malformed", "foreign", "expired"}, edited
        refused += 1
    assert refused > 64 * len(cursor) - 64 * 4


@pytest.mark.parametrize("values", [(0, 0, 0), (100, 250, 1_767_225_600_000)])
def test_every_edit_of_a_history_cursor_is_refused(values):
    cursor = history_api.encode_cursor(*values, "0123456789abcdef")
    assert history_api.decode_cursor(cursor, "0123456789abcdef") == values
    for edited in edits(cursor, keep=0):
        with pytest.raises(InvalidCursor):
            history_api.decode_cursor(edited, "0123456789abcdef")
