"""`import geo` must not pull in the web, HTTP or database layers."""

import subprocess
import sys

FORBIDDEN = ("flask", "werkzeug", "requests", "requests_cache", "sqlite3", "urllib3", "flask_limiter")


def test_import_geo_loads_no_web_http_or_sql_module():
    code = (
        "import sys, geo, geo.data.engine, geo.coords\n"
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
