"""The map page in a real headless Chromium (issue 30): details of a work on click, tap or Enter without
leaving the location, table rows and dots linked both ways, Escape closes; a complete legend, a scale and
names on the base map; a phone-size map; the language switch and the browser's language.

Screenshots go to ``artifacts/screenshots/dashboard-0[6-8]-*.png`` (docs/img copies them).
"""

from __future__ import annotations

import pytest

from app.store.saved_locations import add_location

from tests.dashboard.test_dashboard_browser import wait_ready
from tests.dashboard.test_geojson_browser import sign_in_browser
from tests.portal.test_portal_browser import (  # noqa: F401
    check_accessible,
    module_chromium,
    shared_browser,
    visible_texts,
    waiting,
)

#: every kind of thing the map page draws, as the legend names it (legend.html's data-legend)
LEGEND = {
    "point",
    "circle",
    "work-running",
    "work-planned",
    "work-severe",
    "stop-high",
    "stop-medium",
    "stop-low",
    "station",
    "lez",
    "river",
    "boundary",
    "municipality",
}
CENTRUM = (51.2194, 4.4025)  # works running and planned, detour stops, the LEZ and the Scheldt in view


@pytest.fixture
def located(app, user, store, live_server, shared_browser):  # noqa: F811
    """(browser signed in as a Pro account, the map page's URL of its saved location, the location); the
    module's one Chromium, emptied after each test."""
    browser = shared_browser
    account, _key, client = user("pro")
    loc = add_location(store, account["id"], name="Centrum", address="", lat=CENTRUM[0], lng=CENTRUM[1])
    sign_in_browser(browser, app, client, live_server.url)
    return browser, f"{live_server.url}/dashboard/map?location={loc['id']}", loc


def shoot_map(driver, name):
    """Screenshots at desktop and phone widths with the map at the top of the view (docs/img copies them)."""
    from tests.portal.test_portal_browser import SHOTS

    SHOTS.mkdir(parents=True, exist_ok=True)
    selected = driver.execute_script(
        "var d = document.getElementById('details'); return d && d.dataset.feature;"
    )
    for suffix, (width, height) in (("", (1280, 900)), ("-phone", (390, 844))):
        driver.set_window_size(width, height)
        if suffix:  # as a phone opens the page: the map fitted at its own size
            driver.refresh()
            wait_ready(driver)
            if selected:
                driver.find_element("css selector", f"#map .mk[data-feature='{selected}']").click()
        driver.execute_script(
            "document.querySelector('h1').scrollIntoView(); window.scrollBy(0, document.getElementById('map').getBoundingClientRect().top - 120);"
        )
        driver.save_screenshot(str(SHOTS / f"{name}{suffix}.png"))
    driver.set_window_size(1280, 900)


def _js(driver, script, *args):
    return driver.execute_script(script, *args)


def details_text(driver):
    return _js(driver, "return document.getElementById('details-body').textContent")


def selected_rows(driver):
    return _js(
        driver,
        "return Array.from(document.querySelectorAll('tr.selected')).map(function (r) { return r.dataset.feature; })",
    )


def popup_text(driver):
    """The text of the open popup, once the one it replaced has faded out (Leaflet keeps it 200 ms)."""
    waiting(driver, 5).until(lambda d: len(d.find_elements("css selector", ".leaflet-popup")) == 1)
    return driver.execute_script("return document.querySelector('.leaflet-popup-content').textContent")


def selected_markers(driver):
    return _js(driver, "return document.querySelectorAll('#map .mk.selected').length")


