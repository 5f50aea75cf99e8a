"""A real headless Chromium goes from the front door `/` to the interactive docs, pastes a key into
Swagger UI's "Authorize", tries calls there, and gets what a direct HTTP call gets: the same status, the same
body and the same ETag (a hash of the exact bytes), as JSON and as GeoJSON."""

from __future__ import annotations

import json
import re

import pytest
import requests

from app.api.openapi import build, load_examples
from app.store import accounts
from app.store.db import open_store

from .helpers import LiveServer, build_app
from .test_portal_browser import browser, click_and_wait, shoot, waiting  # noqa: F401  (fixture and helpers)

pytestmark = pytest.mark.slow


@pytest.fixture
def served(portal_config, engine):
    app = build_app({**portal_config, "ENGINE": engine, "CLOCK": "snapshot"})
    conn = open_store(app)
    _row, key = accounts.create_account(conn, "docs@antwerpen.be", "pro")
    conn.close()
    with LiveServer(app) as server:
        yield server.url, key


def wait_for(driver, css, timeout=30):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    return waiting(driver, timeout).until(ec.visibility_of_element_located((By.CSS_SELECTOR, css)))


def block_of(operation_id):
    """The CSS selector of an operation's block: Swagger UI's id, ``operations-<tag>-<operationId>``."""
    for item in build()["paths"].values():
        for operation in item.values():
            if operation["operationId"] == operation_id:
                return f"#operations-{operation['tags'][0].replace(' ', '_')}-{operation_id}"
    raise KeyError(operation_id)


def shown_answer_example(driver, operation):
    """The text of an operation's documented responses once its first recorded example shows."""
    from selenium.webdriver.common.by import By

    block = block_of(operation)
    first = next(iter(load_examples()["operations"][operation].values()))["value"]
    expected = json.dumps(first, ensure_ascii=False, indent=2).splitlines()[1].strip()  # its first member
    driver.find_element(By.CSS_SELECTOR, f"{block} .opblock-summary-control").click()
    text = waiting(driver, 30).until(
        lambda d: (
            (t := d.find_element(By.CSS_SELECTOR, f"{block} .responses-wrapper").text) and expected in t and t
        )
    )
    driver.find_element(By.CSS_SELECTOR, f"{block} .opblock-summary-control").click()
    return text


def try_call(driver, operation, params, media_type=None):
    """Expand ``operation``, fill ``params``, pick the response media type, Execute; return the live
    response's (status, body text, headers text)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    block = block_of(operation)
    driver.find_element(By.CSS_SELECTOR, f"{block} .opblock-summary-control").click()
    button = wait_for(driver, f"{block} .try-out__btn")
    if button.text.strip() == "Try it out":  # the mode stays on when the operation is opened again
        button.click()
    # An operation opened again still shows its last answer until the new one replaces it (Execute does
    # not clear it): "Clear" it first, so the wait below can only end on this call's answer.
    for clear in driver.find_elements(By.CSS_SELECTOR, f"{block} .btn-clear"):
        clear.click()
    waiting(driver, 30).until(
        lambda d: not d.find_elements(By.CSS_SELECTOR, f"{block} .live-responses-table")
    )
    for name, value in params.items():
        field = wait_for(driver, f"{block} tr[data-param-name='{name}'] input")
        field.clear()
        field.send_keys(value)
    if media_type:
        Select(
            driver.find_element(By.CSS_SELECTOR, f"{block} .response-control-media-type select")
        ).select_by_value(media_type)
    driver.find_element(By.CSS_SELECTOR, f"{block} .execute").click()
    status = f"{block} .live-responses-table .response .response-col_status"
    waiting(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, status).text.strip())
    live = driver.find_element(
        By.CSS_SELECTOR, f"{block} .live-responses-table .response .response-col_description"
    )
    body = live.find_element(By.XPATH, ".//h5[text()='Response body']/following-sibling::div//pre").text
    headers = live.find_element(By.XPATH, ".//h5[text()='Response headers']/following-sibling::pre").text
    code = driver.find_element(By.CSS_SELECTOR, status).text.strip()
    driver.find_element(By.CSS_SELECTOR, f"{block} .opblock-summary-control").click()  # fold it again
    return int(code), body, headers


def test_front_door_leads_to_docs_where_a_call_answers_as_curl_does(browser, served):
    from selenium.webdriver.common.by import By

    base, key = served
    browser.get(f"{base}/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Urban Conditions Service"
    links = {a.text: a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "main a")}
    assert links["Developer portal"] == f"{base}/portal/"
    assert links["OpenAPI document"] == f"{base}/api/v1/openapi.json"
    assert not shoot(browser, "10-front-door"), "front door scrolls sideways on a phone"
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Interactive API documentation"))
    assert browser.current_url == f"{base}/api/v1/docs"

    wait_for(browser, ".swagger-ui .info .title")
    intro = {a.text: a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, ".info a")}
    assert intro["sign up for a free Developer key"] == f"{base}/portal/"
    for operation in ("briefing", "airQuality"):  # the demo's real answers, not a schema's placeholders
        shown = shown_answer_example(browser, operation)
        assert '"string"' not in shown and "2026-11-16" in shown, shown[:400]
    browser.find_element(By.CSS_SELECTOR, ".auth-wrapper .authorize").click()
    wait_for(browser, ".modal-ux input").send_keys(key)
    browser.find_element(By.CSS_SELECTOR, ".modal-ux .auth-btn-wrapper .authorize").click()
    browser.find_element(By.CSS_SELECTOR, ".modal-ux .btn-done").click()

    point = {"lat": "51.2194", "lng": "4.4025"}
    calls = [
        ("airQuality", "air-quality", point, "application/json"),
        ("disruptions", "disruptions", point, "application/geo+json"),
        ("briefing", "briefing", point, "application/json"),
        ("airQuality", "air-quality", {"lat": "48.8566", "lng": "2.3522"}, "application/json"),
    ]
    for operation, path, params, media_type in calls:
        status, body, headers = try_call(
            browser, operation, params, media_type if media_type != "application/json" else None
        )
        # the browser sends its own Accept-Language: curl with the language the answer came in
        language = re.search(r"content-language: (\w+)", headers)
        direct = requests.get(
            f"{base}/api/v1/{path}",
            params=params,
            timeout=30,
            headers={
                "Authorization": f"Bearer {key}",
                "Accept": media_type,
                **({"Accept-Language": language.group(1)} if language else {}),
            },
        )
        assert (language is not None) is (status == 200 and path != "disruptions")
        if language:
            assert direct.headers["Content-Language"] == language.group(1)
        assert status == direct.status_code
        assert json.loads(body) == direct.json()
        assert f"content-type: {direct.headers['Content-Type']}" in headers
        if status == 200:
            assert f"etag: {direct.headers['ETag']}" in headers  # same bytes as the direct call
    assert not shoot(browser, "11-docs-tried")
