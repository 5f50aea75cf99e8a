"""Validation and normalisation of latitude/longitude input (scalar or array)."""

import numpy as np

from .errors import InvalidCoordinates


def as_arrays(lat, lng):
    """Return ``lat`` and ``lng`` as broadcast 1-D float64 arrays, without validating them.

    Examples
    --------
    >>> as_arrays(51.2, 4.4)
    (array([51.2]), array([4.4]))
    """
    if lat is None or lng is None:
        raise InvalidCoordinates("coordinates are missing (None)")
    try:
        lat_a = np.atleast_1d(np.asarray(lat, dtype=np.float64))
        lng_a = np.atleast_1d(np.asarray(lng, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise InvalidCoordinates(f"coordinates are not numbers: {exc}") from None
    if lat_a.ndim != 1 or lng_a.ndim != 1:
        raise InvalidCoordinates("lat and lng must be scalars or 1-D arrays")
    try:
        lat_a, lng_a = np.broadcast_arrays(lat_a, lng_a)
    except ValueError:
        raise InvalidCoordinates(
            f"lat and lng have different lengths ({lat_a.size} and {lng_a.size})"
        ) from None
    return lat_a, lng_a


def valid_mask(lat, lng):
    """Boolean array: finite, -90 <= lat <= 90 and -180 <= lng <= 180.

    Examples
    --------
    >>> valid_mask([51.2, float("nan"), 91.0], [4.4, 4.4, 4.4]).tolist()
    [True, False, False]
    """
    lat_a, lng_a = as_arrays(lat, lng)
    with np.errstate(invalid="ignore"):
        return np.isfinite(lat_a) & np.isfinite(lng_a) & (np.abs(lat_a) <= 90.0) & (np.abs(lng_a) <= 180.0)


def validate(lat, lng):
    """Return validated float64 arrays or raise :class:`InvalidCoordinates` naming the first bad point.

    Examples
    --------
    >>> validate(51.2, 4.4)
    (array([51.2]), array([4.4]))
    >>> validate(95, 4.4)
    Traceback (most recent call last):
    ...
    geo.errors.InvalidCoordinates: point 0: lat=95.0 is out of range [-90, 90]
    """
    lat_a, lng_a = as_arrays(lat, lng)
    ok = valid_mask(lat_a, lng_a)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        la, ln = lat_a[i], lng_a[i]
        if not np.isfinite(la):
            why = f"lat={la} is not a finite number"
        elif not np.isfinite(ln):
            why = f"lng={ln} is not a finite number"
        elif abs(la) > 90:
            why = f"lat={la} is out of range [-90, 90]"
        else:
            why = f"lng={ln} is out of range [-180, 180]"
        raise InvalidCoordinates(f"point {i}: {why}")
    return lat_a, lng_a
