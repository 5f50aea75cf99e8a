"""What every response shares (see README.md in this folder)."""
