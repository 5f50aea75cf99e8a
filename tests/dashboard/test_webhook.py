"""Where an alert webhook may go: only globally routable addresses (every IANA special-purpose range, v4 and
v6, and the forms that embed an IPv4 address), checked on the one look-up whose addresses are connected to
(a rebinding DNS answer cannot reach loopback), with TLS verified against the host name; bad URLs are
refused when saved, with the reason; and what the POST looks like on the wire."""

from __future__ import annotations

import ipaddress
import shutil
import socket

import pytest

from app.store import accounts
from app import create_app
from app.dashboard import delivery, run, webhook
from app.store.db import open_store
from bench.services import self_signed_certificate, tls_server_context

from . import receivers
from .alerting import Clock, events_of, recorded_history, subscriber
from .conftest import CSRF, signed_in
from .receivers import Receiver, header

PUBLIC_V4 = "93.184.215.14"

# -- the address table, written out from the IANA registries (not from the code under test) ----------------

#: IPv4 special-purpose registry, plus multicast and 240/4 (reserved, with the limited broadcast)
REFUSED_V4 = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.0.0/29",
    "192.0.0.8/32",
    "192.0.0.9/32",
    "192.0.0.10/32",
    "192.0.0.170/32",
    "192.0.0.171/32",
    "192.0.2.0/24",
    "192.31.196.0/24",
    "192.52.193.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "192.175.48.0/24",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
]
#: IPv6 special-purpose registry, and what lies outside global unicast 2000::/3
REFUSED_V6 = [
    "::1/128",
    "::/128",
    "::/96",  # IPv4-compatible (deprecated)
    "64:ff9b:1::/48",
    "100::/64",
    "100:0:0:1::/64",
    "2001::/23",
    "2001::/32",  # Teredo
    "2001:1::1/128",
    "2001:1::2/128",
    "2001:1::3/128",
    "2001:2::/48",
    "2001:3::/32",
    "2001:4:112::/48",
    "2001:10::/28",
    "2001:20::/28",
    "2001:30::/28",
    "2001:db8::/32",
    "2002::/16",  # 6to4
    "2620:4f:8000::/48",
    "3fff::/20",
    "5f00::/16",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
    "4000::/2",
    "8000::/1",
    "1000::/4",
]
NAMED = {
    # cloud metadata services, and the forms that embed an IPv4 address: judged by that address
    "169.254.169.254": False,
    "100.100.100.200": False,
    "fd00:ec2::254": False,
    "::ffff:127.0.0.1": False,
    "::ffff:10.1.2.3": False,
    "::ffff:169.254.169.254": False,
    "::ffff:8.8.8.8": True,
    "::127.0.0.1": False,
    "::8.8.8.8": False,
    "64:ff9b::7f00:1": False,
    "64:ff9b::a9fe:a9fe": False,
    "64:ff9b::6440:1": False,
    "64:ff9b::808:808": True,
    "2002:7f00:1::1": False,
    "2002:808:808::1": False,
    "2001:0:4136:e378:8000:63bf:3fff:fdd2": False,
    # public neighbours of the refused blocks
    "1.1.1.1": True,
    "8.8.8.8": True,
    "9.255.255.255": True,
    "11.0.0.0": True,
    "100.63.255.255": True,
    "100.128.0.0": True,
    "126.255.255.255": True,
    "128.0.0.0": True,
    "169.253.255.255": True,
    "169.255.0.0": True,
    "172.15.255.255": True,
    "172.32.0.0": True,
    "192.0.1.0": True,
    "192.0.3.0": True,
    "192.88.98.255": True,
    "192.167.255.255": True,
    "192.169.0.0": True,
    "198.17.255.255": True,
    "198.20.0.0": True,
    "223.255.255.255": True,
    PUBLIC_V4: True,
    "2001:200::1": True,
    "2001:db7:ffff::1": True,
    "2003::1": True,
    "2606:4700:4700::1111": True,
    "2a00:1450:4001:82a::200e": True,
    "3fff:1000::1": True,
}


