"""Guest readings: read from procfs and sysfs, carried in a log line, and compared pod by pod."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.controller.guest import LINE_PREFIX, read_guest, readings_in_log
from app.controller.guest_comparison import GuestComparison, PodReadings, Verdict, render
from tests.support.guest_readings import NODE, SANDBOX

NOW = datetime(2026, 11, 30, 10, 2, 0, tzinfo=UTC)


def _comparison(analyst: object, ordinary: object) -> GuestComparison:
    return GuestComparison(
        analyst=PodReadings(
            "analyst-bubblewrap-1a2b3c-x7k2p",
            datetime(2026, 11, 30, 10, 0, 58, tzinfo=UTC),
            analyst,
        ),  # type: ignore[arg-type]
        ordinary=PodReadings(
            "ordinary-comparison-bubblewrap-q9m4z",
            datetime(2026, 11, 30, 10, 1, 30, tzinfo=UTC),
            ordinary,
        ),  # type: ignore[arg-type]
        node="ip-10-0-3-17.us-west-2.compute.internal",
        node_created_at=datetime(2026, 11, 30, 8, 31, 0, tzinfo=UTC),
        now=NOW,
    )


def test_readings_come_from_procfs_and_sysfs(tmp_path: Path) -> None:
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    (proc / "self").mkdir(parents=True)
    (proc / "uptime").write_text("61.18 120.02\n")
    # The command name may hold spaces and parentheses; field 22 counts from after it.
    fields = ["S"] + ["0"] * 18 + ["5900"] + ["0"] * 10
    (proc / "self" / "stat").write_text("4242 (python3 (x) y) " + " ".join(fields) + "\n")
    for device in ("vdb", "vda", "dm-0"):
        (sys / "block" / device).mkdir(parents=True)
    (sys / "class" / "dmi" / "id").mkdir(parents=True)
    (sys / "class" / "dmi" / "id" / "product_name").write_text("c7i.enclave\n")
    readings = read_guest(proc, sys)
    assert readings.uptime_seconds == 61.18
    assert readings.block_devices == ("dm-0", "vda", "vdb")
    assert readings.product_name == "c7i.enclave"
    booted = datetime.fromisoformat(readings.read_at).timestamp() - 61.18
    started = datetime.fromisoformat(readings.process_started_at).timestamp()
    assert abs(started - (booted + 59.0)) <= 1.0  # 5900 ticks at 100 Hz


def test_a_machine_without_dmi_reports_no_product_name(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "uptime").write_text("10.0 1.0\n")
    (proc / "self" / "stat").write_text("1 (sh) " + " ".join(["0"] * 30) + "\n")
    readings = read_guest(proc, tmp_path / "sys")
    assert readings.product_name is None and readings.block_devices == ()


def test_the_log_line_round_trips_and_the_last_one_counts() -> None:
    log = "\n".join(["==> bubblewrap: run x", NODE.line(), "PASS a check", SANDBOX.line(), ""])
    assert readings_in_log(log) == SANDBOX
    assert readings_in_log("PASS only checks\n") is None


@pytest.mark.parametrize("broken", ['{"kernel": 1}', "[]", '{"kernel": "x"}'])
def test_a_malformed_readings_line_is_refused(broken: str) -> None:
    with pytest.raises((ValueError, KeyError)):
        readings_in_log(LINE_PREFIX + broken)


def test_a_sandbox_beside_its_node_is_isolated() -> None:
    comparison = _comparison(SANDBOX, NODE)
    assert comparison.verdict() is Verdict.ISOLATED
    text = render(comparison)
    assert "verdict: isolated" in text
    assert "kernel build, block devices, product name all differ" in text
    assert SANDBOX.kernel in text and NODE.kernel in text
    assert "61.18s, pod age 62s" in text and "5432.70s, node age 91m" in text
    assert "dm-0 vda vdb" in text and "c7i.2xlarge" in text
    assert "the verdict does not rest on it" in text


def test_the_same_readings_on_both_sides_are_not_isolated() -> None:
    comparison = _comparison(NODE, replace(NODE, uptime_seconds=5433.1))
    assert comparison.verdict() is Verdict.NOT_ISOLATED
    assert "verdict: not isolated from the node" in render(comparison)


def test_a_partial_difference_is_inconclusive_and_says_which() -> None:
    comparison = _comparison(replace(NODE, kernel=SANDBOX.kernel), NODE)
    assert comparison.verdict() is Verdict.INCONCLUSIVE
    assert "kernel build differ but block devices, product name do not" in render(comparison)


def test_readings_serialise_to_one_json_line() -> None:
    line = SANDBOX.line()
    assert "\n" not in line and line.startswith(LINE_PREFIX)
    assert json.loads(line[len(LINE_PREFIX) :])["block_devices"] == ["dm-0", "vda", "vdb"]