@pytest.mark.slow
def test_click_a_work_shows_its_details_and_keeps_the_location(located):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver, url, loc = located
    driver.get(url)
    wait_ready(driver)
    check_accessible(driver)
    rows = driver.find_elements(By.CSS_SELECTOR, "[data-testid=work]")
    assert len(rows) >= 2
    # a dot: click it (mouse or tap) → its details in the panel and a popup; the row is highlighted
    dot = driver.find_elements(By.CSS_SELECTOR, "#map .mk.work")[0]
    dot.click()
    key = _js(driver, "return document.getElementById('details').dataset.feature")
    assert key and key.startswith("work:")
    work_id = key.split(":", 1)[1]
    assert f"({work_id})" in details_text(driver)
    assert selected_rows(driver) == [key] and selected_markers(driver) == 1
    assert driver.find_elements(By.CSS_SELECTOR, ".leaflet-popup")
    # nothing navigated: the same page, the same saved location
    assert driver.current_url == url
    assert driver.find_element(By.TAG_NAME, "h1").text == loc["name"]
    shoot_map(driver, "dashboard-06-details")  # reloads the page at phone size and opens the same work again
    rows = driver.find_elements(By.CSS_SELECTOR, "[data-testid=work]")

    # a row: click it → its dot is highlighted and its popup opens (and the details follow)
    other = next(r for r in rows if r.get_attribute("data-feature") != key)
    other.click()
    other_key = other.get_attribute("data-feature")
    assert selected_rows(driver) == [other_key] and selected_markers(driver) == 1
    popup = popup_text(driver)
    assert f"({other_key.split(':', 1)[1]})" in popup
    # keyboard: Escape closes, Enter on a focused row opens, Enter on a focused dot opens
    driver.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert selected_rows(driver) == [] and not _js(
        driver,
        "return document.getElementById('map').urbanMap.hasLayer(document.getElementById('map').urbanMap._popup || L.layerGroup())",
    )
    assert details_text(driver) == ""
    rows[0].send_keys(Keys.ENTER)
    assert selected_rows(driver) == [rows[0].get_attribute("data-feature")]
    driver.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert _js(driver, "return document.activeElement.dataset.feature") == rows[0].get_attribute(
        "data-feature"
    )
    marker = driver.find_elements(By.CSS_SELECTOR, "#map .mk.work")[-1]
    assert marker.get_attribute("tabindex") == "0"
    marker.send_keys(Keys.ENTER)
    assert _js(driver, "return document.getElementById('details').dataset.feature").startswith("work:")
    # a detour row opens its unserved stops (all of them highlighted), a stop its detour row
    stop = driver.find_elements(By.CSS_SELECTOR, "#map .mk.stop")[0]
    detour_key = stop.get_attribute("data-feature")
    driver.find_element(By.CSS_SELECTOR, f"tr[data-feature='{detour_key}']").click()
    assert selected_rows(driver) == [detour_key]
    assert selected_markers(driver) == len(
        driver.find_elements(By.CSS_SELECTOR, f"#map .mk[data-feature='{detour_key}']")
    )
    driver.find_element(By.CSS_SELECTOR, "[data-show^='station:']").click()
    assert "NO2" in details_text(driver)
    # a click on the empty map offers that point (a link), it does not go there by itself
    the_map = driver.find_element(By.ID, "map")
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).move_to_element_with_offset(
        the_map, -the_map.size["width"] // 2 + 30, 0
    ).click().perform()
    link = driver.find_element(By.CSS_SELECTOR, "[data-testid=show-here]")
    assert "?lat=" in link.get_attribute("href") and driver.current_url == url


@pytest.mark.slow
def test_the_legend_is_complete_with_a_scale_and_names(located):
    from selenium.webdriver.common.by import By

    driver, url, _loc = located
    driver.get(url)
    wait_ready(driver)
    legend = {e.get_attribute("data-legend") for e in driver.find_elements(By.CSS_SELECTOR, "[data-legend]")}
    assert legend == LEGEND
    assert len(visible_texts(driver, "[data-legend]")) == len(LEGEND)
    assert all(visible_texts(driver, "[data-legend]")), visible_texts(driver, "[data-legend]")
    # every kind of marker drawn has its legend entry
    drawn = _js(
        driver,
        "return Array.from(document.querySelectorAll('#map .mk')).map(function (m) { return m.className; })",
    )
    for classes in drawn:
        c = set(classes.split())
        kind = (
            "point"
            if "point" in c
            else "station"
            if "station" in c
            else f"work-{'running' if 'running' in c else 'planned'}"
            if "work" in c
            else "stop-" + next(s for s in ("high", "medium", "low") if s in c)
        )
        assert kind in legend, classes
    assert {"point", "work", "station"} <= {cls for classes in drawn for cls in classes.split()}
    # a metric scale, names of municipalities and of the river on the base map
    scale = driver.find_element(By.CSS_SELECTOR, ".leaflet-control-scale-line").text
    assert scale.endswith(" m") or scale.endswith(" km"), scale
    names = visible_texts(driver, "#map .map-name.municipality")
    assert "Antwerpen" in names
    assert driver.find_elements(By.CSS_SELECTOR, "#map .map-name.river")
    # the demo's clock is said, times carry their zone
    banner = driver.find_element(By.CSS_SELECTOR, "[data-testid=demo-banner]").text
    assert "Demo data" in banner and "CET" in banner
    assert driver.find_element(By.CSS_SELECTOR, "[data-testid=best-window]").text.count("CET") == 1
    shoot_map(driver, "dashboard-02-map")