def address_table() -> dict[str, bool]:
    """Every refused block's first, middle and last address (False), and the named addresses."""
    table = {}
    for block in REFUSED_V4 + REFUSED_V6:
        net = ipaddress.ip_network(block)
        for ip in (net.network_address, net.network_address + net.num_addresses // 2, net.broadcast_address):
            table[str(ip)] = False
    table.update(NAMED)
    return table


def test_only_globally_routable_addresses_are_connected_to(monkeypatch):
    """For each address of the table, a webhook host resolving to it (the system resolver's getaddrinfo)
    is connected to exactly when it is globally routable; nothing else ever sees a connect."""
    table = address_table()
    answer, connects = {}, []
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "target.example":
            ip = ipaddress.ip_address(answer["ip"])
            family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
            sockaddr = (str(ip), port, 0, 0) if ip.version == 6 else (str(ip), port)
            return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]
        return real_getaddrinfo(host, port, *args, **kwargs)

    def connect(sock, address):
        connects.append(address[0])
        raise ConnectionRefusedError("not in this test")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    config = {"ALERT_WEBHOOK_TIMEOUT": 2.0, "ALERT_WEBHOOK_ALLOW_PRIVATE": False}
    wrong = []
    for address, allowed in table.items():
        answer["ip"], connects[:] = address, []
        with pytest.raises(OSError):
            delivery.post_webhook("http://target.example:8080/hook", "whsec_x", b"{}", config)
        ip = ipaddress.ip_address(address)
        expected = [str(getattr(ip, "ipv4_mapped", None) or ip)] if allowed else []
        if [c.split("%")[0] for c in connects] != expected:
            wrong.append((address, allowed, connects[:]))
    assert wrong == [], f"{len(wrong)} of {len(table)} addresses judged wrongly: {wrong}"


# -- refused when saved -------------------------------------------------------------------------------------


class TableResolver:
    """``WEBHOOK_RESOLVER``: ``*.example`` names from a table, everything else from the system resolver
    (numeric forms like ``2130706433`` and ``localhost`` need no network)."""

    TABLE = {
        "hooks.example": [PUBLIC_V4],
        "metadata.example": ["169.254.169.254"],
        "alibaba-metadata.example": ["100.100.100.200"],
        "cgnat.example": ["100.64.0.1"],
        "ietf.example": ["192.0.0.9"],
        "sixtofour.example": ["2002:7f00:1::1"],
        "nat64.example": ["64:ff9b::7f00:1"],
        "mapped.example": ["::ffff:127.0.0.1"],
        "mixed.example": [PUBLIC_V4, "10.0.0.7"],
        "mixed6.example": ["2606:4700:4700::1111", "fd00::1"],
    }

    def __init__(self):
        self.calls = []

    def __call__(self, host, port):
        self.calls.append(host)
        if host.endswith(".example"):
            if host not in self.TABLE:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return self.TABLE[host]
        return webhook.system_resolver(host, port)


REFUSED_URLS = {
    "http://127.0.0.1/hook": "non-public address 127.0.0.1: loopback",
    "http://127.0.0.2:8080/hook": "loopback",
    "http://[::1]/hook": "loopback",
    "http://localhost/hook": "loopback",
    "http://2130706433/hook": "loopback",
    "http://0x7f.0.0.1/hook": "loopback",
    "http://127.1/hook": "loopback",
    "http://[::ffff:127.0.0.1]/hook": "loopback",
    "http://10.1.2.3/hook": "private",
    "http://192.168.1.1/hook": "private",
    "https://metadata.example/latest": "link-local",
    "https://alibaba-metadata.example/latest": "shared address space",
    "https://cgnat.example/in": "shared address space",
    "https://ietf.example/in": "IETF protocol assignments",
    "https://sixtofour.example/in": "6to4",
    "https://nat64.example/in": "NAT64 of loopback",
    "https://mapped.example/in": "loopback",
    "https://mixed.example/in": "10.0.0.7: private",
    "https://mixed6.example/in": "unique local",
    "https://nowhere.example/in": "does not resolve",
    "https://hooks..example/in": "not a valid host name",
    "https://" + "a" * 64 + ".example/in": "not a valid host name",
    "https://hooks\u2028x.example/in": "not a valid host name",
    "https://hooks.example:0/in": "invalid port",
    "https://hooks.example:99999/in": "invalid port",
}


