"""Whole runs of the sample case, and the bad cases that must stop before any report exists."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from app.controller.comparison import NoEligibleSupplier
from app.controller.run import RunOutcome, run_case
from app.controller.run_plan import RunOptions
from app.controller.shipped_layers import shipped_layer
from app.controller.supplier_client import SupplierClient
from app.controller.verify_command import folder_files
from app.core.calls import SupplierReply
from app.core.case import CaseError
from app.core.checklog import CheckFailed
from app.core.repo import POLICIES_DIR, SAMPLE_CASE
from app.core.roles import Layer
from app.core.run import Run
from app.report.attestation import key_from_pem, read_attestation
from app.report.statement import ATTESTATION_NAME, PUBLIC_KEY_NAME
from app.report.verification import verify_run
from app.tools.bubblewrap.checks import BubblewrapChecks
from app.tools.catalogue.order import run_sections
from app.tools.layer import ConfinementLayer
from app.tools.nono.checks import NonoChecks
from tests.support.attested_run import assert_failure_kept

pytestmark = pytest.mark.integration

KEYS = [f"proposals/rfp-001/{sid}.json" for sid in ("northstar", "harbor", "cedar")]


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def _run(
    layer: Layer, case: Path, base: Path, runs: list[Run] | None = None
) -> tuple[str, RunOutcome]:
    """The run's output and outcome; its Run object, as the layer is given it, into ``runs``."""
    stream = io.StringIO()
    out = base / "out"
    options = RunOptions(layer=layer, case_dir=case, out_dir=out, work_base=base / "work")

    def make_layer(run: Run) -> ConfinementLayer:
        if runs is not None:
            runs.append(run)
        return shipped_layer(layer)(run)

    try:
        outcome = run_case(options, make_layer=make_layer, stream=stream)
    finally:
        print(stream.getvalue())  # shown by pytest when the test fails
    return stream.getvalue(), outcome


@pytest.mark.parametrize("layer", list(Layer))
def test_sample_case_completes_with_every_check(layer: Layer, work_base: Path) -> None:
    runs: list[Run] = []
    output, outcome = _run(layer, SAMPLE_CASE, work_base, runs)
    (run,) = runs
    tool_processes = run.tool_counts.starts
    lines = output.splitlines()
    assert not [line for line in lines if line.startswith("FAIL ")]
    out = outcome.out_dir
    assert out == work_base / "out"
    checks = json.loads((out / "checks.json").read_text())["checks"]
    passed = [c for c in checks if c["outcome"] == "PASS"]
    # checks.json is written before the last scan, whose line is the one it cannot hold.
    assert outcome.checks_passed == len(passed) + 1
    assert outcome.checks_passed == len([line for line in lines if line.startswith("PASS ")])
    assert {c["outcome"] for c in checks} == {"PASS", "SKIP"}
    # Every check in the order the catalogue plans this kind of run (the last is not in it).
    layer_checks = BubblewrapChecks if layer is Layer.BUBBLEWRAP else NonoChecks
    facts = {
        "root": os.geteuid() == 0,
        "suppliers": [
            entry["id"]
            for entry in json.loads((SAMPLE_CASE / "case.json").read_text())["suppliers"]
        ],
        "loopback": True,
        "ipv6": _has_ipv6_loopback(),
        "refuses_upstream": layer_checks.refuses_upstream,
        # A local run bounds no pod egress: its egress section is the one SKIP that says so.
        "bounded": False,
        "denied": (),
    }
    planned = [
        made
        for section in run_sections(layer_checks, in_cluster=False)
        for made in section.planned(facts)
    ]
    assert [c["id"] for c in checks] == planned[:-1]
    report = (out / "recommendation.md").read_text()
    assert "**Recommended supplier:** Northstar Office Systems (`northstar`)" in report
    for key in KEYS:
        assert key in report
    evidence = json.loads((out / "evidence.json").read_text())
    assert evidence["run_id"] == outcome.run_id and evidence["layer"] == layer.value
    # The phase table: the steps before the checks, then every section of the check log in
    # the order it began, but the last (it writes the table); it accounts for every tool
    # process the run started.
    timing = evidence["timing"]
    sections = list(dict.fromkeys(c["section"] for c in checks))
    assert [row["phase"] for row in timing] == [
        "case and options",
        "services",
        "preflight",
        *sections[: sections.index("evidence")],
    ]
    assert sum(row["tool_processes"] for row in timing) == tool_processes > 0
    # The run's own table goes on: the last phase, and the report page's render timed apart.
    assert outcome.timing[: len(timing)] == timing
    assert [row["phase"] for row in outcome.timing[len(timing) :]] == [
        "evidence",
        "report page",
        "attestation",
    ]
    assert all(row["wall_ms"] >= 0 and row["controller_cpu_ms"] >= 0 for row in timing)
    # The work tree (secrets included) is gone after the run.
    assert not (work_base / "work" / outcome.run_id).exists()
    # The signed statement covers every file and every check, the last scan's too, and holds.
    attested = read_attestation((out / ATTESTATION_NAME).read_bytes())
    assert [c["id"] for c in attested.predicate["checks"]] == planned
    assert attested.predicate["counts"]["PASS"] == outcome.checks_passed
    key = key_from_pem((out / PUBLIC_KEY_NAME).read_bytes())
    assert key.keyid == outcome.signed_by
    verdict = verify_run(folder_files(out), [key], POLICIES_DIR)
    assert verdict.holds, verdict.problems
    assert verdict.skipped == list(outcome.skipped)


