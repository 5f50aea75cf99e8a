"""A delivery round keeps its webhook connections (issue 27's speed, issue 31's hardening kept): a receiver that
keeps connections open sees one for the events sent in turn and at most one per sender in a round; a receiver
that closes after each answer, saying so or not, still gets every event exactly once; an answer whose rest
cannot be read within the caps (an oversized or endless body, a malformed chunked one, no framing, a trickle)
keeps its status and only loses its connection, without touching another receiver's; a dropped connection is
replaced by one to the same checked address, never by a new look-up (a rebinding answer cannot get in)."""

from __future__ import annotations

import json
import socket

import pytest

from app.dashboard import changedelivery, delivery, run, webhook
from bench.bench_delivery import publish, subscribed_app

from . import receivers
from .alerting import Resolver
from .receivers import Receiver, read_request

DEADLINE = 2.0
OK = b"HTTP/1.1 204 No Content\r\n\r\n"


class KeepAlive(Receiver):
    """A :class:`Receiver` that reads request after request on a connection while ``answer`` returns True."""

    def _serve(self, conn: socket.socket):
        try:
            while True:
                try:
                    head, body = read_request(conn)
                except ConnectionError:  # the client closed an idle connection
                    return
                self.requests.append((head, body))
                self.arrived.set()
                if not self.answer(self, conn):
                    return
        except OSError:
            self.hung_up.set()
        finally:
            conn.close()


def answers(data: bytes, *, keep: bool = True):
    def answer(rcv: Receiver, conn) -> bool:
        return rcv.send(conn, data) and keep

    return answer


@pytest.fixture
def receiving():
    made: list[Receiver] = []

    def make(answer, kind=KeepAlive):
        made.append(kind(answer))
        return made[-1]

    yield make
    for rcv in made:
        rcv.close()


def connections(**kwargs) -> webhook.Connections:
    return webhook.Connections(**{"timeout": DEADLINE, "allow_private": True, **kwargs})


def post(pool: webhook.Connections, url: str, n: int = 1) -> list[int]:
    return [pool.post(url, {"Content-Type": "application/json"}, b'{"n":%d}' % i) for i in range(n)]


# -- one round, many events ---------------------------------------------------------------------------------


@pytest.fixture
def round_of(tmp_path):
    """``round_of(url, n)``: ``n`` subscribed locations (one account per 100) posting to ``url``, one event
    each enqueued; delivery rounds until nothing is left. Returns the rounds' counts."""

    def deliver(url: str, n: int) -> list[dict]:
        app, ids = subscribed_app(tmp_path, n, url)
        publish(app, ids)
        assert run.enqueue_changes(app) == n
        rounds = []
        while True:
            counts, _next = run.deliver_due(app)
            if not any(counts.values()):
                return rounds
            rounds.append(counts)

    return deliver


def event_ids(rcv: Receiver) -> list[str]:
    return [json.loads(body)["id"] for _head, body in rcv.requests]


def test_events_sent_in_turn_share_one_connection(receiving, round_of, monkeypatch):
    monkeypatch.setattr(changedelivery, "SENDERS", 1)
    rcv = receiving(answers(OK))
    assert round_of(rcv.url(), 30) == [{"mail": 0, "webhook": 30, "failed": 0, "deferred": 0}]
    assert len(set(event_ids(rcv))) == len(rcv.requests) == 30
    assert rcv.connections == 1


def test_a_round_opens_at_most_one_connection_per_sender(receiving, round_of):
    rcv = receiving(answers(OK))
    assert round_of(rcv.url(), 120) == [{"mail": 0, "webhook": 120, "failed": 0, "deferred": 0}]
    assert len(set(event_ids(rcv))) == len(rcv.requests) == 120
    assert rcv.connections <= changedelivery.SENDERS


