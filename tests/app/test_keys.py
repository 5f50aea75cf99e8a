"""API key format: prefix, length, alphabet and checksum; only digests reach the store."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from app.store import apikeys

ALPHABET = string.digits + string.ascii_uppercase + string.ascii_lowercase


def test_new_key_has_prefix_random_part_and_checksum():
    key = apikeys.new_key()
    assert key.startswith("uc_live_")
    assert len(key) == len("uc_live_") + 32 + 6
    assert set(key[len("uc_live_") :]) <= set(ALPHABET)
    assert apikeys.well_formed(key)
    assert key[-6:] == apikeys.checksum(key[:-6])


def test_keys_are_distinct():
    assert len({apikeys.new_key() for _ in range(500)}) == 500


@settings(max_examples=300)
@given(pos=st.integers(min_value=len("uc_live_"), max_value=45), char=st.sampled_from(ALPHABET))
def test_any_single_character_change_breaks_the_checksum(pos, char):
    key = apikeys.new_key()
    if key[pos] == char:
        return
    mutated = key[:pos] + char + key[pos + 1 :]
    assert not apikeys.well_formed(mutated)


@given(st.text(max_size=60))
def test_arbitrary_text_is_not_a_key(text):
    assert not apikeys.well_formed(text) or text.startswith("uc_live_")


def test_malformed_shapes_rejected():
    key = apikeys.new_key()
    for bad in (
        "",
        key[:-1],
        key + "A",
        "uc_test_" + key[8:],
        key.replace("uc_live_", "UC_LIVE_"),
        key[:20] + "-" + key[21:],
        " " + key,
    ):
        assert not apikeys.well_formed(bad), bad


def test_digest_and_display_prefix():
    key = apikeys.new_key()
    assert len(apikeys.digest(key)) == 64 and key not in apikeys.digest(key)
    assert apikeys.display_prefix(key) == key[:14]
