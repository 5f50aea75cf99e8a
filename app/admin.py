"""The admin commands: ``python -m app.admin accounts|keys|locations|usage ...`` (:mod:`app.cli`).

The same commands as ``flask --app wsgi accounts ...``, on an app built only to run them (``COMMANDS_ONLY``):
it never serves a request, signs a cookie or builds a link, so it needs neither ``URBAN_SECRET_KEY`` nor
``URBAN_PUBLIC_URL`` and runs locally without ``URBAN_ENV=development``. Everything else is read as the server
reads it (the account store: ``URBAN_INSTANCE_PATH`` or ``URBAN_DATABASE_URL``; the snapshot for the
service-area check of new locations, skipped with ``URBAN_LOAD_ENGINE=0``). The server itself keeps refusing
to start in production without them, and this app's WSGI callable refuses to serve.
"""

from __future__ import annotations

import sys

import click
from flask.cli import ScriptInfo

from app.cli import GROUPS
from app.config import ConfigurationError
from geo.errors import SnapshotError


def commands_app():
    """The app the commands run on (a clear message, not a traceback, when the settings are unusable); built,
    and the factory imported, only when a command runs (``--help`` imports neither)."""
    from app import create_app

    try:
        return create_app({"COMMANDS_ONLY": True})
    except (ConfigurationError, SnapshotError) as exc:
        raise click.ClickException(str(exc)) from None


@click.group(
    help="Administer accounts, plans, keys, saved locations and usage in the account store "
    "(docs/configuration.md → Admin commands). No SECRET_KEY or URBAN_ENV needed."
)
def admin() -> None:
    """The command group."""


for group in GROUPS:
    admin.add_command(group)


def main(argv=None) -> None:
    admin.main(args=argv, prog_name="python -m app.admin", obj=ScriptInfo(create_app=commands_app))


if __name__ == "__main__":
    main(sys.argv[1:])
