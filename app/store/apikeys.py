"""API key format: ``uc_live_`` + 32 random base62 characters + 6-character base62 CRC32 checksum.

The checksum lets a mistyped or forged key be rejected without a database look-up. Only the SHA-256 digest
and a short display prefix are ever stored; the plaintext is returned once by :func:`new_key`.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import zlib

PREFIX = "uc_live_"
RANDOM_LEN = 32  # 32 base62 characters ≈ 190 bits
CHECKSUM_LEN = 6  # CRC32 fits in 6 base62 digits
DISPLAY_LEN = len(PREFIX) + 6
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SHAPE = re.compile(rf"^{PREFIX}[0-9A-Za-z]{{{RANDOM_LEN + CHECKSUM_LEN}}}$")


def _base62(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 62)
        out.append(ALPHABET[r])
    return "".join(reversed(out))


def checksum(body: str) -> str:
    """Base62 CRC32 of ``body`` (prefix + random part), zero-padded to 6 characters.

    Examples
    --------
    >>> checksum("uc_live_" + "0" * 32) == checksum("uc_live_" + "0" * 32)
    True
    >>> len(checksum("x"))
    6
    """
    return _base62(zlib.crc32(body.encode("ascii")), CHECKSUM_LEN)


def new_key() -> str:
    """A fresh random key (shown to the user once, never stored).

    Examples
    --------
    >>> k = new_key()
    >>> k.startswith("uc_live_") and well_formed(k)
    True
    """
    body = PREFIX + "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_LEN))
    return body + checksum(body)


def well_formed(key: str) -> bool:
    """True when ``key`` has the right prefix, length, alphabet and checksum.

    Examples
    --------
    >>> well_formed("uc_live_abc")
    False
    """
    if not isinstance(key, str) or not _SHAPE.match(key):
        return False
    body, check = key[:-CHECKSUM_LEN], key[-CHECKSUM_LEN:]
    return secrets.compare_digest(checksum(body), check)


def digest(key: str) -> str:
    """Hex SHA-256 of the key: what the account store keeps (keys carry ~190 random bits, so no salt
    or slow hash is needed)."""
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def display_prefix(key: str) -> str:
    """The first characters shown in listings, e.g. ``uc_live_Ab12Cd``."""
    return key[:DISPLAY_LEN]
