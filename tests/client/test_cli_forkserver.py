"""The `urban` runs the client tests fork from a warm process behave as the installed console script does:
the same exit code and bytes on stdout and stderr, their own environment and standard input, and a real
subprocess where Python's own start-up would differ."""

from __future__ import annotations

import subprocess

import pytest

from tests.client.conftest import _cli_fork_server, urban_command

CASES = [
    ["--version"],
    ["--help"],
    ["no-such-command"],
    ["disruptions"],  # no target: a usage error, exit 2
    ["air-quality", "--lat", "51.2", "--lng", "4.4", "--lang", "xx"],
    ["configure"],  # no key given and none on stdin
]


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_a_forked_run_equals_the_console_script(client_env, args):
    server = _cli_fork_server()
    assert server.can_run(client_env)
    real = subprocess.run(urban_command() + args, env=client_env, capture_output=True, timeout=60)
    forked = server.run([urban_command()[0], *args], client_env, ".", None, 60)
    assert (forked.returncode, forked.stdout, forked.stderr) == (real.returncode, real.stdout, real.stderr)


def test_each_run_has_its_own_environment_and_stdin(client_env, tmp_path, api_server, account):
    server = _cli_fork_server()
    config = tmp_path / "other.ini"
    env = dict(client_env, URBAN_CONFIG=str(config))
    done = server.run(
        ["urban", "configure", "--base-url", api_server.base_url],
        env,
        str(tmp_path),
        account.key.encode() + b"\n",
        60,
    )
    assert done.returncode == 0, done.stderr
    assert account.key in config.read_text()
    again = server.run(["urban", "locations", "--json"], env, str(tmp_path), None, 60)
    assert again.returncode == 0 and again.stdout == api_server.get("locations", account.key).content
    without = server.run(["urban", "locations", "--json"], client_env, str(tmp_path), None, 60)
    assert without.returncode != 0  # the other run's configuration did not leak into this one


def test_a_different_python_start_up_is_a_real_subprocess(client_env):
    server = _cli_fork_server()
    assert server.can_run(client_env)
    for name, value in (("LC_ALL", "C"), ("PYTHONIOENCODING", "latin-1"), ("PYTHONUTF8", "0")):
        assert not server.can_run(dict(client_env, **{name: value}))


def test_a_run_past_its_timeout_is_killed(client_env, silent_server):
    server = _cli_fork_server()
    with pytest.raises(subprocess.TimeoutExpired):
        server.run(
            ["urban", "--base-url", silent_server, "air-quality", "--lat", "51.2", "--lng", "4.4"],
            dict(client_env, URBAN_API_KEY="uc_live_" + "k" * 40, URBAN_TIMEOUT="30"),
            ".",
            None,
            1,
        )


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_an_attached_run_on_its_own_pipes_equals_the_console_script(client_env, args):
    """What an MCP client spawns (``ForkServer.attach_command``): the forked run on the spawned process's own
    stdin, stdout and stderr (pipes), its exit code passed on."""
    server = _cli_fork_server()
    real = subprocess.run(urban_command() + args, env=client_env, capture_output=True, timeout=60)
    attached = subprocess.run(
        server.attach_command(["urban", *args]), env=client_env, capture_output=True, timeout=60
    )
    assert (attached.returncode, attached.stdout, attached.stderr) == (
        real.returncode,
        real.stdout,
        real.stderr,
    )


def test_an_attached_run_reads_its_own_stdin(client_env, tmp_path, api_server, account):
    server = _cli_fork_server()
    env = dict(client_env, URBAN_CONFIG=str(tmp_path / "other.ini"))
    done = subprocess.run(
        server.attach_command(["urban", "configure", "--base-url", api_server.base_url]),
        env=env,
        input=account.key.encode() + b"\n",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert account.key in (tmp_path / "other.ini").read_text()
