"""Scores over arrays and frames (``score``), file I/O by row groups (``io``), the process pool (``workers``),
Dask (``dask``) and the ``urban-score`` command line (``cli``). See README.md in this folder."""
