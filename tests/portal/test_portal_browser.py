"""A real headless Chromium walks sign-up → mail → confirm → key → API call → revoke → 401.

Screenshots of every portal page go to ``artifacts/screenshots/`` (desktop and phone widths).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import requests

from .helpers import link_in

CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


#: seconds between a browser wait's checks: WebDriverWait's default (0.5 s) adds ~0.25 s to every wait
POLL = 0.1


def waiting(driver, timeout, **kwargs):
    """``WebDriverWait(driver, timeout, **kwargs)`` checking every :data:`POLL` seconds (same deadline)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=POLL, **kwargs)


def click_and_wait(driver, element, timeout=15):
    """Click a link/submit button and wait until the next page has replaced this one.

    The old document is marked with a window property; the new page has none once it has loaded. (Chromium
    may answer a query on the old node with a generic error instead of a stale-element one, so none is used.)
    """
    from selenium.common.exceptions import WebDriverException

    driver.execute_script("window.__beforeClick = true;")
    element.click()
    waiting(driver, timeout, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return window.__beforeClick === undefined && document.readyState === 'complete';"
        )
    )


@contextlib.contextmanager
def chromium():
    """A headless Chromium (selenium driver) with its own profile, quit and removed on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert os.path.exists(CHROMEDRIVER), (
        "browser tests need Debian chromium + chromium-driver (make browser, or apt-get install them)"
    )
    profile = tempfile.mkdtemp(prefix="portal-chrome-")
    options = webdriver.ChromeOptions()
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def browser(session_chromium):
    """The test process's one Chromium (``session_chromium``, tests/conftest.py), emptied after the test
    (:func:`empty_browser`): a clean browser without a new browser process per module."""
    yield session_chromium
    empty_browser(session_chromium)


@pytest.fixture(scope="module")
def module_chromium(session_chromium):
    """The Chromium the module's tests share (the test process's one); use it through :func:`shared_browser`."""
    return session_chromium


def empty_browser(driver):
    """Bring ``driver`` back to a new browser's state: one tab on about:blank at 1280x900, no cookies, no
    HTTP cache, nothing stored for the origin it was on (local/session storage, IndexedDB, cache storage)."""
    for handle in driver.window_handles[1:]:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])
    origin = driver.execute_script("return location.origin")
    driver.get("about:blank")
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    if origin and origin.startswith("http"):
        driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
    driver.set_window_size(1280, 900)


@pytest.fixture
def shared_browser(module_chromium):
    """The module's Chromium, emptied after each test (:func:`empty_browser`): for tests that need a clean
    browser, not a new browser process each (starting Chromium costs seconds)."""
    yield module_chromium
    empty_browser(module_chromium)


def shoot(driver, name):
    """Save a full-width desktop screenshot and a phone-width one (390 px) of the current page."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(1280, 900)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    driver.set_window_size(390, 844)
    driver.save_screenshot(str(SHOTS / f"{name}-phone.png"))
    overflow = driver.execute_script("return document.documentElement.scrollWidth > window.innerWidth")
    driver.set_window_size(1280, 900)
    return overflow


def visible_texts(driver, css):
    """The visible text of every element ``css`` selects that the page renders, in one round trip (what
    ``[e.text for e in driver.find_elements(...)]`` gives, without one driver call per element)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".filter(function (e) { return e.getClientRects().length; })"
        ".map(function (e) { return e.innerText.trim(); })",
        css,
    )


def check_accessible(driver):
    """Landmarks, a viewport meta, one h1, and a label for every visible input."""
    from selenium.webdriver.common.by import By

    assert driver.find_element(By.TAG_NAME, "main")
    assert driver.find_element(By.CSS_SELECTOR, "meta[name=viewport]")
    assert len(driver.find_elements(By.TAG_NAME, "h1")) == 1
    assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang")
    for field in driver.find_elements(By.CSS_SELECTOR, "input:not([type=hidden])"):
        assert driver.find_elements(By.CSS_SELECTOR, f"label[for='{field.get_attribute('id')}']")


@pytest.mark.slow
def test_browser_walks_signup_to_revocation(browser, live_server, smtp_server):
    from selenium.webdriver.common.by import By

    base = live_server.url
    browser.get(f"{base}/portal/")
    check_accessible(browser)
    assert not shoot(browser, "01-start"), "start page scrolls sideways on a phone"
    browser.find_element(By.ID, "email").send_keys("browser@stad.be")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main button[type=submit]"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Check your mail"
    shoot(browser, "02-sent")

    url, _token = link_in(smtp_server.wait_for(1))
    browser.get(url)
    check_accessible(browser)
    assert browser.find_element(By.TAG_NAME, "h1").text == "Confirm your sign-up"
    assert not shoot(browser, "03-confirm")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))

    key = browser.find_element(By.CSS_SELECTOR, "[data-testid=api-key]").text.strip()
    assert key.startswith("uc_live_")
    assert f"Bearer {key}" in browser.page_source
    assert not shoot(browser, "04-key-shown"), "key page scrolls sideways on a phone"
    api = requests.get(f"{base}/api/v1/locations", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert api.status_code == 200 and api.json() == {"locations": []}

    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Go to the API section"))
    check_accessible(browser)
    assert browser.find_element(By.CSS_SELECTOR, "[data-testid=plan]").text == "Developer"
    assert "1 of 100" in browser.find_element(By.CSS_SELECTOR, "[data-testid=usage]").text
    assert key not in browser.page_source and key[:14] in browser.page_source
    assert not shoot(browser, "05-api-section")
    click_and_wait(
        browser, browser.find_element(By.CSS_SELECTOR, f"button[aria-label='Revoke key {key[:14]}']")
    )
    assert "is revoked" in browser.find_element(By.CSS_SELECTOR, "[role=status]").text
    shoot(browser, "06-revoked")
    api = requests.get(f"{base}/api/v1/locations", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert api.status_code == 401 and api.json()["error"] == "invalid_key"

    cookie = browser.get_cookie("session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
