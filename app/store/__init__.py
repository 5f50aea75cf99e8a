"""The account store and the functions on it (see README.md in this folder)."""
