"""A real headless Chromium: a new account signs up, becomes Pro, adds a location by clicking the map, sees its
works and reading (the API's numbers), subscribes to a change alert and downloads the report.

Screenshots (desktop and phone widths) go to ``artifacts/screenshots/dashboard-*.png``.
"""

from __future__ import annotations

import pytest
import requests

from app.dashboard.changealerts import DEFAULT_TYPES
from app.store import accounts
from tests.portal.helpers import link_in
from tests.portal.test_portal_browser import (  # noqa: F401
    browser,
    check_accessible,
    click_and_wait,
    shoot,
    visible_texts,
    waiting,
)


def wait_ready(driver, timeout=20):
    waiting(driver, timeout).until(
        lambda d: d.execute_script("var m = document.getElementById('map'); return m && m.dataset.ready;")
    )
    assert driver.execute_script("return document.getElementById('map').dataset.ready") == "1"


@pytest.mark.slow
def test_pro_account_walks_the_dashboard(browser, live_server, smtp_server, store):  # noqa: F811
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base = live_server.url
    browser.get(f"{base}/portal/")
    browser.find_element(By.ID, "email").send_keys("ops@stad.antwerpen.be")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main button[type=submit]"))
    browser.get(
        link_in(smtp_server.wait_for(1))[0].replace("http://urban.test", base)
    )  # PUBLIC_URL of the tests
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
    key = browser.find_element(By.CSS_SELECTOR, "[data-testid=api-key]").text.strip()
    accounts.set_plan(store, "ops@stad.antwerpen.be", "pro")  # the operator's upgrade (admin CLI path)

    browser.get(f"{base}/dashboard/")
    check_accessible(browser)
    wait_ready(browser)
    assert browser.find_element(By.CSS_SELECTOR, "[data-testid=plan]").text == "Pro"
    # keyboard: focus the map and press Enter = pick its centre
    the_map = browser.find_element(By.ID, "map")
    the_map.send_keys(Keys.ENTER)
    assert browser.find_element(By.ID, "lat").get_attribute("value").startswith("51.2")
    # mouse: click a point a little north-east of the centre
    ActionChains(browser).move_to_element_with_offset(the_map, 40, -30).click().perform()
    lat = float(browser.find_element(By.ID, "lat").get_attribute("value"))
    lng = float(browser.find_element(By.ID, "lng").get_attribute("value"))
    assert 51.2194 < lat < 51.24 and 4.4025 < lng < 4.43
    assert "Picked" in browser.find_element(By.ID, "map-status").text
    browser.find_element(By.ID, "name").send_keys("Kantoor Noord")
    browser.find_element(By.ID, "label").send_keys("kantoor")
    assert not shoot(browser, "dashboard-01-add-location"), "locations page scrolls sideways on a phone"
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]"))

    # the map page of the new location: the API's numbers
    check_accessible(browser)
    wait_ready(browser)
    [loc] = requests.get(
        f"{base}/api/v1/locations", headers={"Authorization": f"Bearer {key}"}, timeout=10
    ).json()["locations"]
    assert loc["name"] == "Kantoor Noord" and (loc["lat"], loc["lng"]) == (lat, lng)
    api = {
        name: requests.get(
            f"{base}/api/v1/{name}?locationId={loc['id']}",
            timeout=10,
            headers={"Authorization": f"Bearer {key}"},
        ).json()
        for name in ("disruptions", "air-quality")
    }
    rows = browser.find_elements(By.CSS_SELECTOR, "[data-testid=work]")
    assert len(rows) == len(api["disruptions"]["construction"]) > 0
    assert visible_texts(browser, "[data-testid=work] td[data-label=Status]") == [
        w["status"] for w in api["disruptions"]["construction"]
    ]
    reading = api["air-quality"]["reading"]
    assert (
        browser.find_element(By.CSS_SELECTOR, "[data-testid=no2-value]").text == f"{reading['value']} µg/m³"
    )
    drawn = int(browser.execute_script("return document.getElementById('map').dataset.features"))
    assert drawn >= 1 + len(rows) + 1  # the point, its works, the station (+ detour stops)
    assert not shoot(browser, "dashboard-02-map"), "map page scrolls sideways on a phone"

    # subscribe to a change alert with the keyboard (labelled checkbox, space to tick): the defaults and one
    box = browser.find_element(By.ID, "type-work-description_changed")
    box.send_keys(Keys.SPACE)
    assert box.is_selected()
    click_and_wait(
        browser, browser.find_element(By.CSS_SELECTOR, "[data-testid=change-alert-form] button[type=submit]")
    )
    assert "Change alert saved" in browser.find_element(By.CSS_SELECTOR, "[role=status]").text
    summary = browser.find_element(By.CSS_SELECTOR, "[data-testid=change-alert]").text
    assert f"Sending {len(DEFAULT_TYPES) + 1} kinds of change" in summary
    shoot(browser, "dashboard-03-alerts")

    # download the report with the browser's session
    href = browser.find_element(By.CSS_SELECTOR, "[data-testid=report-link]").get_attribute("href")
    cookies = {c["name"]: c["value"] for c in browser.get_cookies()}
    pdf = requests.get(href, cookies=cookies, timeout=60)
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    assert pdf.headers["Content-Disposition"].startswith("attachment;")
