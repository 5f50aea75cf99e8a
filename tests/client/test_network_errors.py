"""Network failures and answers that are not the API's, each met for real on loopback by `urban` run as a
subprocess: one clear sentence naming the base URL and what to check, a second line saying where the base
URL came from, the documented exit code, nothing on stdout (also with --json), never a traceback or the
key."""

from __future__ import annotations

import json

import pytest

from .conftest import NGINX_502, free_port, http_answer, read_request

pytestmark = pytest.mark.slow  # many short subprocesses

KEY = "uk_network_tests_secret_000000000000000"
TARGET = ["--lat", "51.2194", "--lng", "4.4025"]
FROM_ENV = "The base URL comes from the environment variable URBAN_BASE_URL."


def run_both_modes(run_urban, base, *global_args, env=None):
    """Run `urban [global args] disruptions TARGET` and the same with --json; return both processes."""
    env = {"URBAN_BASE_URL": base, "URBAN_API_KEY": KEY, **(env or {})}
    return [run_urban(*global_args, "disruptions", *TARGET, *extra, env=env) for extra in ([], ["--json"])]


def assert_reported(procs, exit_code, first_line, second_line=FROM_ENV):
    """Exit code, exactly two stderr lines, empty stdout, no traceback, no key, no OpenSSL internals."""
    for proc in procs:
        err = proc.stderr.decode()
        assert proc.returncode == exit_code, err
        assert err.splitlines() == [first_line, second_line]
        assert proc.stdout == b""
        assert "Traceback" not in err and KEY not in err
        assert "_ssl.c" not in err and "Max retries" not in err and "HTTPConnectionPool" not in err


# --- network failures: exit 8 -------------------------------------------------------------------------------


def test_https_against_a_plain_http_server(run_urban, raw_server):
    """The auditor's case: https:// in the base URL, a server that speaks plain HTTP on that port."""
    server = raw_server(
        http_answer("400 Bad Request", "text/html", b"<html><h1>400</h1></html>"), scheme="https"
    )
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        8,
        f"Error: network: {server.base_url} does not speak TLS (HTTPS) on port {server.port}: the "
        "server answers plain HTTP, so the base URL should start with http:// instead of https://, "
        "or the port is wrong.",
    )


def test_untrusted_certificate_and_the_advised_fix(run_urban, raw_server, self_signed):
    context, cert_path = self_signed
    body = b'{"locations":[]}'
    server = raw_server(http_answer("200 OK", "application/json", body), scheme="https", tls=context)
    procs = [
        run_urban("locations", *extra, env={"URBAN_BASE_URL": server.base_url, "URBAN_API_KEY": KEY})
        for extra in ([], ["--json"])
    ]
    for proc in procs:
        first = proc.stderr.decode().splitlines()[0]
        assert first.startswith("Error: network: the TLS certificate of 127.0.0.1 is not trusted (self")
        assert first.endswith(
            f"certificate): check the host name in the base URL {server.base_url}, or "
            "point REQUESTS_CA_BUNDLE at your organisation's CA bundle."
        )
    assert_reported(procs, 8, procs[0].stderr.decode().splitlines()[0])
    # the advice works: trusting the certificate gives the body unchanged
    proc = run_urban(
        "locations",
        "--json",
        env={"URBAN_BASE_URL": server.base_url, "URBAN_API_KEY": KEY, "REQUESTS_CA_BUNDLE": str(cert_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == body


def test_http_against_a_tls_server(run_urban, raw_server, self_signed):
    server = raw_server(http_answer("200 OK", "application/json", b"{}"), tls=self_signed[0])
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        8,
        f"Error: network: {server.base_url} closed the connection without a complete HTTP answer: if "
        "the server uses TLS the base URL must start with https://, otherwise check its port (or "
        "retry if the server was restarting).",
    )


def test_connection_refused(run_urban):
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    assert_reported(
        run_both_modes(run_urban, base),
        8,
        f"Error: network: nothing is listening on 127.0.0.1:{port} (connection refused by {base}): "
        "check that the API server is running and the host and port of the base URL.",
    )


def test_host_name_that_does_not_resolve(run_urban):
    base = "http://urban-conditions.invalid:8000/api/v1"  # .invalid never resolves (RFC 6761)
    assert_reported(
        run_both_modes(run_urban, base),
        8,
        f"Error: network: the host name 'urban-conditions.invalid' of {base} does not resolve: check "
        "its spelling in the base URL, and your network or DNS.",
    )


def test_connect_timeout(run_urban, unreachable_port):
    base = f"http://127.0.0.1:{unreachable_port}/api/v1"
    assert_reported(
        run_both_modes(run_urban, base, "--timeout", "0.5"),
        8,
        f"Error: network: could not connect to {base} within 0.5 s: the host does not accept "
        "connections; check the host and port of the base URL, a firewall or VPN, or raise --timeout.",
    )


def test_read_timeout(run_urban, silent_server):
    assert_reported(
        run_both_modes(run_urban, silent_server, "--timeout", "0.5"),
        8,
        f"Error: network: {silent_server} accepted the connection but sent no answer within 0.5 s: "
        "the server is overloaded or stuck, or is not the Urban Conditions API; retry, or raise "
        "--timeout.",
    )


def test_server_that_closes_without_answering(run_urban, raw_server):
    server = raw_server(read_request)
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        8,
        f"Error: network: {server.base_url} closed the connection without a complete HTTP answer: if "
        "the server uses TLS the base URL must start with https://, otherwise check its port (or "
        "retry if the server was restarting).",
    )


def test_server_that_does_not_speak_http(run_urban, raw_server):
    def ssh(conn):
        read_request(conn)
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    server = raw_server(ssh)
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        8,
        f"Error: network: {server.base_url} answered with something that is not HTTP: the port in the "
        "base URL probably belongs to another service; check the host and port.",
    )


