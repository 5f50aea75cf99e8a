"""``urban``: command-line client of the Urban Conditions REST API.

A thin layer over :mod:`urban_client.api`: it sends the options unchanged, prints a readable summary (or the
API's body byte-for-byte with ``--json``) and turns every failure into a message on stderr and an exit code
(see :class:`ExitCode` and docs/cli.md). It never prints the key and never shows a traceback.
"""

from __future__ import annotations

import json
import math
import sys
import time
from enum import IntEnum

import click
from rich.console import Console

from urban_client import __version__
from urban_client.api import (
    GEOJSON,
    JSON,
    LANGUAGES,
    ApiClient,
    ApiError,
    NetworkError,
    changes_params,
    changes_path,
    target_params,
)
from urban_client.config import ConfigError, Settings, parse_timeout, read_file, resolve, write_file


class ExitCode(IntEnum):
    """Process exit status of every ``urban`` command (documented in docs/cli.md)."""

    OK = 0
    ERROR = 1  # unexpected server answer (500, invalid response) or internal error
    USAGE = 2  # bad command line or configuration; API 400 (missing_target, invalid_coordinates, ...)
    AUTH = 3  # API 401 missing_key / invalid_key, 403 plan_required
    QUOTA = 4  # API 429 quota_exceeded / rate_limited
    NOT_FOUND = 5  # API 404 location_not_found
    OUTSIDE_AREA = 6  # API 422 outside_service_area
    UPSTREAM = 7  # API 502 upstream_error, 503 service_unavailable; a gateway's 502/503/504 page
    NETWORK = 8  # invalid base URL, DNS failure, connection refused, timeout, TLS failure, not HTTP


STATUS_EXIT = {
    400: ExitCode.USAGE,
    406: ExitCode.USAGE,
    401: ExitCode.AUTH,
    403: ExitCode.AUTH,
    404: ExitCode.NOT_FOUND,
    422: ExitCode.OUTSIDE_AREA,
    429: ExitCode.QUOTA,
    502: ExitCode.UPSTREAM,
    503: ExitCode.UPSTREAM,
}
GATEWAY_STATUSES = (502, 503, 504)  # a proxy's own error page: retry shortly, like the API's 502/503

BASE_URL_FROM = {
    "option": "The base URL was given with --base-url.",
    "env": "The base URL comes from the environment variable URBAN_BASE_URL.",
    "file": "The base URL comes from the config file {path} (`urban configure --base-url URL` changes it).",
    "default": "No base URL is configured, so the default {url} is used; set URBAN_BASE_URL or run "
    "`urban configure --base-url URL`.",
}

HINTS = {
    "missing_target": "Give --location-id ID, or both --lat and --lng.",
    "ambiguous_target": "Give --location-id ID or --lat/--lng, not both.",
    "missing_key": "Set URBAN_API_KEY or run `urban configure` to store a key.",
    "invalid_key": "The key is unknown or revoked; `urban configure --show` tells where it is read from.",
    "plan_required": "The account's plan has no API access (Developer, API and Pro plans do).",
    "quota_exceeded": "The daily quota resets at 00:00 UTC.",
    "upstream_error": "An upstream source failed; retry shortly.",
    "service_unavailable": "The service is temporarily unavailable; retry shortly.",
    "location_not_found": "`urban locations` lists your saved location ids.",
    "outside_service_area": "The service covers Flanders and Brussels only.",
    "not_found": "The base URL must end in the API's version, e.g. http://HOST:PORT/api/v1.",
    "not_acceptable": "This server does not offer that format for this command; drop --geojson.",
}


def exit_code_for(error: ApiError) -> ExitCode:
    """The exit code of an API error: by status, with 5xx other than 502/503 as ERROR. An answer that is not
    the API's error shape (a proxy's page, another server) is ERROR, or UPSTREAM for a gateway's 502/503/504.

    Examples
    --------
    >>> int(exit_code_for(ApiError(422, "outside_service_area", "...", from_api=True)))
    6
    >>> int(exit_code_for(ApiError(504, "http_504", "...", from_api=False)))
    7
    """
    if not error.from_api:
        return ExitCode.UPSTREAM if error.status in GATEWAY_STATUSES else ExitCode.ERROR
    return STATUS_EXIT.get(error.status, ExitCode.USAGE if 400 <= error.status < 500 else ExitCode.ERROR)


