"""The collapse clusters' components (geo.rules.works._components) against a breadth-first search: numbered by
first member, over random link sets (none, sparse, chains, one big component)."""

from __future__ import annotations

import numpy as np
import pytest

from geo.rules.works import _components


def _oracle(n: int, i, j) -> list[int]:
    neighbours: list[set] = [set() for _ in range(n)]
    for a, b in zip(i.tolist(), j.tolist()):
        neighbours[a].add(b)
        neighbours[b].add(a)
    label = [-1] * n
    k = 0
    for start in range(n):
        if label[start] >= 0:
            continue
        label[start], todo = k, [start]
        while todo:
            for b in neighbours[todo.pop()]:
                if label[b] < 0:
                    label[b] = k
                    todo.append(b)
        k += 1
    return label


@pytest.mark.parametrize("links", [0, 3, 40, 400])
@pytest.mark.parametrize("seed", range(4))
def test_components_are_numbered_by_first_member(links, seed):
    rng = np.random.default_rng(seed)
    n = 120
    i, j = rng.integers(0, n, links), rng.integers(0, n, links)
    i, j = i[i != j], j[i != j]
    got = _components(n, i, j)
    assert got.dtype == np.int64 and got.tolist() == _oracle(n, i, j)


def test_no_works():
    assert _components(0, np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
