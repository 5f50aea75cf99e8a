"""Keep the Dockerfile honest without a Docker engine: parse it, run its install steps (``pip install ...``)
in a fresh virtualenv (no system site packages) on a copy of exactly what it COPYs, start its CMD with its
ENV (snapshot "mounted" from the test snapshot) and run its HEALTHCHECK command against ``/healthz``."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from bench.deploy import ROOT, free_port

pytestmark = pytest.mark.slow


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, buf = [], ""
    for line in text.splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        buf += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            word, _, rest = buf.partition(" ")
            out.append((word.upper(), rest.strip()))
            buf = ""
    return out


def env_pairs(args: str) -> dict:
    return dict(part.split("=", 1) for part in shlex.split(args))


def runtime_stage(steps):
    """The instructions of the final (runtime) stage, from its FROM on; earlier stages only build files it
    copies with ``COPY --from`` (the Swagger UI of /api/v1/docs, the dashboard's Leaflet)."""
    last = max(i for i, (k, _a) in enumerate(steps) if k == "FROM")
    return steps[last:]


def test_dockerfile_policy():
    all_steps = instructions((ROOT / "Dockerfile").read_text())
    steps = runtime_stage(all_steps)
    kinds = [k for k, _ in steps]
    assert steps[0][0] == "FROM" and steps[0][1].startswith("python:") and "-slim" in steps[0][1]
    assert all("-slim" in a for k, a in all_steps if k == "FROM")
    built = [a for k, a in steps if k == "COPY" and a.startswith("--from=")]
    assert "--from=docs-ui /ui/node_modules ./app/docs_ui/node_modules" in built  # Swagger UI of /api/v1/docs
    assert any(
        a.startswith("--from=assets ") and a.endswith("./app/dashboard/static/vendor/leaflet/") for a in built
    )  # the dashboard's Leaflet
    assert all(a.startswith(("--from=docs-ui ", "--from=assets ")) for a in built)
    assert not any("urban_client" in a for k, a in all_steps)  # the client is its own distribution
    user = [a for k, a in steps if k == "USER"]
    assert user and user[-1] not in {"root", "0"}
    assert kinds.index("USER") > max(i for i, (k, a) in enumerate(steps) if k == "RUN")
    health = next(a for k, a in steps if k == "HEALTHCHECK")
    assert "/healthz" in health
    installs = [a for k, a in steps if k == "RUN" and "pip install" in a]
    assert any("-r requirements.txt" in a for a in installs) and any("--no-deps" in a for a in installs)
    assert not any("requirements-dev" in a for k, a in steps)
    env = {}
    for k, a in steps:
        if k == "ENV":
            env.update(env_pairs(a))
    assert (
        env["URBAN_ENV"] == "production" and "URBAN_SECRET_KEY" not in env and "URBAN_PUBLIC_URL" not in env
    )


def wheelhouse() -> Path | None:
    """A local directory of the wheels ``requirements.txt`` and the project's build requirements resolve to,
    downloaded once per version of those files (``pip download``) and kept across runs in
    ``$URBAN_TEST_WHEELHOUSE`` (default ``~/.cache/urban-tests``). The fresh venv then installs from it with
    no index: the same ``pip install`` commands, the same resolution checked (a pin missing from the closure
    fails here too, as no index can fill it in), without fetching and parsing the index pages of ~60
    projects (a third of the step's CPU). None when the download fails (e.g. a pin without a wheel): the test
    then installs from the index as the image does."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    reqs = (ROOT / "requirements.txt").read_bytes()
    key = hashlib.sha256(reqs + json.dumps(build).encode() + sys.version.encode()).hexdigest()[:16]
    base = Path(os.environ.get("URBAN_TEST_WHEELHOUSE") or Path.home() / ".cache" / "urban-tests")
    path = base / f"wheels-{key}"
    if path.is_dir():
        return path
    base.mkdir(parents=True, exist_ok=True)
    tmp = base / f".wheels-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(tmp)]
        + ["-r", str(ROOT / "requirements.txt"), *build],
        capture_output=True,
        timeout=900,
    )
    if out.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    try:
        tmp.rename(path)  # atomic: a concurrent run that finished first keeps its own
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


@pytest.mark.timeout(900)  # installs the whole runtime closure (now with WeasyPrint) into a fresh venv
def test_dockerfile_installs_and_starts_in_a_fresh_venv(tmp_path, snapshot_dir):
    steps = runtime_stage(instructions((ROOT / "Dockerfile").read_text()))
    work = tmp_path / "srv"
    work.mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_ = venv / "bin"
    env = {"PATH": f"{bin_}:{os.environ['PATH']}", "HOME": str(tmp_path), "VIRTUAL_ENV": str(venv)}
    wheels = wheelhouse()
    for kind, args in steps:
        if kind == "ENV":
            env.update(env_pairs(args))
        elif kind == "COPY" and args.startswith("--from="):
            continue  # the docs UI built by the npm stage: not needed to start and answer /healthz
        elif kind == "COPY":
            *sources, dest = shlex.split(args)
            stage = sources[0].startswith("--from=")
            if stage:  # the assets stage ran `npm ci` in /assets: `make assets` did the same in ROOT
                sources = [src.removeprefix("/assets/") for src in sources[1:]]
            target = work / dest
            for src in sources:
                path = ROOT / src
                assert path.exists(), f"{src} is missing: run `make assets` first" if stage else src
                if path.is_dir():
                    shutil.copytree(
                        path, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
                    )
                else:
                    (target if dest.endswith("/") else target.parent).mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target / path.name if dest.endswith("/") or dest == "./" else target)
        elif kind == "RUN" and "pip install" in args:
            env.pop("PIP_NO_CACHE_DIR", None)  # the test may reuse pip's download cache
            # No byte-compiling of the ~5,000 installed modules (a third of the step's CPU): the image's
            # pip does it, but it checks nothing here (pip ignores compile errors) and the server starts
            # from the sources alike. (PIP_NO_COMPILE=1 would *enable* it: pip's boolean env quirk.)
            env["PIP_COMPILE"] = "0"
            if wheels is not None:
                env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
            env["HOME"] = os.environ.get("HOME", str(tmp_path))
            out = subprocess.run(
                ["sh", "-c", args], cwd=work, env=env, capture_output=True, text=True, timeout=900
            )
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    freeze = subprocess.run([str(bin_ / "pip"), "freeze"], env=env, capture_output=True, text=True).stdout
    names = {line.split("==")[0].split(" @ ")[0].lower() for line in freeze.splitlines()}
    assert not names & {"pytest", "hypothesis", "schemathesis", "selenium", "mcp"}  # server runtime only
    port = free_port()
    env.update(
        {
            "URBAN_DATA_DIR": str(snapshot_dir),
            "URBAN_INSTANCE_PATH": str(tmp_path / "instance"),
            "URBAN_SECRET_KEY": "docker-test",
            "URBAN_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "PORT": str(port),
            "HOST": "127.0.0.1",
            "WEB_CONCURRENCY": "1",
        }
    )
    cmd = json.loads(next(a for k, a in steps if k == "CMD"))
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        health = next(a for k, a in steps if k == "HEALTHCHECK").split(" CMD ", 1)[1]
        deadline = time.monotonic() + 300  # a loaded machine: the imports are compiled as the server starts
        while True:
            out = subprocess.run(["sh", "-c", health], env=env, capture_output=True, timeout=10)
            if out.returncode == 0:
                break
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
