"""The batch layer's own error, importable without pandas or Arrow (the ``urban-score`` command line
catches it before it reads any file)."""


class InputError(ValueError):
    """The input file cannot be read as asked; the message names the file, row and/or column."""
