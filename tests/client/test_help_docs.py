"""Every `urban` command and option has help text and is documented in docs/cli.md."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click
import pytest

from .conftest import urban_command
from urban_client.cli import cli

DOC = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")


def commands():
    return sorted(cli.commands.items())


def test_there_are_the_eight_commands():
    assert [name for name, _ in commands()] == [
        "air-quality",
        "briefing",
        "changes",
        "configure",
        "disruptions",
        "history",
        "locations",
        "mcp",
    ]


def test_the_history_subcommands_have_help_and_are_documented():
    from urban_client.history_cli import history

    assert sorted(history.commands) == ["air-quality", "detours", "works"]
    for name, command in history.commands.items():
        assert command.help and f"`urban history {name}`" in DOC
        for param in command.params:
            assert param.help, f"history {name} {param.opts} has no help text"
            for opt in param.opts:
                assert f"`{opt}" in DOC or f"{opt} " in DOC or f"{opt}`" in DOC, f"history {name} {opt}"


@pytest.mark.parametrize("name, command", commands())
def test_command_has_help_and_is_documented(name, command):
    assert command.help and len(command.help.strip()) > 20
    assert f"`urban {name}" in DOC
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts} has no help text"
            for opt in param.opts:
                if opt.startswith("--"):
                    assert f"`{opt}" in DOC, f"{name} {opt} is not in docs/cli.md"


def test_global_options_have_help_and_are_documented():
    assert cli.help
    for param in cli.params:
        assert isinstance(param, click.Option) and param.help, param.opts
        for opt in param.opts:
            assert f"`{opt}" in DOC or f"{opt}`" in DOC or f"`-h`/`--help`" in DOC, opt


def test_every_exit_code_is_documented():
    from urban_client.cli import ExitCode

    for code in ExitCode:
        assert f"\n| {int(code)} |" in DOC, code


@pytest.mark.parametrize(
    "name", [None, "locations", "disruptions", "air-quality", "briefing", "changes", "configure", "mcp"]
)
def test_help_runs_from_the_installed_command(name):
    args = ["--help"] if name is None else [name, "--help"]
    proc = subprocess.run(urban_command() + args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: urban")
    targeted = name in ("disruptions", "air-quality", "briefing")
    for opt in ["--location-id", "--lat", "--lng", "--json"] if targeted else []:
        assert opt in proc.stdout