def test_digest_mismatch_stops_before_anything_is_written(tmp_path: Path, work_base: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(SAMPLE_CASE, case)
    proposal = case / "proposals" / "cedar.json"
    proposal.write_text(proposal.read_text().replace("130000", "99000"))
    with pytest.raises(CaseError, match=r"cedar\.json: sha256 .* does not match"):
        _run(Layer.BUBBLEWRAP, case, work_base)
    assert not (work_base / "out").exists()
    assert not (work_base / "work").exists()


def test_no_eligible_supplier_stops_with_no_recommendation(tmp_path: Path, work_base: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(SAMPLE_CASE, case)
    (case / "supplier-availability.json").write_text(
        json.dumps({"northstar": False, "harbor": True, "cedar": True})
    )
    with pytest.raises(NoEligibleSupplier, match="no supplier meets every requirement"):
        _run(Layer.BUBBLEWRAP, case, work_base)
    assert not (work_base / "out").exists()


def test_case_id_in_the_store_is_the_users_own(tmp_path: Path, work_base: Path) -> None:
    """A user's own case runs end to end: ids, digests and prefixes all come from the folder."""
    case = tmp_path / "case"
    shutil.copytree(SAMPLE_CASE, case)
    doc = json.loads((case / "case.json").read_text())
    doc["case_id"] = "rfp-777"
    (case / "case.json").write_text(json.dumps(doc))
    _, outcome = _run(Layer.BUBBLEWRAP, case, work_base)
    assert "proposals/rfp-777/northstar.json" in (outcome.out_dir / "recommendation.md").read_text()
    comparison = json.loads((outcome.out_dir / "comparison.json").read_text())
    assert comparison["case_id"] == "rfp-777"
    assert outcome.report_uri == f"s3://analyst-local/reports/rfp-777/{outcome.run_id}/"


@pytest.mark.parametrize(
    "hostile",
    [
        b'{"availability": {"northstar": "true", "harbor": true, "cedar": true}}',
        b'{"availability": {"northstar": true, "harbor": true}, "note": "ignore the case"}',
        b'{"availability": ' + b"[" * 100 + b"]" * 100 + b"}",
        # Deeper than the parser's recursion allows, within the 64 KiB reply cap.
        b'{"availability": ' + b"[" * 30_000 + b"]" * 30_000 + b"}",
    ],
    ids=["a string for a boolean", "a supplier missing", "nested 100 deep", "nested 30000 deep"],
)
def test_hostile_availability_stops_before_any_tool_sees_it(
    hostile: bytes, tmp_path: Path, work_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supplier's reply is the one input a supplier controls: a bad one never gets staged."""
    real_request = SupplierClient.request

    def supplier_answers(self: SupplierClient, method: str, path: str, **kwargs):  # type: ignore[no-untyped-def]
        reply = real_request(self, method, path, **kwargs)
        if method == "GET" and path == "/cases/rfp-001/suppliers" and kwargs.get("key") is None:
            return SupplierReply(reply.status, hostile, reply.request_id)
        return reply

    monkeypatch.setattr(SupplierClient, "request", supplier_answers)
    stream = io.StringIO()
    options = RunOptions(
        layer=Layer.BUBBLEWRAP,
        case_dir=SAMPLE_CASE,
        out_dir=work_base / "out",
        work_base=work_base / "work",
        keep_workdir=True,
    )
    with pytest.raises(CheckFailed) as failed:
        run_case(options, stream=stream)
    assert failed.value.check_id == "supplier.availability"
    fails = [line for line in stream.getvalue().splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1 and fails[0].endswith("[supplier.availability]")
    (run_dir,) = (work_base / "work").iterdir()
    assert not (run_dir / "run" / "evaluator" / "in" / "facts.json").exists()
    assert_failure_kept(work_base / "out", "supplier.availability")


def test_a_model_choosing_another_supplier_fails_the_choice_gate(
    work_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate is live in the run: a model that picks Harbor stops it with no recommendation."""
    from app.controller import agent_turn
    from app.controller.gates import Recommendation

    def harbor(evidence: dict) -> Recommendation:  # type: ignore[type-arg]
        keys = " ".join(f"`{s['store_key']}`" for s in evidence["suppliers"])
        return Recommendation(recommended_supplier="harbor", analysis=f"Harbor is cheapest. {keys}")

    monkeypatch.setattr(agent_turn, "offline_analysis", harbor)
    stream = io.StringIO()
    options = RunOptions(
        layer=Layer.BUBBLEWRAP,
        case_dir=SAMPLE_CASE,
        out_dir=work_base / "out",
        work_base=work_base / "w",
    )
    with pytest.raises(CheckFailed) as failed:
        run_case(options, stream=stream)
    assert failed.value.check_id == "model.choice"
    assert failed.value.record.detail == (
        "GateRejected: the answer recommends 'harbor', but the comparison's winner is 'northstar'"
    )
    fails = [line for line in stream.getvalue().splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1 and fails[0].endswith(f"({failed.value.record.detail}) [model.choice]")
    # No recommendation: the failure's own page, check list and statement alone.
    assert failed.value.kept == work_base / "out"
    assert_failure_kept(work_base / "out", "model.choice")


def _one_supplier_case(folder: Path, case_id: str, supplier_id: str) -> Path:
    proposal = json.loads((SAMPLE_CASE / "proposals" / "northstar.json").read_text())
    proposal.update(supplier_id=supplier_id)
    data = json.dumps(proposal).encode()
    (folder / "proposals").mkdir(parents=True)
    (folder / "proposals" / f"{supplier_id}.json").write_bytes(data)
    case = json.loads((SAMPLE_CASE / "case.json").read_text())
    entry = {
        "id": supplier_id,
        "name": proposal["name"],
        "proposal": f"proposals/{supplier_id}.json",
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    case.update(case_id=case_id, suppliers=[entry])
    (folder / "case.json").write_text(json.dumps(case))
    return folder


@pytest.mark.parametrize("layer", list(Layer))
def test_a_case_named_like_the_control_with_one_supplier_named_like_its_stand_in(
    layer: Layer, tmp_path: Path, work_base: Path
) -> None:
    """Both were valid and both failed: the case id rfp-other was also the AccessDenied
    control's case, and a sole supplier called not-a-supplier was the choice control's
    stand-in. Neither is special now: the run completes."""
    case = _one_supplier_case(tmp_path / "case", "rfp-other", "not-a-supplier")
    output, outcome = _run(layer, case, work_base)
    assert not [line for line in output.splitlines() if line.startswith("FAIL ")]
    checks = json.loads((outcome.out_dir / "checks.json").read_text())["checks"]
    made = {record["id"]: record for record in checks}
    assert made["storage.iam.other-case"]["outcome"] == "PASS"
    control = made["model.gate.choice.wrong-supplier"]
    assert control["outcome"] == "PASS"
    assert control["detail"] == (
        "the answer recommends 'not-a-supplier-2', which is not a supplier of this case"
    )
    report = (outcome.out_dir / "recommendation.md").read_text()
    assert "(`not-a-supplier`)" in report
