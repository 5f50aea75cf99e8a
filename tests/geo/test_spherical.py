"""The fast small-angle sine under every distance: within 1 ulp of libm's, the same bits as its scalar twin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geo.index.spherical import SMALL_ANGLE, haversine_rad, sin_small, sin_small_one


def test_sin_small_is_within_one_ulp_of_sin_on_and_beyond_its_range():
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            rng.uniform(-SMALL_ANGLE, SMALL_ANGLE, 200_000),
            np.geomspace(1e-300, SMALL_ANGLE, 2_000),
            -np.geomspace(1e-300, SMALL_ANGLE, 2_000),
            np.nextafter(SMALL_ANGLE, [0.0, 1.0]),  # either side of the switch
            rng.uniform(-4.0, 4.0, 2_000),  # beyond it: libm itself
            [0.0, -0.0],
        ]
    )
    got, ref = sin_small(x), np.array([math.sin(v) for v in x])
    assert np.all(np.abs(got - ref) <= np.spacing(np.abs(ref)))
    big = np.abs(x) > SMALL_ANGLE
    assert got[big].tobytes() == np.sin(x[big]).tobytes()
    assert np.mean(got == ref) > 0.99  # faithfully rounded: almost always the correctly rounded value
    assert [sin_small_one(float(v)) for v in x] == got.tolist()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_sin_small_passes_nan_and_inf_through_like_sin(bad):
    x = np.array([1e-3, bad, 0.5])
    with np.errstate(invalid="ignore"):
        got = sin_small(x)
    assert math.isnan(got[1]) and got[0] == sin_small_one(1e-3) and got[2] == np.sin(0.5)
    with np.errstate(invalid="ignore"):
        assert math.isnan(sin_small_one(float(bad))) and math.isnan(float(sin_small(bad)))


def test_haversine_scalar_and_array_inputs_give_the_same_float():
    a, b = np.radians([51.2194, 4.4025]), np.radians([51.2201, 4.4101])
    args = (a[0], a[1], np.cos(a[0]), b[0], b[1], np.cos(b[0]))
    one = haversine_rad(*args)
    many = haversine_rad(*(np.full(3, v) for v in args))
    assert many.tolist() == [float(one)] * 3 and 0.5 < float(one) < 0.6
