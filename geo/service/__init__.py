"""The per-point answers of ``/disruptions``, ``/air-quality`` and ``/briefing`` for one loaded snapshot.
See README.md in this folder."""
