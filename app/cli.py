"""Admin commands: ``python -m app.admin accounts|keys|locations|usage ...`` (:mod:`app.admin`), also on the
Flask CLI as ``flask --app wsgi accounts|keys|locations|usage ...`` (with the server's settings).

Thin wrappers over :mod:`app.store.accounts`, :mod:`app.store.saved_locations` and :mod:`app.store.usage`. Bad arguments
print a clear message, exit non-zero and write nothing. ``accounts create`` and ``keys create`` print the
new key alone on the last line of stdout (it is shown only this once).
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import click
from flask import current_app
from flask.cli import AppGroup

from app.store import accounts, usage
from app.web.clock import wall_now
from app.api.targeting import parse_decimal
from app.store.db import open_store
from app.store.plans import PLANS
from app.store.saved_locations import add_location, as_json, list_locations, remove_location
from geo.errors import GeoError
from geo.service.point import checked_point

accounts_cli = AppGroup("accounts", help="Create accounts and change their plan.")
keys_cli = AppGroup("keys", help="Create, list and revoke API keys.")
locations_cli = AppGroup("locations", help="Add, list and remove saved locations.")
usage_cli = AppGroup("usage", help="Show daily API usage.")

PLAN_CHOICE = click.Choice(list(PLANS), case_sensitive=False)


class Decimal(click.ParamType):
    """A coordinate in plain ASCII decimal notation (the API's rule: no ``５１``, no spaces, no ``nan``)."""

    name = "number"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        number = parse_decimal(value)
        if number is None:
            self.fail(f"{value!r} is not a decimal number (ASCII digits, e.g. 51.2213)", param, ctx)
        return number


@contextmanager
def store():
    """A migrated connection; store errors become a clean CLI failure (exit 1)."""
    conn = open_store(current_app)
    try:
        yield conn
    except accounts.StoreError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        conn.close()


@accounts_cli.command("create")
@click.option("--email", required=True, help="account e-mail address")
@click.option("--plan", required=True, type=PLAN_CHOICE, help="plan of the account")
@click.option("--no-key", is_flag=True, help="do not create a first API key")
def accounts_create(email, plan, no_key):
    """Create an account; prints its first key alone on the last line."""
    with store() as conn:
        account, key = accounts.create_account(conn, email, plan.lower(), with_key=not no_key)
    click.echo(f"account {account['id']} {account['email']} plan={account['plan']}")
    if key:
        click.echo("API key (shown once; store it now):", err=True)
        click.echo(key)


@accounts_cli.command("set-plan")
@click.option("--email", required=True)
@click.option("--plan", required=True, type=PLAN_CHOICE)
def accounts_set_plan(email, plan):
    """Change an account's plan (effective on its next request)."""
    with store() as conn:
        account = accounts.set_plan(conn, email, plan.lower())
    click.echo(f"account {account['id']} {account['email']} plan={account['plan']}")


@accounts_cli.command("list")
def accounts_list():
    """List accounts (id, e-mail, plan)."""
    with store() as conn:
        for row in conn.execute("SELECT id, email, plan FROM accounts ORDER BY id"):
            click.echo(f"{row['id']}\t{row['email']}\t{row['plan']}")


@keys_cli.command("create")
@click.option("--email", required=True)
def keys_create(email):
    """Create a new key for the account; prints it alone on the last line."""
    with store() as conn:
        account = accounts.get_account(conn, email)
        key_id, key = accounts.create_key(conn, account["id"])
    click.echo(f"key {key_id} for {account['email']}")
    click.echo("API key (shown once; store it now):", err=True)
    click.echo(key)


@keys_cli.command("list")
@click.option("--email", required=True)
def keys_list(email):
    """List the account's keys by display prefix (never the key itself)."""
    with store() as conn:
        account = accounts.get_account(conn, email)
        rows = accounts.list_keys(conn, account["id"])
    for row in rows:
        state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
        click.echo(f"{row['id']}\t{row['prefix']}…\tcreated {row['created_at']}\t{state}")


@keys_cli.command("revoke")
@click.option("--email", required=True)
@click.option("--id", "key_id", required=True, type=int, help="key id from `keys list`")
def keys_revoke(email, key_id):
    """Revoke a key: the next request with it gets 401 in every worker."""
    with store() as conn:
        account = accounts.get_account(conn, email)
        row = accounts.revoke_key(conn, account["id"], key_id)
    click.echo(f"key {row['id']} ({row['prefix']}…) revoked at {row['revoked_at']}")


@locations_cli.command("add")
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--address", default="", show_default=True)
@click.option("--lat", required=True, type=Decimal())
@click.option("--lng", required=True, type=Decimal())
@click.option("--label", default="", show_default=True)
@click.option("--primary", "is_primary", is_flag=True, help="make this the primary location")
@click.option("--id", "location_id", default=None, help="explicit id (default: random loc_…)")
def locations_add(email, name, address, lat, lng, label, is_primary, location_id):
    """Save a location (validated; inside the service area when a snapshot is loaded)."""
    engine = current_app.extensions["urban"].engine
    if engine is not None:
        try:
            lat, lng = checked_point(engine, lat, lng)
        except GeoError as exc:
            raise click.ClickException(str(exc)) from None
    with store() as conn:
        account = accounts.get_account(conn, email)
        row = add_location(
            conn,
            account["id"],
            name=name,
            address=address,
            lat=lat,
            lng=lng,
            label=label,
            is_primary=is_primary,
            location_id=location_id,
            max_locations=current_app.config["MAX_LOCATIONS"],
        )
    click.echo(row["id"])


@locations_cli.command("list")
@click.option("--email", required=True)
@click.option("--json", "as_json_flag", is_flag=True, help="print the API's JSON")
def locations_list(email, as_json_flag):
    """List the account's locations (primary first)."""
    with store() as conn:
        account = accounts.get_account(conn, email)
        items = [as_json(r) for r in list_locations(conn, account["id"])]
    if as_json_flag:
        click.echo(json.dumps({"locations": items}, ensure_ascii=False, indent=2))
        return
    for it in items:
        mark = "*" if it["isPrimary"] else " "
        click.echo(
            f"{mark} {it['id']}\t{it['name']}\t{it['address']}\t{it['lat']},{it['lng']}\t{it['label']}"
        )


@locations_cli.command("remove")
@click.option("--email", required=True)
@click.option("--id", "location_id", required=True)
def locations_remove(email, location_id):
    """Delete one of the account's locations."""
    with store() as conn:
        account = accounts.get_account(conn, email)
        remove_location(conn, account["id"], location_id)
    click.echo(f"removed {location_id}")


@usage_cli.command("show")
@click.option("--email", required=True)
@click.option("--days", default=7, show_default=True, type=click.IntRange(1, 366))
def usage_show(email, days):
    """Today's count against the quota (UTC day), then the most recent days."""
    with store() as conn:
        account = accounts.get_account(conn, email)
        today = usage.day_of(wall_now())
        used = usage.used(conn, account["id"], today)
        rows = usage.history(conn, account["id"], days)
    quota = PLANS[account["plan"]].daily_quota if account["plan"] in PLANS else 0
    click.echo(
        f"{account['email']} plan={account['plan']} today={today} used={used} "
        f"quota={'unlimited' if quota is None else quota}"
    )
    for day, count in rows:
        click.echo(f"{day}\t{count}")


GROUPS = (accounts_cli, keys_cli, locations_cli, usage_cli)


def init_app(app) -> None:
    for group in GROUPS:
        app.cli.add_command(group)