@pytest.mark.slow
def test_a_phone_size_map_with_tap_details(located):
    from selenium.webdriver.common.by import By

    driver, url, _loc = located
    driver.set_window_size(390, 844)
    try:
        driver.get(url)
        wait_ready(driver)
        box = _js(
            driver,
            "var r = document.getElementById('map').getBoundingClientRect(); return [r.width, r.height];",
        )
        assert 300 <= box[0] <= 390 and box[1] >= 300
        assert not _js(driver, "return document.documentElement.scrollWidth > window.innerWidth")
        legend_top = _js(
            driver, "return document.querySelector('[data-testid=legend]').getBoundingClientRect().top"
        )
        map_bottom = _js(driver, "return document.getElementById('map').getBoundingClientRect().bottom")
        assert legend_top >= map_bottom  # stacked under the map
        driver.find_elements(By.CSS_SELECTOR, "#map .mk.work")[0].click()  # a tap
        assert _js(driver, "return document.getElementById('details').dataset.feature").startswith("work:")
        assert driver.current_url == url
    finally:
        driver.set_window_size(1280, 900)


@pytest.mark.slow
def test_the_language_switch_is_remembered(located):
    from selenium.webdriver.common.by import By

    from tests.portal.test_portal_browser import click_and_wait

    driver, url, _loc = located
    driver.get(url)
    wait_ready(driver)
    assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"  # Chromium asks for en-US
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "[data-lang=fr]"))
    wait_ready(driver)
    assert driver.current_url == url  # back on the same page
    assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "fr"
    assert driver.find_element(By.ID, "legend-heading").text == "Légende"
    assert driver.find_element(By.ID, "works-heading").text.startswith("Chantiers dans un rayon de")
    assert (
        "Données de démonstration" in driver.find_element(By.CSS_SELECTOR, "[data-testid=demo-banner]").text
    )
    assert "lun. 16 nov." in driver.find_element(By.CSS_SELECTOR, "[data-testid=as-of]").text
    # generated texts follow (geo's French catalogue); upstream statuses stay as published (Dutch)
    assert driver.find_element(By.CSS_SELECTOR, "[data-testid=risk]").text.lower() in {
        "faible",
        "modéré",
        "élevé",
    }
    statuses = set(visible_texts(driver, "[data-testid=work] [data-col=status]"))
    assert statuses & {"In uitvoering", "Concreet gepland"}
    # the details of a work speak French too
    driver.find_elements(By.CSS_SELECTOR, "#map .mk.work")[0].click()
    assert "Chantier" in details_text(driver) and "Statut" in details_text(driver)
    shoot_map(driver, "dashboard-07-french")
    # remembered on the other pages
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "nav a[href='/dashboard/']"))
    assert driver.find_element(By.TAG_NAME, "h1").text == "Lieux enregistrés"
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "[data-lang=nl]"))
    assert driver.find_element(By.TAG_NAME, "h1").text == "Bewaarde locaties"


@pytest.mark.slow
def test_a_works_details_show_its_hindrance(located):
    """Row → details: the severe label and GIPOD's Dutch consequences as published; none reported without."""
    from selenium.webdriver.common.by import By

    from app.dashboard.i18n import hindrance_text

    driver, url, _loc = located
    driver.get(url)
    wait_ready(driver)
    cells = dict(
        zip(
            _js(
                driver,
                "return Array.from(document.querySelectorAll('[data-testid=work]')).map(function (r) { return r.dataset.feature; })",
            ),
            visible_texts(driver, "[data-testid=work] [data-col=hindrance]"),
            strict=True,
        )
    )
    severe = next(k for k, v in cells.items() if v.startswith("severe hindrance: "))
    none = next(k for k, v in cells.items() if v == "none reported")
    for key in (severe, none):
        driver.find_element(By.CSS_SELECTOR, f"[data-testid=work][data-feature='{key}']").click()
        assert selected_rows(driver) == [key]
        details = details_text(driver)
        assert f"Hindrance{cells[key]}" in details  # the <dt> label, then the same text as the table's cell
    assert "Geen doorgang" in cells[severe] or "rijstroken" in cells[severe]
    assert hindrance_text(None, "en") == cells[none]
