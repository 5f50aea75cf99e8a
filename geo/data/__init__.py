"""Layers and their schemas, snapshot read/write/build, reference readers, upstream normalisers, the river
zone, the demo scenario, and the :class:`~geo.data.engine.Engine` (the loaded layers with their spatial
indexes). ``python -m geo.data build|verify`` is the command line (``__main__``). See README.md here."""