def saving_client(config, **overrides):
    """(app, signed-in Pro client, store, location id) on an app with ``overrides``."""
    app = create_app({**config, "WEBHOOK_RESOLVER": TableResolver(), **overrides})
    store = open_store(app)
    account, _key = accounts.create_account(store, "saver@stad.be", "pro")
    client = signed_in(app, account["id"])
    client.post(
        "/dashboard/locations", data={"csrf_token": CSRF, "name": "X", "lat": "51.2194", "lng": "4.4025"}
    )
    return app, client, store, store.execute("SELECT id FROM locations").fetchone()["id"]


def test_webhook_urls_that_cannot_be_reached_are_refused_when_saved(config):
    app, client, store, loc = saving_client(config, ALERT_WEBHOOK_ALLOW_PRIVATE=False)
    for url, reason in REFUSED_URLS.items():
        page = client.post(
            f"/dashboard/locations/{loc}/alerts",
            data={"csrf_token": CSRF, "kind": "no2_eu", "webhook_url": url},
            follow_redirects=True,
        ).get_data(as_text=True)
        assert "Change alert not changed: the webhook URL is refused: " in page and reason in page, url
    assert store.execute("SELECT COUNT(*) FROM change_subscriptions").fetchone()[0] == 0

    resp = client.post(
        f"/dashboard/locations/{loc}/alerts",
        data={"csrf_token": CSRF, "kind": "no2_eu", "webhook_url": "https://hooks.example/in?x=1"},
    )
    assert resp.status_code == 200 and 'data-testid="webhook-secret"' in resp.get_data(as_text=True)
    [sub] = store.execute("SELECT webhook_url FROM change_subscriptions").fetchall()
    assert sub["webhook_url"] == "https://hooks.example/in?x=1"


def test_allow_private_still_allows_loopback(config):
    _app, client, store, loc = saving_client(config, ALERT_WEBHOOK_ALLOW_PRIVATE=True)
    for url in ("http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://[::1]:9/hook"):
        resp = client.post(
            f"/dashboard/locations/{loc}/alerts",
            data={"csrf_token": CSRF, "kind": "no2_eu", "webhook_url": url},
        )
        assert resp.status_code == 200 and 'data-testid="webhook-secret"' in resp.get_data(as_text=True)
        assert store.execute("SELECT webhook_url FROM change_subscriptions").fetchone()[0] == url
    # a name that does not resolve, or is no host name, is refused all the same
    for url in ("http://nowhere.example/hook", "http://hooks..example/hook"):
        page = client.post(
            f"/dashboard/locations/{loc}/alerts",
            data={"csrf_token": CSRF, "kind": "no2_eu", "webhook_url": url},
            follow_redirects=True,
        ).get_data(as_text=True)
        assert "the webhook URL is refused" in page


# -- DNS rebinding ------------------------------------------------------------------------------------------


class Rebinding:
    """Answers ``rebind.example`` with a public address, then 127.0.0.1, then public again …"""

    def __init__(self):
        self.calls = 0

    def answer(self) -> str:
        self.calls += 1
        return PUBLIC_V4 if self.calls % 2 else "127.0.0.1"


@pytest.fixture(scope="module")
def recorded(snapshot_dir, engine, build_once) -> str:
    return recorded_history(snapshot_dir, engine, build_once)


