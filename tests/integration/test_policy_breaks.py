"""A FAIL on demand: ``--break <role>:<element>`` leaves one element of one role's committed
policy out and stops at the check that watches it, its FAIL line naming that check, exit 1.

That every watched element's break stops at its check is the proof of test_removals_bubblewrap.py
and test_removals_nono.py, made with the layer ``--break`` builds for every element of every
role. Here: the reader's redundant
elements, whose break lets every check pass, run through the layer's own steps on shared
services; and two whole runs, one per layer, through the command line, as a reader would type
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.cli import main
from app.controller.shipped_layers import broken_layer
from app.tools.policy_breaks import PolicyBreak, listed, listing, parse
from tests.support.attested_run import assert_failure_kept
from tests.support.elements import Shared, shared_services, steps_outcome

pytestmark = pytest.mark.integration

# Each watched element's break is run once, in test_removals_<layer>.py.
READER_REDUNDANT = [e for e in listed() if e.role == "reader" and e.watched_by is None]
_FAIL_ID = re.compile(r"^FAIL .* \[(?P<id>[a-z0-9_.-]+)\]$", re.MULTILINE)


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    with shared_services() as services:
        yield services


@pytest.mark.parametrize(
    "entry", READER_REDUNDANT, ids=[f"{e.layer}:{e.element}" for e in READER_REDUNDANT]
)
def test_breaking_a_redundant_reader_element_lets_every_check_pass(
    entry: PolicyBreak, shared: Shared
) -> None:
    failed, lines = steps_outcome(shared, entry.layer, broken_layer(parse(entry.name, entry.layer)))
    # Every check passes without it, as its accounting says.
    assert failed is None, lines[-3:]
    assert lines and all(line.startswith("PASS ") for line in lines)


@pytest.mark.parametrize(
    ("argv", "watched_by"),
    [
        (
            ["run", "--layer", "bubblewrap", "--break", "reader:--unshare-net"],
            "bubblewrap.namespaces.net",
        ),
        (["demo", "--break", "evaluator:network.block"], "nono.network.socket.evaluator"),
    ],
    ids=["run-bubblewrap", "demo-nono"],
)
def test_the_command_line_stops_at_the_fail_with_exit_1(
    argv: list[str], watched_by: str, work_base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*argv, "--workdir", str(work_base / "work"), "--out", str(work_base / "out")]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    captured = capsys.readouterr()
    assert exited.value.code == 1, captured.out[-2000:]
    assert _FAIL_ID.findall(captured.out) == [watched_by]
    assert captured.err.startswith("ANALYST_FAILED: ")
    # The failed run keeps its check list, a page leading with the failure and its statement.
    assert_failure_kept(
        work_base / "out" if argv[0] == "run" else _only_run(work_base / "out"), watched_by
    )


def _only_run(parent: Path) -> Path:
    (layer,) = [path for path in parent.iterdir() if path.is_dir()]
    (run,) = list(layer.iterdir())
    return run


def test_the_list_names_every_element_of_both_layers_with_what_watches_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--break", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == listing()
    assert "  reader:--unshare-net  (fails bubblewrap.namespaces.net)" in out
    assert "  evaluator:network.block  (fails nono.network.socket.evaluator)" in out
    assert len([line for line in out if line.startswith("  ")]) == len(listed())


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["run", "--layer", "nono", "--break", "reader:--no-such-option"],
            "--break reader:--no-such-option: no role's committed policy has that element",
        ),
        (
            ["run", "--layer", "nono", "--break", "reader:--unshare-net"],
            "--break reader:--unshare-net: an element of the bubblewrap layer's policy",
        ),
    ],
    ids=["unknown", "other-layer"],
)
def test_a_name_the_layer_has_not_is_bad_input_before_anything_is_created(
    argv: list[str], said: str, work_base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--workdir", str(work_base / "work")])
    assert exited.value.code == 2
    assert said in capsys.readouterr().err
    assert not (work_base / "work").exists()
