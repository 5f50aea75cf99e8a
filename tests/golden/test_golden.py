"""Byte-identical output: every response body of the golden corpus is rebuilt and compared (issue 14).

If this fails after an INTENDED change of output (for example a new demo scenario generator), regenerate
the corpus with ``make golden`` (= ``.venv/bin/python tests/golden/corpus.py --write``), review the diff of
the sampled bodies, and commit ``tests/golden/corpus.jsonl.gz`` with the change that explains it.
"""

from __future__ import annotations

import corpus  # tests/golden/corpus.py (pytest puts the test's own folder on the path)


def test_corpus_covers_both_dst_changes_and_every_endpoint():
    rows = corpus.read()
    assert len(rows) >= 3000
    nows = {r["now"] for r in rows}
    assert {"2026-03-29T01:00:00.000Z", "2026-10-25T01:00:00.000Z"} <= nows
    assert {r["endpoint"] for r in rows} == set(corpus.ENDPOINTS)
    assert {r["status"] for r in rows} == {200, 422}


def test_every_response_is_byte_identical_to_the_golden_corpus(engine):
    old = corpus.read()
    new = corpus.lines(engine)
    assert len(new) == len(old), (
        f"{len(new)} responses now, {len(old)} in the corpus; regenerate: {corpus.REGENERATE}"
    )
    differ = [(a, b) for a, b in zip(old, new) if a != b]
    if differ:
        a, b = differ[0]
        detail = "\n".join(
            f"  {k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)
        )
        raise AssertionError(
            f"{len(differ)} of {len(old)} responses differ from tests/golden/corpus.jsonl.gz; "
            f"first: {a['endpoint']} lat={a['lat']} lng={a['lng']} now={a['now']}\n{detail}\n"
            f"If the change of output is intended, regenerate: {corpus.REGENERATE}"
        )
