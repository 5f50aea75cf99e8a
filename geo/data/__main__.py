"""``python -m geo.data build|verify``: build or check a snapshot directory (see docs/data.md)."""

import sys

from .snapshot import main

if __name__ == "__main__":
    sys.exit(main())
