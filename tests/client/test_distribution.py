"""The client is its own distribution: its wheel, installed into a fresh virtualenv with its dependencies,
pulls none of the server's packages, and that virtualenv's `urban air-quality` and `urban mcp` (a real MCP
client session) answer what the served API answers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import requests

from .conftest import ROOT

pytestmark = pytest.mark.slow

SERVER_ONLY = {
    "flask",
    "gunicorn",
    "geopandas",
    "shapely",
    "numpy",
    "pandas",
    "scipy",
    "pyarrow",
    "werkzeug",
    "urban-conditions",
}


def _pip(venv):
    """pip (this interpreter's) acting on the environment ``venv``."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory):
    """A fresh virtualenv (no system site packages) with only the client's wheel and its dependencies,
    resolved by pip from the configured index (pip's cache makes a second run fast)."""
    work = tmp_path_factory.mktemp("client-dist")
    wheels = work / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(ROOT / "client"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("urban_conditions_client-*.whl")
    venv = work / "venv"
    # no pip of its own (ensurepip costs seconds): this interpreter's pip installs into it (--python)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [
            *_pip(venv),
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-compile",  # bytecode of what the tests import is written as they import it
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    return venv, wheel


def test_wheel_holds_only_the_client(client_venv):
    _venv, wheel = client_venv
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"urban_client", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    meta = next(n for n in names if n.endswith("/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(meta).decode().splitlines()
    requires = [line.split(":", 1)[1].strip() for line in metadata if line.startswith("Requires-Dist:")]
    assert {r.split(">")[0].split("<")[0].split(";")[0].split("=")[0].strip() for r in requires} == {
        "requests",
        "click",
        "rich",
        "mcp",
        "tzdata",
    }
    entry = next(n for n in names if n.endswith("/entry_points.txt"))
    assert "urban = urban_client.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_fresh_venv_pulls_no_server_package(client_venv):
    venv, _ = client_venv
    listed = subprocess.run(
        [*_pip(venv), "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {p["name"].lower().replace("_", "-") for p in json.loads(listed)}
    assert "urban-conditions-client" in names and {"requests", "click", "rich", "mcp"} <= names
    assert not names & SERVER_ONLY, names & SERVER_ONLY
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import app"], capture_output=True, cwd=venv)
    assert probe.returncode != 0  # the server is not importable from the client's environment


def test_server_distribution_no_longer_ships_the_client():
    cfg = (ROOT / "setup.cfg").read_text()
    assert "urban_client" not in cfg and "urban =" not in cfg
    assert not (ROOT / "urban_client").exists()


def _env(venv, api_server, account, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("URBAN_", "VIRTUAL_ENV"))}
    env.update(
        {
            "URBAN_BASE_URL": api_server.base_url,
            "URBAN_API_KEY": account.key,
            "URBAN_CONFIG": str(tmp_path / "none.ini"),
            "PATH": f"{venv / 'bin'}:{env['PATH']}",
            "LC_ALL": "C.UTF-8",  # the locale chooses the summaries' language: English here
        }
    )
    return env


def test_fresh_venv_urban_air_quality_against_the_served_api(client_venv, api_server, account, tmp_path):
    venv, _ = client_venv
    urban = str(venv / "bin" / "urban")
    env = _env(venv, api_server, account, tmp_path)
    for option, accept in (("--json", "application/json"), ("--geojson", "application/geo+json")):
        out = subprocess.run(
            [urban, "air-quality", "--lat", "51.2194", "--lng", "4.4025", option],
            env=env,
            capture_output=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        rest = requests.get(
            f"{api_server.base_url}/air-quality",
            params={"lat": "51.2194", "lng": "4.4025"},
            headers={"Authorization": f"Bearer {account.key}", "Accept": accept},
            timeout=30,
        )
        assert rest.headers["Content-Type"] == accept and out.stdout == rest.content
    summary = subprocess.run(
        [urban, "air-quality", "--location-id", "loc_groenplaats"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert summary.returncode == 0 and "NO2" in summary.stdout and "Low-emission zone: yes" in summary.stdout


def test_fresh_venv_urban_mcp_session(client_venv, api_server, account, tmp_path):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    venv, _ = client_venv
    params = StdioServerParameters(
        command=str(venv / "bin" / "urban"),
        args=["mcp"],
        env=_env(venv, api_server, account, tmp_path),
        cwd=str(tmp_path),
    )

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                result = await session.call_tool("get_air_quality", {"lat": 51.2194, "lng": 4.4025})
                error = await session.call_tool("get_air_quality", {"lat": 48.8566, "lng": 2.3522})
                return tools, result, error

    tools, result, error = asyncio.run(asyncio.wait_for(main(), 120))
    assert {t.name for t in tools} == {
        "list_locations",
        "get_disruptions",
        "get_air_quality",
        "get_briefing",
        "get_changes",
        "get_no2_history",
        "get_works_history",
        "get_detours_history",
    }
    rest = api_server.get("air-quality", account.key, lat="51.2194", lng="4.4025")
    assert not result.is_error and result.content[0].text.encode() == rest.content
    assert error.is_error and json.loads(error.content[0].text)["error"] == "outside_service_area"
