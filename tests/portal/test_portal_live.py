"""Over real HTTP (threaded server on 127.0.0.1): parallel confirmations, and secrets kept out of logs and DB."""

from __future__ import annotations

import glob
import logging
import threading

import requests

from app.store import accounts, tokens

from .helpers import KEY, csrf_from, link_in


def test_ten_parallel_confirmations_create_exactly_one_key(live_server, smtp_server, store):
    resp = requests.post(f"{live_server.url}/api/v1/signup", json={"email": "race@stad.be"}, timeout=10)
    assert resp.status_code == 202
    url, token = link_in(smtp_server.wait_for(1))
    browsers = []
    for _ in range(10):  # ten browsers (own cookies and CSRF fields) that all opened the link
        s = requests.Session()
        page = s.get(url, timeout=10)
        assert page.status_code == 200
        browsers.append((s, csrf_from(page.text)))
    barrier = threading.Barrier(10)
    results = [None] * 10

    def press(i):
        s, csrf = browsers[i]
        barrier.wait()
        results[i] = s.post(
            f"{live_server.url}/portal/link",
            data={"token": token, "csrf_token": csrf},
            timeout=30,
            allow_redirects=False,
        )

    threads = [threading.Thread(target=press, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200] + [400] * 9
    shown = [KEY.search(r.text) for r in results]
    assert sum(m is not None for m in shown) == 1
    account = accounts.find_account(store, "race@stad.be")
    keys = accounts.list_keys(store, account["id"])
    assert len(keys) == 1
    assert store.execute("SELECT COUNT(*) FROM accounts").fetchone()[0] == 1


def test_key_and_token_never_in_logs_or_database(app, live_server, smtp_server, caplog):
    caplog.set_level(logging.DEBUG)
    base = live_server.url
    s = requests.Session()
    assert s.post(f"{base}/api/v1/signup", json={"email": "geheim@stad.be"}, timeout=10).status_code == 202
    url, token = link_in(smtp_server.wait_for(1))
    page = s.get(url, timeout=10)
    created = s.post(
        f"{base}/portal/link", data={"token": token, "csrf_token": csrf_from(page.text)}, timeout=10
    )
    key = KEY.search(created.text).group(0)
    assert (
        s.get(f"{base}/api/v1/locations", headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code
        == 200
    )
    account_page = s.get(f"{base}/portal/account", timeout=10)
    assert account_page.status_code == 200
    csrf = csrf_from(account_page.text)
    second = KEY.search(s.post(f"{base}/portal/keys", data={"csrf_token": csrf}, timeout=10).text).group(0)

    # Everything the service logged (not the test's own HTTP client, nor the test SMTP server's dump).
    ours = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("urllib3", "mail.log")))
    assert "/portal/link/[redacted]" in ours  # the request line was logged, without the token
    assert "mail sent via 127.0.0.1" in ours
    for secret in (token, key, second):
        assert secret not in ours
    db_files = glob.glob(app.config["DATABASE"] + "*")
    raw = b"".join(open(p, "rb").read() for p in db_files)
    for secret in (token, key, second):
        assert secret.encode() not in raw
    assert tokens.digest(token).encode() in raw  # what is stored instead
