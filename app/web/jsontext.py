"""The API's JSON text: compact UTF-8, keys in insertion order, NaN refused, NumPy scalars as Python numbers.

Same object → same bytes, so ETags and the determinism tests compare byte for byte. The app's JSON provider
(:class:`app.web.conventions.UrbanJSONProvider`) and the representations (:mod:`app.api.negotiation`, the GeoJSON
serialisers) all write through :func:`body`.

Examples
--------
>>> import numpy as np
>>> body({"b": np.float64(0.5), "a": "Antwerpen – Linkeroever"})
'{"b":0.5,"a":"Antwerpen – Linkeroever"}\\n'
"""

from __future__ import annotations

import json

from flask.json.provider import DefaultJSONProvider


def default(o):
    """NumPy scalars as Python numbers, else Flask's conversions (dates, dataclasses, ...)."""
    if type(o).__module__ == "numpy" and hasattr(o, "item"):
        return o.item()
    return DefaultJSONProvider.default(o)


def dumps(obj, **kwargs) -> str:
    """Compact JSON text of ``obj`` (keyword arguments of :func:`json.dumps` override the defaults)."""
    kwargs.setdefault("default", default)
    kwargs.setdefault("ensure_ascii", False)
    kwargs.setdefault("sort_keys", False)
    kwargs.setdefault("separators", (",", ":"))
    kwargs.setdefault("allow_nan", False)
    return json.dumps(obj, **kwargs)


def body(obj) -> str:
    """The response text of ``obj``: compact JSON and a final newline."""
    return dumps(obj) + "\n"
