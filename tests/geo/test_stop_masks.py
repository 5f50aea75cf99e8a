"""Per stop, the detours sharing one of its lines (geo.service.lookups.stop_detour_masks) against brute force,
with more lines and more detours than one 64-bit word holds."""

from __future__ import annotations

import numpy as np
import pytest

from geo.service.lookups import stop_detour_masks


@pytest.mark.parametrize(("n_lines", "n_detours"), [(5, 3), (64, 64), (130, 150)])
def test_the_masks_equal_brute_force(n_lines, n_detours):
    rng = np.random.default_rng(n_lines + n_detours)
    stops = rng.random((200, n_lines)) < 0.03
    detours = rng.random((n_detours, n_lines)) < 0.05
    masks = stop_detour_masks(np.packbits(stops, axis=1), np.packbits(detours, axis=1))
    for s in range(stops.shape[0]):
        want = sum(1 << j for j in range(n_detours) if (stops[s] & detours[j]).any())
        assert masks[s] == want
    assert any(m >> 64 for m in masks) == (n_detours > 64)
