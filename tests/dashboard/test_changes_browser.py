"""A real headless Chromium: a Pro user sees the change events of a saved location on its page, makes the
calendar URL, copies it from the page (the feed answers it without a key or cookie) and revokes it (410).

Screenshot: ``artifacts/screenshots/dashboard-06-changes.png``.
"""

from __future__ import annotations

import pytest
import requests

from app import create_app
from app.store import accounts
from app.store.db import open_store
from app.store.saved_locations import add_location
from tests.portal.helpers import LiveServer, link_in
from tests.portal.test_portal_browser import browser, check_accessible, click_and_wait, shoot  # noqa: F401

from .alerting import POINT
from .changefeed import publish, shared_variant_dirs


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_pro_user_sees_the_events_and_copies_and_revokes_the_calendar_url(  # noqa: F811
    browser, config, tmp_path, snapshot_dir, engine, smtp_server, build_once
):
    from selenium.webdriver.common.by import By

    dirs = shared_variant_dirs(snapshot_dir, engine, build_once)
    app = create_app(config)
    with LiveServer(app) as server:
        base = server.url
        browser.get(f"{base}/portal/")
        browser.find_element(By.ID, "email").send_keys("ops@stad.gent")
        click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main button[type=submit]"))
        browser.get(link_in(smtp_server.wait_for(1))[0].replace("http://urban.test", base))
        click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
        conn = open_store(app)
        accounts.set_plan(conn, "ops@stad.gent", "pro")
        account = conn.execute("SELECT id FROM accounts WHERE email = ?", ("ops@stad.gent",)).fetchone()
        loc = add_location(conn, account["id"], name="Centrum", address="", lat=POINT[0], lng=POINT[1])
        conn.close()
        publish(app, dirs["before"])
        events = [e for e in publish(app, dirs["after"]) if e.location_id == loc["id"]]
        assert events

        browser.get(f"{base}/dashboard/map?location={loc['id']}")
        check_accessible(browser)
        rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=change]")
        assert [r.get_attribute("data-event-id") for r in rows] == [
            e.id for e in reversed(events)
        ]  # newest first
        assert all(e.id in browser.find_element(By.ID, "changes").text for e in events)
        assert any(f"work {dirs['work']}" in r.text for r in rows)
        browser.execute_script("document.getElementById('changes').scrollIntoView()")
        assert not shoot(browser, "dashboard-06-changes"), "the location page scrolls sideways on a phone"

        click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "[data-testid=calendar-create]"))
        field = browser.find_element(By.CSS_SELECTOR, "[data-testid=calendar-url]")
        url = field.get_attribute("value")  # what the user copies from the field
        assert url.startswith("http://urban.test/calendar/cal_") and url.endswith(".ics")
        feed = url.replace("http://urban.test", base)
        got = requests.get(feed, timeout=30)  # a calendar program: no key, no cookie
        assert got.status_code == 200 and got.headers["Content-Type"].startswith("text/calendar")
        assert f"UID:work-{dirs['work']}.{loc['id']}@urban.test" in got.text

        browser.get(f"{base}/dashboard/map?location={loc['id']}")
        assert url not in browser.page_source  # shown once
        click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "[data-testid=calendar-revoke]"))
        assert "revoked" in browser.find_element(By.TAG_NAME, "main").text
        assert requests.get(feed, timeout=30).status_code == 410