@pytest.mark.parametrize(
    "base",
    [
        "127.0.0.1:8000/api/v1",
        "ftp://127.0.0.1/api/v1",
        "http:///api/v1",
        "http://127.0.0.1:99999/api/v1",
        "http://exa mple.be/api/v1",
    ],
)
def test_invalid_base_url_given_with_the_option(run_urban, base):
    procs = [
        run_urban("--base-url", base, "locations", *extra, env={"URBAN_API_KEY": KEY})
        for extra in ([], ["--json"])
    ]
    assert_reported(
        procs,
        8,
        f"Error: network: invalid base URL {base!r}: it must look like http://HOST:PORT/api/v1 "
        "(scheme http:// or https://, then a host name).",
        "The base URL was given with --base-url.",
    )


def test_base_url_from_the_config_file_is_named(run_urban, client_env):
    base = f"http://127.0.0.1:{free_port()}/api/v1"
    assert run_urban("configure", "--base-url", base, input=f"{KEY}\n".encode()).returncode == 0
    proc = run_urban("locations")
    assert proc.returncode == 8
    assert proc.stderr.decode().splitlines()[1] == (
        f"The base URL comes from the config file {client_env['URBAN_CONFIG']} "
        "(`urban configure --base-url URL` changes it)."
    )


# --- answers that are not the API's ------------------------------------------------------------------------


def test_proxy_html_502_is_upstream_exit_7_and_never_printed(run_urban, raw_server):
    server = raw_server(http_answer("502 Bad Gateway", "text/html", NGINX_502))
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        7,
        f"Error: http_502: the server at {server.base_url} answered HTTP 502 Bad Gateway with an HTML "
        "page, not the API's JSON error: a proxy or gateway in front of the API is failing (retry "
        "shortly), or the base URL does not point at the Urban Conditions API. (HTTP 502)",
    )


def test_html_page_with_200_is_not_the_api_exit_1(run_urban, raw_server):
    server = raw_server(http_answer("200 OK", "text/html; charset=utf-8", b"<!doctype html><p>Welcome</p>"))
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        1,
        f"Error: invalid_response: the server at {server.base_url} answered HTTP 200 with an HTML "
        "page instead of JSON: the base URL does not point at the Urban Conditions API (it ends in "
        "/api/v1). (HTTP 200)",
    )


def test_another_servers_json_404_exit_1(run_urban, raw_server):
    server = raw_server(
        http_answer("404 Not Found", "application/json", json.dumps({"detail": "Not Found"}).encode())
    )
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        1,
        f"Error: http_404: the server at {server.base_url} answered HTTP 404 Not Found with JSON of "
        "another shape, not the API's JSON error: check that the base URL points at the Urban "
        "Conditions API (it ends in /api/v1). (HTTP 404)",
    )


def test_redirect_is_reported_not_followed(run_urban, raw_server):
    def redirect(conn):
        read_request(conn)
        conn.sendall(
            b"HTTP/1.1 301 Moved Permanently\r\n"
            b"Location: https://urban.example.be/api/v1/disruptions\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )

    server = raw_server(redirect)
    assert_reported(
        run_both_modes(run_urban, server.base_url),
        1,
        f"Error: http_301: the server at {server.base_url} redirects (HTTP 301 Moved Permanently) "
        "to https://urban.example.be/api/v1/disruptions; the client does not follow redirects, so "
        "set the base URL to the final address (often https:// instead of http://). (HTTP 301)",
    )