@pytest.mark.parametrize("via", ["system resolver", "injected resolver"])
def test_a_rebinding_dns_answer_never_reaches_loopback(
    via, config, recorded, tmp_path, monkeypatch, smtp_server
):
    """The name is checked when saved (public), then looked up again for each attempt: the loopback answer
    is refused, the public one is connected to as checked; the receiver on 127.0.0.1 never sees a byte."""
    shutil.copy(recorded, tmp_path / "rebinding.sqlite")
    rebinding, connects = Rebinding(), []
    target = Receiver(receivers.ok)
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "rebind.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (rebinding.answer(), port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    def connect(sock, address):
        connects.append(tuple(address[:2]))
        if address[0] == PUBLIC_V4:
            raise ConnectionRefusedError("no internet here")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    overrides = {}
    if via == "system resolver":
        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    else:
        overrides["WEBHOOK_RESOLVER"] = lambda host, port: [rebinding.answer()]
    clock = Clock()
    app = create_app(
        {
            **config,
            "ALERT_WEBHOOK_ALLOW_PRIVATE": False,
            "ALERT_WEBHOOK_TIMEOUT": 2.0,
            "WALL_CLOCK": clock,
            "HISTORY_URL": str(tmp_path / "rebinding.sqlite"),
            **overrides,
        }
    )
    try:
        url = f"http://rebind.example:{target.port}/hook"
        account, _loc = subscriber(app, "rebind@stad.be", webhook=url)
        calls_when_saved = rebinding.calls  # 1st answer: public, the check when saving passes
        run.run_alerts(app)  # 2nd answer: 127.0.0.1, refused before any connect
        clock.advance(delivery.RETRY_DELAYS[0])
        run.deliver_due(app)  # 3rd answer: public, connected to as checked (and refused: no internet)
        clock.advance(delivery.RETRY_DELAYS[1])
        run.deliver_due(app)  # 4th: 127.0.0.1 again
    finally:
        target.close()
    assert target.connections == 0 and target.requests == []
    assert ("127.0.0.1", target.port) not in connects
    assert calls_when_saved == 1 and rebinding.calls == 4  # one look-up per attempt, used as checked
    assert connects.count((PUBLIC_V4, target.port)) == 1
    [event] = [r for r in events_of(app, account["id"]) if r["channel"] == "webhook"]
    assert event["attempts"] == 3 and event["sent_at"] is None
    assert "non-public address 127.0.0.1: loopback" in event["last_error"]


# -- TLS to the pinned address ------------------------------------------------------------------------------


def test_tls_to_the_checked_address_verifies_the_host_name_and_sends_sni(tmp_path, monkeypatch):
    ca, key = self_signed_certificate(tmp_path, "hooks.example", ips=())
    server_context = tls_server_context(ca, key)
    names = []
    server_context.sni_callback = lambda sslobj, name, ctx: names.append(name)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # our test certificate is the only trusted one
    rcv = Receiver(receivers.ok, tls=server_context)
    calls = []

    def resolver(host, port):
        calls.append(host)
        return ["127.0.0.1"]  # both names point at the receiver

    config = {"ALERT_WEBHOOK_TIMEOUT": 5.0, "ALERT_WEBHOOK_ALLOW_PRIVATE": True, "WEBHOOK_RESOLVER": resolver}
    try:
        delivery.post_webhook(rcv.url("hooks.example"), "whsec_x", b'{"a":1}', config, now=1700000000)
        with pytest.raises(webhook.WebhookError, match="CERTIFICATE_VERIFY_FAILED"):
            delivery.post_webhook(rcv.url("other.example"), "whsec_x", b"{}", config)
    finally:
        rcv.close()
    assert calls == ["hooks.example", "other.example"]  # one look-up per POST
    assert names == ["hooks.example", "other.example"]  # SNI: the name, though we connect to the address
    [(head, body)] = rcv.requests  # the certificate of hooks.example is refused for other.example
    assert header(head, "Host") == f"hooks.example:{rcv.port}" and body == b'{"a":1}'


# -- the request on the wire --------------------------------------------------------------------------------


def test_the_post_on_the_wire():
    """Signed, asking for no compression, closing the connection, with a percent-encoded target; an
    interim 1xx answer is skipped for the final one."""

    def interim_then_ok(rcv, conn):
        rcv.send(conn, b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
        rcv.send(conn, b"HTTP/1.1 202 Accepted\r\n\r\n")

    rcv = Receiver(interim_then_ok)
    config = {"ALERT_WEBHOOK_TIMEOUT": 5.0, "ALERT_WEBHOOK_ALLOW_PRIVATE": True}
    try:
        delivery.post_webhook(
            rcv.url(path="/hook/é?x=ü&y=1 2"), "whsec_x", b'{"a":1}', config, now=1700000000
        )
    finally:
        rcv.close()
    [(head, body)] = rcv.requests
    assert head[0] == "POST /hook/%C3%A9?x=%C3%BC&y=1%202 HTTP/1.1"
    assert body == b'{"a":1}' and header(head, "Content-Length") == "7"
    assert header(head, "Host") == f"127.0.0.1:{rcv.port}"
    assert header(head, "Accept-Encoding") == "identity" and header(head, "Connection") == "close"
    assert header(head, "X-Urban-Timestamp") == "1700000000"
    assert header(head, "X-Urban-Signature") == delivery.sign("whsec_x", 1700000000, b'{"a":1}')
    assert header(head, "Content-Type") == "application/json"
