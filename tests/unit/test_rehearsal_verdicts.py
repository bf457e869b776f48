"""The rehearsal's verdicts on what a Job's run stored: its checks by id, never by their wording,
and the code revision its evidence names."""

from __future__ import annotations

import io
from typing import Any

import pytest

from app.core import cluster_env as env
from rehearsal.kubelet import ContainerRun
from rehearsal.seccomp_profiles import SeccompChoice
from rehearsal.security import Privileges
from rehearsal.verdicts import StoredRun, Verdicts, egress_verdicts, image_named

DENIED = [("sqs.us-west-2.amazonaws.com", 443), ("1.1.1.1", 443)]
EGRESS_IDS = (
    "egress.control.sts",
    "egress.control.supplier",
    "egress.refused.sqs.us-west-2.amazonaws.com-443",
    "egress.refused.1.1.1.1-443",
)
IMAGE = "registry.example/analyst@sha256:" + "a" * 64


def _stored(outcomes: dict[str, str], evidence: dict[str, Any] | None = None) -> StoredRun:
    checks = {i: {"id": i, "outcome": outcome, "claim": ""} for i, outcome in outcomes.items()}
    return StoredRun("reports/rfp-001/run/", [], checks, evidence or {})


def _verdict(check: Any, *args: Any) -> str:
    verdicts = Verdicts(io.StringIO())
    check(*args, verdicts)
    (line,) = verdicts.lines
    return line


def test_the_egress_verdict_passes_on_its_own_ids() -> None:
    # Another section's check that reads like an egress control does not count (the nono
    # proxy's direct control of the supplier's host once did, as a third "control").
    outcomes = {i: "PASS" for i in EGRESS_IDS} | {"nono.proxy.canary.control": "PASS"}
    assert _verdict(egress_verdicts, _stored(outcomes), DENIED).startswith("PASS rehearsal:")


@pytest.mark.parametrize("missing", EGRESS_IDS)
def test_the_egress_verdict_fails_on_any_id_not_passed(missing: str) -> None:
    outcomes = {i: "PASS" for i in EGRESS_IDS if i != missing}
    line = _verdict(egress_verdicts, _stored(outcomes), DENIED)
    assert line.startswith("FAIL rehearsal:") and f"not passed: ['{missing}: absent']" in line
    failed = _verdict(egress_verdicts, _stored(outcomes | {missing: "FAIL"}), DENIED)
    assert failed.startswith("FAIL rehearsal:") and f"{missing}: FAIL" in failed


def _analyst(told: str | None) -> ContainerRun:
    granted = Privileges(1000, 1000, (1000,), False, (), True, True, False)
    variables = {} if told is None else {env.IMAGE: told}
    return ContainerRun(
        "analyst", IMAGE, "c", granted, SeccompChoice("none", "", None, ""), variables
    )


def _revision(source: str, value: str | None) -> dict[str, Any]:
    return {"provenance": {"code_revision": {"source": source, "value": value, "note": "n"}}}


def test_the_report_names_the_image_the_pod_ran() -> None:
    line = _verdict(image_named, _stored({}, _revision("image", IMAGE)), _analyst(IMAGE))
    assert line.startswith("PASS rehearsal: its evidence.json names the image the pod ran")


@pytest.mark.parametrize(
    ("told", "evidence"),
    [
        (None, _revision("unknown", None)),  # the pod was not given the variable
        ("registry.example/other:latest", _revision("image", "registry.example/other:latest")),
        (IMAGE, _revision("git", IMAGE)),
        (IMAGE, {}),
    ],
)
def test_a_report_that_does_not_name_the_image_that_ran_fails(
    told: str | None, evidence: dict[str, Any]
) -> None:
    line = _verdict(image_named, _stored({}, evidence), _analyst(told))
    assert line.startswith("FAIL rehearsal: its evidence.json names the image the pod ran")
