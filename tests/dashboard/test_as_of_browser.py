"""A real headless Chromium: an Enterprise account picks a past moment on the map page, sees the API's ``asOf``
numbers under an "as of" banner in Brussels time, goes back to now, and gets a friendly message for a
moment still to come. Screenshots go to ``artifacts/screenshots/dashboard-as-of-*.png``."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests

from app.history.asof import iso
from app.store import accounts
from tests.dashboard.test_as_of_control import POINT, config, demo_history  # noqa: F401
from tests.dashboard.test_dashboard_browser import wait_ready
from tests.portal.helpers import link_in
from tests.portal.test_portal_browser import (  # noqa: F401
    browser,
    check_accessible,
    click_and_wait,
    shoot,
    visible_texts,
)


@pytest.mark.slow
def test_enterprise_account_looks_at_the_map_as_of_a_past_moment(  # noqa: F811
    browser, live_server, smtp_server, store, demo_history
):
    from selenium.webdriver.common.by import By

    base = live_server.url
    browser.get(f"{base}/portal/")
    browser.find_element(By.ID, "email").send_keys("archief@stad.antwerpen.be")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main button[type=submit]"))
    browser.get(link_in(smtp_server.wait_for(1))[0].replace("http://urban.test", base))
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
    key = browser.find_element(By.CSS_SELECTOR, "[data-testid=api-key]").text.strip()
    accounts.set_plan(store, "archief@stad.antwerpen.be", "enterprise")

    browser.get(f"{base}/dashboard/map?lat={POINT[0]}&lng={POINT[1]}")
    wait_ready(browser)
    live_rows = visible_texts(browser, "[data-testid=work]")
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid=as-of-banner]")

    # pick a moment: two hours after the second recorded snapshot, in Brussels time (CET: UTC+1)
    _url, publishes = demo_history
    instant = publishes[1].as_of + timedelta(hours=2)
    local = (instant + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    field = browser.find_element(By.ID, "as-of-at")
    browser.execute_script("arguments[0].value = arguments[1];", field, local)
    click_and_wait(
        browser, browser.find_element(By.CSS_SELECTOR, "[data-testid=as-of-form] button[type=submit]")
    )
    check_accessible(browser)
    wait_ready(browser)
    banner = browser.find_element(By.CSS_SELECTOR, "[data-testid=as-of-banner]").text
    clock = (instant + timedelta(hours=1)).strftime("%H:%M")
    assert f"As of {instant.day} {instant:%b %Y} {clock} CET" in banner  # i18n's time for people
    api = {
        name: requests.get(
            f"{base}/api/v1/{name}?lat={POINT[0]}&lng={POINT[1]}&asOf={iso(instant)}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        ).json()
        for name in ("disruptions", "air-quality")
    }
    rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=work]")
    assert visible_texts(browser, "[data-testid=work] td[data-label=Status]") == [
        w["status"] for w in api["disruptions"]["construction"]
    ]
    assert visible_texts(browser, "[data-testid=work]") != live_rows  # the past, not today's answer
    reading = api["air-quality"]["reading"]
    assert (
        browser.find_element(By.CSS_SELECTOR, "[data-testid=no2-value]").text == f"{reading['value']} µg/m³"
    )
    drawn = int(browser.execute_script("return document.getElementById('map').dataset.features"))
    assert drawn >= 1 + len(rows)  # the point and the works of then
    assert browser.find_element(By.ID, "as-of-at").get_attribute("value") == local
    assert not shoot(browser, "dashboard-as-of-01-past"), "the as-of page scrolls sideways on a phone"

    # back to now
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "[data-testid=as-of-now]"))
    wait_ready(browser)
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid=as-of-banner]")
    assert visible_texts(browser, "[data-testid=work]") == live_rows

    # a moment still to come: a friendly message, no figures, the way back
    browser.get(f"{base}/dashboard/map?lat={POINT[0]}&lng={POINT[1]}&asOf=2026-12-24T18:00:00%2B01:00")
    message = browser.find_element(By.CSS_SELECTOR, "[data-testid=as-of-error]").text
    assert "That moment is still to come" in message and "as_of_in_future" in message
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-testid=work]")
    assert browser.find_element(By.CSS_SELECTOR, "[data-testid=as-of-now]").is_displayed()
    assert not shoot(browser, "dashboard-as-of-02-refused"), "the refusal scrolls sideways on a phone"
