"""Someone following only the README reaches the dashboard, the CLI, the notebook guide and batch scoring
(issue 30, item 3; like sqlite-utils' ``test_docs``): the README starts with ``make serve`` and ``make test``,
names each part of the product, every command it shows exists (Make targets, modules and their
subcommands, console scripts, extras, the client's commands), every document it names exists (with the
section it points to), and every local URL it gives answers."""

from __future__ import annotations

import configparser
import importlib
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEXT = (REPO / "README.md").read_text(encoding="utf-8")
#: the programs of this project whose commands are checked (others, e.g. curl or claude, are not ours)
OURS = ("make", "urban", "urban-score", "pip", "python", "flask")


def shown_commands(text: str = TEXT) -> list[str]:
    """Every command of ours the README shows: code-block lines and inline code spans."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    candidates = [line.strip().removeprefix("$ ") for block in blocks for line in block.splitlines()]
    candidates += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    out = []
    for candidate in candidates:
        command = re.split(r"\s+#|;|\|", candidate)[0].strip()
        words = command.split()
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value prefixes
            words.pop(0)
        if words and words[0].removeprefix(".venv/bin/") in OURS:
            out.append(" ".join(words))
    return out


def setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def check_click(group, words, where):
    """Each word of ``words`` up to the first option is a subcommand of ``group``."""
    import click

    command = group
    for word in words:
        if word.startswith("-") or not isinstance(command, click.Group):
            break
        assert word in command.commands, f"{where}: no command {word!r} (has {sorted(command.commands)})"
        command = command.commands[word]


def check_command(command: str) -> None:
    words = shlex.split(command.replace("…", "x"))
    program = words[0].removeprefix(".venv/bin/")
    args = words[1:]
    if program == "make":
        targets = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), re.M))
        for target in (a for a in args if "=" not in a):
            assert target in targets, f"{command}: no Make target {target!r}"
    elif program == "python":
        assert args[0] == "-m", command
        module = args[1]
        assert importlib.util.find_spec(module) is not None, f"{command}: no module {module}"
        if module == "app.admin":
            from app.admin import admin

            check_click(admin, args[2:], command)
    elif program == "flask":
        from app.admin import admin

        assert args[:2] == ["--app", "wsgi"], command
        check_click(admin, args[2:], command)
    elif program == "urban-score":
        scripts = setup_cfg()["options.entry_points"]["console_scripts"]
        target = re.search(r"urban-score\s*=\s*([\w.]+):(\w+)", scripts)
        assert target, f"{command}: setup.cfg declares no urban-score"
        assert hasattr(importlib.import_module(target.group(1)), target.group(2))
    elif program == "urban":
        from urban_client.cli import cli

        check_click(cli, args, command)
    elif program == "pip":
        assert args[0] == "install", command
        target = args[-1]
        if target == "./client":
            assert (REPO / "client" / "pyproject.toml").is_file()
        else:
            extras = re.fullmatch(r"\.\[(\w+)\]", target)
            assert extras and extras.group(1) in setup_cfg()["options.extras_require"], command


def test_the_readme_starts_with_make_serve_and_make_test():
    first = re.search(r"```\n(.*?)```", TEXT, re.S).group(1).splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make serve", "make test"]
    assert TEXT.index("```") < TEXT.index("\n## ")  # before anything else


def test_the_readme_names_every_part_of_the_product():
    for part in (
        "http://127.0.0.1:8000/dashboard/",  # the dashboard
        "accounts set-plan --email you@example.be --plan pro",  # the Pro upgrade
        "python -m app.admin",  # the admin commands
        "urban-score",  # batch scoring
        "docs/notebook.md",  # the notebook guide
        "urban mcp",  # the CLI and the MCP tools
        "http://127.0.0.1:8000/api/v1/docs",
    ):
        assert part in TEXT, part


@pytest.mark.parametrize("command", sorted(set(shown_commands())))
def test_every_command_the_readme_shows_exists(command):
    check_command(command)


def test_the_command_check_catches_a_wrong_command():
    for wrong in (
        "make sereve",
        ".venv/bin/python -m app.admin accounts upgrade --email x",
        "urban weather --lat 1",
        ".venv/bin/pip install -e '.[notebooks]'",
        ".venv/bin/python -m app.nothing",
    ):
        with pytest.raises(AssertionError):
            check_command(wrong)
    assert len(shown_commands()) >= 15


#: what ``make`` builds (gitignored), named by the README as where things go
BUILT = {line.strip().strip("/") for line in (REPO / ".gitignore").read_text().splitlines() if line.strip()}


def test_every_document_the_readme_names_exists_with_its_section():
    for path, _, section in re.findall(
        r"`((?:docs|data|app|geo|client)/[\w./-]+)`(\s*→\s*([^.()\n;]+))?", TEXT
    ):
        target = REPO / path
        if path.rstrip("/") in BUILT:
            continue
        assert target.exists(), path
        if section:
            headings = re.findall(r"^#+\s+(.*)$", target.read_text(encoding="utf-8"), re.M)
            assert any(h.startswith(section.strip()) for h in headings), f"{path} → {section}"


def test_every_local_url_the_readme_gives_answers(tmp_path):
    from app import create_app

    client = create_app({"TESTING": True, "ENGINE": None, "INSTANCE_PATH": str(tmp_path)}).test_client()
    urls = set(re.findall(r"http://127\.0\.0\.1:8000(/[^\s`)'\"]*)", TEXT))
    assert {"/portal/", "/dashboard/", "/api/v1/docs"} <= urls
    for url in urls:
        if url.rstrip("/") == "/api/v1" or url.startswith("/api/v1/") and url != "/api/v1/docs":
            continue  # the API's base URL, or a call that needs a key
        resp = client.get(url, follow_redirects=True)
        assert resp.status_code != 404 and resp.status_code < 500, (url, resp.status_code)
