"""`python -m urban_client` runs the `urban` CLI."""

import sys

from urban_client.cli import main

sys.exit(main())
