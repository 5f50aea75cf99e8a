"""E-mail address validation for sign-up (pragmatic subset of RFC 5321/5322).

Accepted: ``local@domain`` with a dot-atom local part (≤ 64 characters) and a domain of at least two
LDH labels (IDN in its ``xn--`` form), alphabetic top-level label, total ≤ 254 characters.
Rejected: display names, quoted local parts, IP-literal domains, whitespace, control characters, and the
opening ``=?`` of an RFC 2047 encoded word (a mail header parser would decode it, line breaks included).
The address is returned lower-cased (accounts are matched case-insensitively).
"""

from __future__ import annotations

import re

_LOCAL = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*")
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_TLD = re.compile(r"[A-Za-z]{2,63}")


class InvalidEmail(ValueError):
    """The value is not an e-mail address we accept."""


def normalize_email(value):
    """Validate ``value`` and return it lower-cased; raise :class:`InvalidEmail` otherwise.

    Examples
    --------
    >>> normalize_email("An.Peeters@Antwerpen.BE")
    'an.peeters@antwerpen.be'
    >>> normalize_email("=?utf-8?q?a=0D=0ABcc=3Ab=40x.be?=@stad.be")
    Traceback (most recent call last):
    ...
    app.portal.addresses.InvalidEmail: not an e-mail address
    """
    if not isinstance(value, str) or not value.isascii() or len(value) > 254 or "=?" in value:
        raise InvalidEmail("not an e-mail address")
    local, at, domain = value.rpartition("@")
    if not at or len(local) > 64 or not _LOCAL.fullmatch(local):
        raise InvalidEmail("not an e-mail address")
    labels = domain.split(".")
    if (
        len(labels) < 2
        or not all(_LABEL.fullmatch(label) for label in labels)
        or not _TLD.fullmatch(labels[-1])
    ):
        raise InvalidEmail("not an e-mail address")
    return value.lower()
