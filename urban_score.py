"""The ``urban-score`` command (setup.cfg's console script): ``geo``'s batch command line
(:mod:`geo.batch.cli`) with ``--as-of`` wired to the app's history store (:mod:`app.history.scoring`),
imported only when ``--as-of`` is given, so plain scoring never loads the app (Flask, SQL)."""

from __future__ import annotations

from geo.batch.cli import command


def engine_at(instant, history, data):
    """:func:`app.history.scoring.engine_at` (the app is imported on the first ``--as-of``)."""
    from app.history.scoring import engine_at as from_history

    return from_history(instant, history, data)


main = command(engine_at)

if __name__ == "__main__":  # pragma: no cover
    main()
