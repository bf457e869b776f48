"""`--help` and the docs agree: every subcommand and option of every command line has a
description, and its docs section lists exactly those in --help's words (the options in
--help's order; the subcommands in the order a reader meets them)."""

from __future__ import annotations

import argparse
from collections import Counter

import pytest

from tests.support.cli_help import (
    COMMANDS,
    Command,
    Help,
    documented,
    every_help,
    parse_help,
    rows,
)
from tests.support.docs import headings, pages, text


@pytest.fixture(scope="module")
def helps() -> dict[Command, Help]:
    return every_help()


def test_every_subcommand_and_option_has_a_description(helps: dict[Command, Help]) -> None:
    undescribed = [
        f"{command.name} {name}"
        for command, found in helps.items()
        for name, words in [*found.subcommands, *found.options]
        if not words
    ]
    assert not undescribed
    for command, found in helps.items():
        if command.argv[0] == "app.controller" and len(command.argv) > 1:
            assert found.description, f"{command.name} --help has no description"


def test_every_subcommand_has_its_docs_section(helps: dict[Command, Help]) -> None:
    known = {command.argv for command in COMMANDS}
    missing = [
        " ".join((*command.argv, name))
        for command, found in helps.items()
        for name, _ in found.subcommands
        if (*command.argv, name) not in known
    ]
    assert not missing


@pytest.mark.parametrize("command", COMMANDS, ids=[command.name for command in COMMANDS])
def test_the_docs_list_each_subcommand_and_option_as_help_does(
    command: Command, helps: dict[Command, Help]
) -> None:
    found = helps[command]
    subcommands, options = documented(command)
    expected = "\n".join(rows(found))
    assert sorted(subcommands) == sorted(found.subcommands), (
        f"{command.page} should hold:\n{expected}"
    )
    assert options == found.options, f"{command.page} should hold:\n{expected}"


def test_each_command_is_documented_once() -> None:
    titles = Counter(heading.title for page in pages() for heading in headings(text(page)))
    assert {command.heading: titles[command.heading] for command in COMMANDS} == {
        command.heading: 1 for command in COMMANDS
    }


def test_the_help_reader_sees_each_kind_of_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")
    parser = argparse.ArgumentParser(prog="tool", description="What it does.")
    parser.add_argument("folder", metavar="DIR", help="a folder")
    parser.add_argument("--a-very-long-option-name", metavar="VALUE", help="goes on the next line")
    parser.add_argument("--bare")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("go", help="go somewhere")
    found = parse_help(parser.format_help())
    assert found.description == "What it does."
    assert found.subcommands == [("go", "go somewhere")]
    assert found.options == [
        ("DIR", "a folder"),
        ("--a-very-long-option-name VALUE", "goes on the next line"),
        ("--bare BARE", ""),
    ]
