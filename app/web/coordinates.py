"""Strict decimal numbers for coordinates: ASCII digits only, no surrounding space (API and CLI alike)."""

from __future__ import annotations

import math
import re

#: ``51.2``, ``+4.4``, ``.5``, ``5.12e1``. ASCII only: ``\d`` would also accept ``５１`` or ``٥١``.
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def parse_decimal(text: str) -> float | None:
    """The finite number written in plain ASCII decimal notation, else None.

    No whitespace is stripped; ``nan``, ``inf``, hex, ``51,2``, ``5_1`` and non-ASCII digits are refused.

    Examples
    --------
    >>> parse_decimal("51.2"), parse_decimal("5.12e1"), parse_decimal(" 51.2"), parse_decimal("５１")
    (51.2, 51.2, None, None)
    """
    if not isinstance(text, str) or not DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None