@pytest.mark.parametrize(
    "answer",
    [
        answers(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", keep=False),
        answers(OK, keep=False),  # closes without saying so
        answers(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", keep=False),
    ],
    ids=["says close", "closes silently", "HTTP/1.0"],
)
def test_a_receiver_closing_after_each_answer_gets_every_event_once(answer, receiving, round_of):
    rcv = receiving(answer)
    assert round_of(rcv.url(), 40) == [{"mail": 0, "webhook": 40, "failed": 0, "deferred": 0}]
    assert sorted(event_ids(rcv)) == sorted(set(event_ids(rcv))) and len(rcv.requests) == 40
    assert rcv.connections == 40


def test_a_kept_connection_closed_while_idle_is_replaced_without_losing_or_repeating(receiving, monkeypatch):
    """The race a poll before reuse cannot rule out: the receiver closes just as the next POST is sent on the
    connection. Nothing was answered, so the POST goes once more on a fresh connection."""
    monkeypatch.setattr(webhook, "_idle", lambda sock: True)  # reuse whatever was kept, closed or not
    rcv = receiving(answers(OK, keep=False))
    pool = connections()
    with pool:
        assert post(pool, rcv.url(), 10) == [204] * 10
    assert [json.loads(body)["n"] for _h, body in rcv.requests] == list(range(10))
    assert rcv.connections == pool.opened == 10


# -- answers whose rest cannot be read: the status stands, the connection goes ------------------------------

BIG = webhook.ANSWER_BODY_LIMIT + 1

KEPT = {
    "Content-Length body": b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nthanks",
    "chunked body with a trailer": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
    "interim answer first": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
}

DROPPED = {
    "Content-Length past the cap": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % BIG + b"a" * BIG,
    "chunked past the cap": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    + (b"400\r\n" + b"a" * 0x400 + b"\r\n") * 5
    + b"0\r\n\r\n",
    "one chunk past the cap": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % BIG,
    "malformed chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    "chunk without its CRLF": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX0\r\n\r\n",
    "both lengths": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
    "two Content-Lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "no framing": b"HTTP/1.1 200 OK\r\n\r\nbody up to the close",
    "gzip, other encodings": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "bytes after the answer": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n",
    "head past the cap": b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * webhook.ANSWER_HEAD_LIMIT + b"\r\n\r\n",
    "folded header": b"HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 0\r\n\r\n",
}


@pytest.mark.parametrize("case", list(KEPT))
def test_an_answer_read_whole_keeps_its_connection(case, receiving):
    rcv = receiving(answers(KEPT[case]))
    with connections() as pool:
        statuses = post(pool, rcv.url(), 4)
    assert statuses == [int(KEPT[case].rsplit(b"HTTP/1.1 ", 1)[1][:3])] * 4
    assert len(rcv.requests) == 4 and rcv.connections == 1


@pytest.mark.parametrize("case", list(DROPPED))
def test_an_answer_not_read_whole_keeps_its_status_and_loses_its_connection_alone(case, receiving):
    hostile = receiving(answers(DROPPED[case]))
    good = receiving(answers(OK))
    with connections() as pool:
        statuses = [post(pool, url)[0] for _ in range(3) for url in (hostile.url(), good.url())]
    assert statuses == [200, 204] * 3
    assert len(hostile.requests) == 3 and hostile.connections == 3  # a fresh connection for each
    assert len(good.requests) == 3 and good.connections == 1


@pytest.mark.timeout(60, func_only=True)
@pytest.mark.parametrize("answer", [receivers.slow_body, receivers.endless_body, receivers.slow_headers])
def test_a_trickling_or_endless_rest_is_cut_at_the_deadline_or_the_cap(answer, receiving):
    """The status line came: the POST is answered; the rest is read only within the deadline and the cap."""
    hostile = receiving(answer, kind=Receiver)
    good = receiving(answers(OK))
    with connections(timeout=0.5) as pool:
        assert post(pool, hostile.url()) == [200]
        assert post(pool, good.url(), 3) == [204] * 3
    assert hostile.hung_up.wait(30), "the receiver was still being read"
    assert good.connections == 1


def test_a_dropped_connection_goes_back_to_the_checked_address_without_a_new_look_up(receiving):
    """The first look-up of the round is the one connected to: a name that rebinds to another address later
    in the round is never connected to through it."""
    first = receiving(answers(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", keep=False))
    resolver = Resolver({"hook.example": ["127.0.0.1"]})
    url = f"http://hook.example:{first.port}/hook"
    with connections(resolver=resolver) as pool:
        post(pool, url)
        resolver.table["hook.example"] = ["127.0.0.2"]  # rebinding: nothing listens there
        statuses = post(pool, url, 4)
    assert statuses == [204] * 4 and resolver.calls == ["hook.example"]
    assert len(first.requests) == first.connections == 5
    assert all(("Host: hook.example:%d" % first.port) in head for head, _ in first.requests)


def test_a_refused_address_is_refused_on_every_post_of_the_round(receiving):
    rcv = receiving(answers(OK))
    resolver = Resolver({"hook.example": ["127.0.0.1"]})
    with connections(resolver=resolver, allow_private=False) as pool:
        for _ in range(2):
            with pytest.raises(webhook.Refused, match="loopback"):
                post(pool, f"http://hook.example:{rcv.port}/hook")
    assert not rcv.requests and rcv.connections == 0


def test_post_webhook_on_kept_connections_signs_and_keeps_the_connection(receiving):
    rcv = receiving(answers(OK))
    with connections() as pool:
        for ts in (1700000000, 1700000001):
            delivery.post_webhook(rcv.url(), "whsec_x", b'{"a":1}', {}, now=ts, connections=pool)
    assert rcv.connections == 1 and len(rcv.requests) == 2
    head, body = rcv.requests[1]
    assert receivers.header(head, "Connection") is None and receivers.header(head, "Content-Length") == "7"
    assert receivers.header(head, "X-Urban-Signature") == delivery.sign("whsec_x", 1700000001, body)


class SlowReader(KeepAlive):
    """A :class:`KeepAlive` receiver that lets each request wait a moment before reading it, so a large one
    fills the socket buffers and the sender must wait to write the rest."""

    def _serve(self, conn: socket.socket):
        import time

        time.sleep(0.2)
        super()._serve(conn)


def test_a_request_larger_than_the_socket_buffers_goes_out_whole_on_a_kept_connection(receiving, monkeypatch):
    waited = []
    wait = webhook._wait
    monkeypatch.setattr(
        webhook, "_wait", lambda sock, event, deadline: (waited.append(event), wait(sock, event, deadline))
    )
    rcv = receiving(answers(OK), kind=SlowReader)
    body = bytes(range(256)) * (4 * 4096)  # 4 MiB
    with connections() as pool:
        assert [pool.post(rcv.url(), {}, body) for _ in range(2)] == [204, 204]
    assert rcv.connections == 1 and [b == body for _head, b in rcv.requests] == [True, True]
    import select

    assert select.POLLOUT in waited  # the request did not fit at once: the sender waited to write the rest
