"""The front door `/` and the interactive docs `/api/v1/docs` over HTTP: what they link, their headers, the
Swagger UI files served by us (none from elsewhere), and a clear 503 when `make docs-ui` was not run."""

from __future__ import annotations

import re

import pytest

import app.docs_ui as docs_ui
from platform_helpers import assert_error


def test_front_page_says_what_the_service_is_and_links_portal_dashboard_docs_and_openapi(client):
    resp = client.get("/")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    html = resp.get_data(as_text=True)
    assert "<h1>Urban Conditions Service</h1>" in html and "Flanders and Brussels" in html
    links = set(re.findall(r'href="([^"]+)"', html))
    assert {"/portal/", "/dashboard/", "/api/v1/docs", "/api/v1/openapi.json"} <= links
    for link in links:  # the dashboard sends a visitor who is not signed in to the portal's sign-in
        assert client.get(link, follow_redirects=True).status_code == 200, link
    for tool in ("urban mcp", "urban-score", "notebook"):
        assert tool in html
    assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
    assert resp.headers["X-Content-Type-Options"] == "nosniff"


def test_docs_page_loads_only_files_of_this_server(client):
    resp = client.get("/api/v1/docs")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    html = resp.get_data(as_text=True)
    assert "http://" not in html and "https://" not in html  # no CDN
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sorted(sources) == sorted(
        [
            "/api/v1/docs/ui/favicon-32x32.png",
            "/api/v1/docs/ui/swagger-ui.css",
            "/api/v1/docs/ui/swagger-ui-bundle.js",
            "/api/v1/docs/static/docs-init.js",
        ]
    )
    for src in sources:
        assert client.get(src).status_code == 200, src
    policy = resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy
    init = client.get("/api/v1/docs/static/docs-init.js").get_data(as_text=True)
    assert "validatorUrl: null" in init  # the online validator would send the document elsewhere
    assert client.get("/api/v1/docs/ui/swagger-ui-bundle.js").mimetype in (
        "text/javascript",
        "application/javascript",
    )


@pytest.mark.parametrize("name", ["index.html", "..%2Fpackage.json", "swagger-initializer.js"])
def test_only_the_listed_ui_files_are_served(client, name):
    assert_error(client.get(f"/api/v1/docs/ui/{name}"), 404, "not_found")


def test_docs_without_installed_ui_is_a_clear_503(client, monkeypatch, tmp_path):
    monkeypatch.setattr(docs_ui, "DIST", str(tmp_path))
    body = assert_error(client.get("/api/v1/docs"), 503, "service_unavailable")
    assert "make docs-ui" in body["message"]
    assert_error(client.get("/api/v1/docs/ui/swagger-ui.css"), 503, "service_unavailable")
