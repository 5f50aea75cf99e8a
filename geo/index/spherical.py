"""Spherical helpers: haversine distance, 3-D unit vectors and chord radii on the mean Earth radius.

Every distance the engine reports comes from :func:`haversine_rad`, so a distance is the same float
whichever primitive (single point or batch) computed it.
"""

from __future__ import annotations

import math

import numpy as np

EARTH_RADIUS_KM = 6371.0088

# Relative slack on chord radii: a candidate search with this margin is a strict superset of the exact
# haversine answer (rounding of chord vs. haversine is ~1e-16 relative); candidates are then filtered exactly.
CHORD_SLACK = 1e-9

# sin of a small angle by its Taylor polynomial to x^7: for |x| <= 2^-5 the first omitted term is below
# 3e-18 relative (a fiftieth of an ulp), so the result is within 1 ulp of sin(x) like libm's, at a third of
# its cost. Half the lat/lng difference of any two points less than ~700 km apart is that small.
SMALL_ANGLE = 2.0**-5
_S3, _S5, _S7 = -1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0

# Two points less than NEAR_KM apart, both within 80 degrees of the equator and not across the antimeridian,
# have half latitude and longitude differences below SMALL_ANGLE (|dlat| <= the angle, and
# sin(|dlng| / 2) <= sin(angle / 2) / cos(80 deg)), and a haversine term far below 1.
NEAR_KM = 50.0


def haversine_rad(lat1, lng1, cos_lat1, lat2, lng2, cos_lat2, near: bool = False):
    """Haversine distance in km from radians and precomputed ``cos(lat)`` (broadcasting).

    ``near``: the caller guarantees every pair is a :data:`NEAR_KM` pair; the same floats, without the
    checks that only pairs farther apart need (the sine's range, the clamp to 1).

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.radians([51.0, 4.0]), np.radians([51.0, 5.0])
    >>> round(float(haversine_rad(a[0], a[1], np.cos(a[0]), b[0], b[1], np.cos(b[0]))), 3)
    69.977
    """
    return haversine_sines(lat1, lng1, cos_lat1, lat2, lng2, cos_lat2, near)[0]


def haversine_sines(lat1, lng1, cos_lat1, lat2, lng2, cos_lat2, near: bool = False):
    """(:func:`haversine_rad`, and its sines of the half differences ``sin((lat2 - lat1) / 2)`` and
    ``sin((lng2 - lng1) / 2)``, as :func:`sin_small` gives them)."""
    s_lat = sin_small(np.subtract(lat2, lat1) * 0.5, near)
    s_lng = sin_small(np.subtract(lng2, lng1) * 0.5, near)
    a = s_lat * s_lat + cos_lat1 * cos_lat2 * (s_lng * s_lng)
    return (2.0 * EARTH_RADIUS_KM) * np.arcsin(np.sqrt(a if near else np.minimum(a, 1.0))), s_lat, s_lng


def sin_small(x, small: bool = False):
    """``sin`` of an angle in radians (array or scalar), fast where the angle is small (:data:`SMALL_ANGLE`).

    ``small``: the caller guarantees ``|x| <= SMALL_ANGLE`` everywhere (the same floats, no range check).

    Examples
    --------
    >>> sin_small(np.array([1e-4, 1.0])).tolist() == np.sin([1e-4, 1.0]).tolist()
    True
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return np.float64(sin_small_one(float(x)))
    x2 = x * x
    s = x2 * _S7  # x + x (x^2 (S3 + x^2 (S5 + x^2 S7))), in place; sin_small_one repeats these steps
    s += _S5
    s *= x2
    s += _S3
    s *= x2
    s *= x
    s += x
    if small:
        return s
    # fmax/fmin skip NaN (which stays NaN through the polynomial); two reductions cost less than a mask
    if x.size and (np.fmax.reduce(x, axis=None) > SMALL_ANGLE or np.fmin.reduce(x, axis=None) < -SMALL_ANGLE):
        big = np.abs(x) > SMALL_ANGLE
        s[big] = np.sin(x[big])
    return s


def sin_small_one(x: float) -> float:
    """:func:`sin_small` of one Python float: the same IEEE operations, so the same result bit for bit.

    Examples
    --------
    >>> sin_small_one(1e-4) == float(sin_small(np.array([1e-4]))[0])
    True
    """
    if abs(x) > SMALL_ANGLE:
        return float(np.sin(x))
    x2 = x * x
    return x + x * (x2 * (_S3 + x2 * (_S5 + x2 * _S7)))


def haversine_one(
    lat1: float, lng1: float, cos_lat1: float, lat2: float, lng2: float, cos_lat2: float
) -> float:
    """:func:`haversine_rad` of one pair of Python floats: the same IEEE operations in the same order
    (:func:`sin_small_one`, NumPy's own ``arcsin``), so the same float bit for bit, without NumPy's cost
    per call on one-element arrays.

    Examples
    --------
    >>> a, b = np.radians([51.0, 4.0]), np.radians([51.0, 5.0])
    >>> args = (a[0], a[1], np.cos(a[0]), b[0], b[1], np.cos(b[0]))
    >>> haversine_one(*map(float, args)) == float(haversine_rad(*args))
    True
    """
    s_lat = sin_small_one((lat2 - lat1) * 0.5)
    s_lng = sin_small_one((lng2 - lng1) * 0.5)
    a = s_lat * s_lat + cos_lat1 * cos_lat2 * (s_lng * s_lng)
    return (2.0 * EARTH_RADIUS_KM) * float(np.arcsin(math.sqrt(min(a, 1.0))))


def haversine_km(lat1, lng1, lat2, lng2):
    """Great-circle distance in km on the mean Earth radius 6371.0088 km (broadcasting, degrees in).

    Examples
    --------
    >>> round(float(haversine_km(51.2194, 4.4025, 51.0543, 3.7174)), 2)  # Antwerp - Ghent
    51.2
    """
    lat1, lng1, lat2, lng2 = (np.radians(np.asarray(v, dtype=np.float64)) for v in (lat1, lng1, lat2, lng2))
    return haversine_rad(lat1, lng1, np.cos(lat1), lat2, lng2, np.cos(lat2))


def unit_vectors(lat, lng):
    """(n, 3) float64 unit vectors on the sphere for degrees ``lat``, ``lng`` (1-D arrays).

    Examples
    --------
    >>> unit_vectors([0.0, 90.0], [0.0, 0.0]).round(12).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    lat_r = np.radians(np.asarray(lat, dtype=np.float64))
    lng_r = np.radians(np.asarray(lng, dtype=np.float64))
    cos_lat = np.cos(lat_r)
    out = np.empty((lat_r.size, 3))
    out[:, 0] = cos_lat * np.cos(lng_r)
    out[:, 1] = cos_lat * np.sin(lng_r)
    out[:, 2] = np.sin(lat_r)
    return out


def chord_for_km(radius_km: float, slack: float = CHORD_SLACK) -> float:
    """Chord length (unit sphere) of a great-circle distance, widened by ``slack`` (relative).

    Examples
    --------
    >>> round(float(chord_for_km(6371.0088 * np.pi, slack=0.0)), 12)  # antipodes
    2.0
    """
    angle = min(max(float(radius_km), 0.0) / EARTH_RADIUS_KM, np.pi)
    return 2.0 * np.sin(angle / 2.0) * (1.0 + slack) + slack