def base_url_origin(settings: Settings) -> str:
    """One line telling where the base URL came from, so the user knows what to change."""
    return BASE_URL_FROM[settings.base_url_source].format(path=settings.config_path, url=settings.base_url)


class Coordinate(click.ParamType):
    """A decimal number of degrees; passed to the API exactly as typed (the API validates the range)."""

    name = "DEGREES"

    def convert(self, value, param, ctx):
        text = str(value).strip()
        try:
            number = float(text)
        except ValueError:
            self.fail(f"{value!r} is not a number of degrees", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return text


def _stderr(message: str) -> None:
    click.echo(message, err=True)


def _fail(error: Exception, settings: Settings) -> "NoReturn":  # noqa: F821
    """Report an API or network error on stderr and exit with its code."""
    if isinstance(error, ApiError) and not error.from_api:
        _stderr(f"Error: {error.code}: {error.message} (HTTP {error.status})")
        _stderr(base_url_origin(settings))
        raise SystemExit(exit_code_for(error))
    if isinstance(error, ApiError):
        _stderr(f"Error: {error.code}: {error.message} (HTTP {error.status})")
        hint = HINTS.get(error.code)
        if error.code == "quota_exceeded" and error.retry_after is not None:
            hours, minutes = divmod(max(error.retry_after, 0) // 60, 60)
            hint = f"The daily quota resets at 00:00 UTC (in {hours} h {minutes:02d} min)."
        if hint:
            _stderr(hint)
        raise SystemExit(exit_code_for(error))
    _stderr(f"Error: network: {error.message}")
    _stderr(base_url_origin(settings))
    raise SystemExit(ExitCode.NETWORK)


def _write_body(body: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(body)
    sys.stdout.buffer.flush()


def _settings(ctx: click.Context) -> Settings:
    opts = ctx.find_root().params
    try:
        return resolve(base_url=opts.get("base_url"), timeout=opts.get("timeout"))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _client(settings: Settings, lang: str | None = None) -> ApiClient:
    return ApiClient(settings.base_url, settings.api_key, settings.timeout, language=lang)


def _run(
    ctx: click.Context,
    endpoint: str,
    as_json: bool,
    params: dict[str, str] | None = None,
    geojson: bool = False,
    lang: str | None = None,
) -> None:
    """Call one endpoint and print its body (``--json``, ``--geojson``) or its summary; exit with the
    error's code."""
    from urban_client.render import RENDERERS, render_quota

    if as_json and geojson:
        raise click.UsageError("give --json or --geojson, not both")
    as_json = as_json or geojson
    settings = _settings(ctx)
    try:
        response = _client(settings, lang).get(endpoint, params, accept=GEOJSON if geojson else JSON)
    except ApiError as error:
        if as_json and error.from_api:  # the API's error body; never a proxy's page
            _write_body(error.body)
        _fail(error, settings)
    except NetworkError as error:
        _fail(error, settings)
    if as_json:
        _write_body(response.body)
        return
    console = Console(highlight=False)
    RENDERERS[endpoint](response.data, console)
    render_quota(response.rate_limit, console)


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the API's JSON body unchanged (byte-for-byte) and nothing else on stdout.",
)


geojson_option = click.option(
    "--geojson",
    is_flag=True,
    help="Print the answer as GeoJSON (a FeatureCollection for QGIS, Leaflet or "
    "geojson.io), byte-for-byte, and nothing else on stdout.",
)


lang_option = click.option(
    "--lang",
    type=click.Choice(LANGUAGES),
    metavar="|".join(LANGUAGES),
    help="Language of the texts the API generates (headline, key facts, labels), sent "
    "as Accept-Language; data values stay Dutch. Default: the API's (nl).",
)


def target_options(fn):
    """``--location-id`` or ``--lat``/``--lng``: the point a data command is about; ``--as-of`` an instant."""
    fn = click.option(
        "--lng", type=Coordinate(), metavar="DEGREES", help="Longitude in degrees (with --lat), e.g. 4.4025."
    )(fn)
    fn = click.option(
        "--lat", type=Coordinate(), metavar="DEGREES", help="Latitude in degrees (with --lng), e.g. 51.2194."
    )(fn)
    fn = click.option(
        "--as-of",
        metavar="INSTANT",
        help="Enterprise: the answer as it was at this past RFC 3339 instant, e.g. 2026-11-01T08:00:00Z.",
    )(fn)
    fn = click.option(
        "--location-id",
        metavar="ID",
        help="One of your saved location ids (see `urban locations`); not with --lat/--lng.",
    )(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--base-url",
    metavar="URL",
    help="API root including /api/v1 (default: URBAN_BASE_URL, the config file, "
    "or http://127.0.0.1:8000/api/v1).",
)
@click.option(
    "--timeout",
    type=float,
    metavar="SECONDS",
    help="Seconds to wait for connecting and for each read (default: URBAN_TIMEOUT, config, or 10).",
)
@click.version_option(
    __version__,
    "--version",
    prog_name="urban",
    message="%(prog)s %(version)s",
    help="Show the version and exit.",
)
def cli(base_url, timeout):
    """Road works, transit disruptions, air quality and briefings for any point in Flanders and Brussels.

    The key is read from URBAN_API_KEY or from the file written by `urban configure`.
    Exit codes: 0 ok, 1 other error, 2 usage, 3 auth, 4 quota, 5 not found, 6 outside service area,
    7 upstream, 8 network.
    """
    if timeout is not None:
        try:
            parse_timeout(timeout)
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--timeout") from None


@cli.command()
@json_option
@geojson_option
@click.pass_context
def locations(ctx, as_json, geojson):
    """List your saved monitored locations (their ids work with --location-id)."""
    _run(ctx, "locations", as_json, geojson=geojson)


@cli.command()
@target_options
@json_option
@geojson_option
@click.pass_context
def disruptions(ctx, location_id, as_of, lat, lng, as_json, geojson):
    """Road works within 2 km and transit detours affecting a point, nearest first."""
    _run(ctx, "disruptions", as_json, target_params(location_id, lat, lng, as_of), geojson)


@cli.command("air-quality")
@target_options
@json_option
@geojson_option
@lang_option
@click.pass_context
def air_quality(ctx, location_id, as_of, lat, lng, as_json, geojson, lang):
    """Latest measured NO2 at the nearest station, thresholds verdict and low-emission-zone status."""
    _run(ctx, "air-quality", as_json, target_params(location_id, lat, lng, as_of), geojson, lang)


@cli.command()
@target_options
@json_option
@lang_option
@click.pass_context
def briefing(ctx, location_id, as_of, lat, lng, as_json, lang):
    """Operations briefing for the next 24 hours: risk, headline, key facts, best and worst windows."""
    _run(ctx, "briefing", as_json, target_params(location_id, lat, lng, as_of), lang=lang)


@cli.command()
@click.option(
    "--location-id",
    metavar="ID",
    help="One of your saved location ids (see `urban locations`); default: all your locations.",
)
@click.option("--since", metavar="CURSOR", help="Start after this cursor (printed by the previous run).")
@click.option(
    "--follow",
    is_flag=True,
    help="Keep polling for new events (every --interval seconds) until Ctrl-C; a poll with nothing new "
    "costs no quota.",
)
@click.option(
    "--interval",
    type=click.FloatRange(5, 3600),
    default=60,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between polls with --follow.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print each event as one line of JSON (JSON Lines, the API's event objects) and nothing else.",
)
@click.pass_context
def changes(ctx, location_id, since, follow, interval, as_json):
    """What changed at your saved locations: works, detours, NO2, stations and sources, oldest first.

    The cursor to continue from is printed on stderr at the end (``Next cursor: cur_…``).
    """
    from urban_client.render import render_event, render_quota

    settings = _settings(ctx)
    client = _client(settings)
    console = Console(highlight=False)
    cursor = since
    response = None
    try:
        while True:
            try:
                response = client.get(changes_path(location_id), changes_params(cursor))
            except (ApiError, NetworkError) as error:
                if cursor and cursor != since:
                    _stderr(f"Next cursor: {cursor}")
                _fail(error, settings)
            page = response.data
            for event in page["events"]:
                if as_json:
                    click.echo(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
                else:
                    render_event(event, console)
            sys.stdout.flush()
            cursor = page["nextCursor"]
            if page["hasMore"]:
                continue
            if not follow:
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    if response is not None and not as_json:
        render_quota(response.rate_limit, console)
    _stderr(f"Next cursor: {cursor}")


@cli.command()
@click.option("--base-url", "new_base_url", metavar="URL", help="Store this API root in the config file.")
@click.option(
    "--timeout", "new_timeout", type=float, metavar="SECONDS", help="Store this timeout in the config file."
)
@click.option(
    "--show", is_flag=True, help="Show the config file path and effective settings (never the key) and exit."
)
@click.pass_context
def configure(ctx, new_base_url, new_timeout, show):
    """Store your API key (read hidden from the terminal, or from stdin) in a config file with mode 0600.

    The file is $URBAN_CONFIG, else $XDG_CONFIG_HOME/urban/config.ini, else ~/.config/urban/config.ini.
    An empty key keeps the stored one.
    """
    root = ctx.find_root().params
    try:
        settings = resolve(base_url=root.get("base_url"), timeout=root.get("timeout"))
        stored = read_file(settings.config_path)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    if show:
        source = {"env": "set (from URBAN_API_KEY)", "file": "set (from the config file)"}.get(
            settings.key_source, "not set"
        )
        click.echo(f"Config file: {settings.config_path}")
        click.echo(f"Base URL:    {settings.base_url}")
        click.echo(f"Timeout:     {settings.timeout:g} s")
        click.echo(f"API key:     {source}")
        return
    if sys.stdin.isatty():
        key = click.prompt(
            "API key (input hidden; empty keeps the stored key)",
            hide_input=True,
            default="",
            show_default=False,
            err=True,
        )
    else:
        key = sys.stdin.readline()
    key = key.strip()
    if key and (any(c.isspace() for c in key) or not key.isprintable()):
        raise click.UsageError("the key must be one word of printable characters")
    values = dict(stored)
    if key:
        values["api_key"] = key
    if new_base_url:
        values["base_url"] = new_base_url.rstrip("/")
    if new_timeout is not None:
        try:
            values["timeout"] = f"{parse_timeout(new_timeout):g}"
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--timeout") from None
    if not values.get("api_key"):
        raise click.UsageError("no key given and none stored")
    try:
        write_file(settings.config_path, values)
    except OSError as exc:
        raise click.UsageError(f"cannot write {settings.config_path}: {exc.strerror or exc}") from None
    click.echo(f"Saved to {settings.config_path} (mode 0600).", err=True)


@cli.command()
@click.option(
    "--http",
    "use_http",
    is_flag=True,
    help="Serve streamable HTTP on 127.0.0.1 (endpoint /mcp) instead of stdio.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8765,
    show_default=True,
    metavar="PORT",
    help="Port for --http (always bound to 127.0.0.1).",
)
@lang_option
@click.pass_context
def mcp(ctx, use_http, port, lang):
    """Run the MCP server: read-only tools for agent clients (the data endpoints, the change feed and,
    Enterprise, the history), using the same key and base URL."""
    from urban_client.mcp_server import serve_http, serve_stdio

    client = _client(_settings(ctx), lang)
    if use_http:
        click.echo(f"MCP server on http://127.0.0.1:{port}/mcp (Ctrl-C stops it)", err=True)
        try:
            serve_http(client, port)
        except OSError as exc:
            raise click.UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    else:
        serve_stdio(client)


from urban_client.history_cli import history  # noqa: E402  (it builds on the helpers above)

cli.add_command(history)


def main(argv=None) -> int:
    """Console-script entry point: run ``urban`` and return its exit status (never a traceback)."""
    try:
        cli.main(args=argv, prog_name="urban", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else ExitCode.ERROR)
    except BrokenPipeError:
        return ExitCode.ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # last resort: a bug must still not print a traceback
        _stderr(f"Error: internal: {exc.__class__.__name__}: {exc}")
        return ExitCode.ERROR
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
