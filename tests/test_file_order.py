"""The order `make test` hands files to its workers (tests/file_weights.py, docs/testing.md)."""

import random

from file_weights import TABLE, read_table, run_order

WEIGHTS = {
    "tests/history/test_a.py": 60.0,
    "tests/history/test_b.py": 40.0,
    "tests/ops/test_c.py": 30.0,
    "tests/geo/test_d.py": 5.0,
    "tests/geo/test_e.py": 5.0,
}


def test_longest_first_with_the_second_outside_the_history_files():
    files = set(WEIGHTS) | {"tests/zz/test_new.py"}
    order = run_order(files, WEIGHTS)
    assert order[:3] == ["tests/history/test_a.py", "tests/ops/test_c.py", "tests/history/test_b.py"]
    # the unlisted file counts as the median (30 s here), ties by name
    assert order[3:] == ["tests/zz/test_new.py", "tests/geo/test_d.py", "tests/geo/test_e.py"]


def test_every_worker_gets_the_same_order_whatever_the_sets_order():
    names = [f"tests/x/test_{k}.py" for k in range(40)]
    weights = {name: float(k % 3) for k, name in enumerate(names)}  # many ties
    orders = {
        tuple(run_order(set(random.Random(seed).sample(names, len(names))), weights)) for seed in range(20)
    }
    assert len(orders) == 1


def test_the_table_names_files_that_exist():
    table = read_table()
    assert table, TABLE
    root = TABLE.parent.parent
    missing = [name for name in table if not (root / name).exists()]
    assert len(missing) <= len(table) // 10, missing
