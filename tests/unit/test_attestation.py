"""The signed statement and `verify`: a run's files, signed as a run signs them, hold; any byte
of any subject changed, another signing key, a committed policy that differs, a failed check or
a stopped run each make verify fail, naming what differs."""

from __future__ import annotations

import base64
import json
import shutil
import stat
from pathlib import Path

import jsonschema
import pytest
from securesystemslib.signer import CryptoSigner

from app.controller import cli
from app.controller.secret_scan import KeyLeak, scan_documents
from app.controller.signing_key import local_key_needles, local_public_key, local_signer
from app.core.errors import RunStopped
from app.core.repo import POLICIES_DIR
from app.report.attestation import key_from_pem, public_key_pem, read_attestation
from app.report.statement import (
    ATTESTATION_NAME,
    PREDICATE_SCHEMA,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    SUBJECT_NAMES,
)
from app.report.verification import verify_run
from tests.support.attested_run import CHECKS, LAYER, attested_run, evidence


def test_a_signed_run_verifies_and_says_what_was_proven_and_skipped() -> None:
    made = attested_run()
    verdict = verify_run(made.files, [made.signer.public_key], POLICIES_DIR)
    assert verdict.holds, verdict.problems
    line = verdict.line()
    assert line.startswith("VERIFIED: signed by key ")
    assert f"{len(SUBJECT_NAMES)} files match their signed sha256" in line
    assert "2 checks passed, none failed" in line
    assert line.endswith("skipped 1: model.bedrock-usage")


def test_the_statement_is_in_toto_v1_with_a_predicate_its_schema_accepts() -> None:
    made = attested_run()
    read = read_attestation(made.files[ATTESTATION_NAME])
    assert read.statement["_type"] == STATEMENT_TYPE
    assert read.statement["predicateType"] == PREDICATE_TYPE
    assert [s["name"] for s in read.statement["subject"]] == list(SUBJECT_NAMES)
    schema = json.loads(PREDICATE_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(read.predicate)
    assert [c["id"] for c in read.predicate["checks"]] == [c["id"] for c in CHECKS]
    # A stopped run's predicate too, its evidence absent.
    stopped = attested_run(proofs_evidence={}, stopped_at="files.reader.no-new-file")
    jsonschema.Draft202012Validator(schema).validate(
        read_attestation(stopped.files[ATTESTATION_NAME]).predicate
    )


@pytest.mark.parametrize("name", SUBJECT_NAMES)
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_any_byte_of_any_subject_changed_is_named(name: str, where: str) -> None:
    made = attested_run()
    data = bytearray(made.files[name])
    index = {"first": 0, "middle": len(data) // 2, "last": len(data) - 1}[where]
    data[index] ^= 0x01
    made.files[name] = bytes(data)
    verdict = verify_run(made.files, [made.signer.public_key], POLICIES_DIR)
    assert not verdict.holds
    assert any(p.startswith(f"{name}: sha256 ") for p in verdict.problems), verdict.problems
    assert verdict.line().startswith("NOT VERIFIED")


def test_a_subject_removed_or_a_file_not_signed_is_named() -> None:
    made = attested_run()
    del made.files["report.html"]
    verdict = verify_run(made.files, [made.signer.public_key], POLICIES_DIR)
    assert verdict.problems == ["report.html: signed, but absent here"]


def test_another_key_is_refused() -> None:
    made = attested_run()
    other = CryptoSigner.generate_ed25519()
    verdict = verify_run(made.files, [other.public_key], POLICIES_DIR)
    assert not verdict.holds
    assert verdict.problems[0].startswith("signature: not made by the key given")
    # Signed again by the other key, the run's own key refuses it.
    resigned = attested_run(signer=other)
    assert not verify_run(resigned.files, [made.signer.public_key], POLICIES_DIR).holds


def test_a_statement_changed_after_signing_is_refused() -> None:
    made = attested_run()
    envelope = json.loads(made.files[ATTESTATION_NAME])
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["checks"][0]["outcome"] = "PASS"
    statement["predicate"]["counts"]["FAIL"] = 0
    statement["subject"][0]["digest"]["sha256"] = "0" * 64
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    made.files[ATTESTATION_NAME] = json.dumps(envelope).encode()
    verdict = verify_run(made.files, [made.signer.public_key], POLICIES_DIR)
    assert verdict.problems[0].startswith("signature: not made by the key given")


def _policy_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "policies"
    shutil.copytree(POLICIES_DIR / LAYER, copy / LAYER)
    return copy


def test_a_committed_policy_that_differs_is_named(tmp_path: Path) -> None:
    made = attested_run()
    policies = _policy_copy(tmp_path)
    assert verify_run(made.files, [made.signer.public_key], policies).holds
    changed = sorted(p for p in (policies / LAYER).iterdir() if p.is_file())[0]
    changed.write_bytes(changed.read_bytes() + b" ")
    verdict = verify_run(made.files, [made.signer.public_key], policies)
    assert len(verdict.problems) == 1, verdict.problems
    assert verdict.problems[0].startswith(f"policy {LAYER}/{changed.name}: the run's was sha256 ")
    changed.unlink()
    (policies / LAYER / "extra.json").write_text("{}")
    problems = verify_run(made.files, [made.signer.public_key], policies).problems
    assert sorted(problems) == [
        f"policy {LAYER}/{changed.name}: in force, absent in {policies / LAYER}",
        f"policy {LAYER}/extra.json: in {policies / LAYER}, not in force in the run",
    ]


def test_a_role_whose_policy_in_force_was_not_the_committed_one_is_named() -> None:
    made_evidence = evidence()
    made_evidence["provenance"]["policy_digests"]["roles"]["writer"] = {
        "committed": "a" * 64,
        "in_force": "b" * 64,
        "same": False,
    }
    made = attested_run(proofs_evidence=made_evidence)
    problems = verify_run(made.files, [made.signer.public_key], POLICIES_DIR).problems
    assert problems == ["policy of the writer: the one in force differs from the committed one"]


def test_a_failed_check_and_a_stopped_run_are_named() -> None:
    failed = [*CHECKS[:1], {**CHECKS[2], "outcome": "FAIL"}]
    made = attested_run(checks=failed, proofs_evidence={}, stopped_at="evidence.scanned-before")
    problems = verify_run(made.files, [made.signer.public_key], POLICIES_DIR).problems
    assert problems == [
        "check evidence.scanned-before FAILED: scanned",
        "the run did not complete: it stopped at evidence.scanned-before",
        "predicate: no policy digests (the run stopped before them)",
    ]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "0 lines, where one envelope is expected"),
        (b"{}\n{}\n", "2 lines, where one envelope is expected"),
        (b"[1]", "not a DSSE envelope"),
    ],
)
def test_an_unreadable_attestation_is_named(content: bytes, why: str) -> None:
    made = attested_run()
    made.files[ATTESTATION_NAME] = content
    (problem,) = verify_run(made.files, [made.signer.public_key], POLICIES_DIR).problems
    assert problem.startswith(f"{ATTESTATION_NAME}: {why}")


def test_the_installation_key_is_made_once_private_and_refused_when_readable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config" / "key.pem"
    first = local_signer(path)
    assert first.made_now
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = local_signer(path)
    assert not again.made_now
    assert again.signer.public_key.keyid == first.signer.public_key.keyid
    assert local_public_key(path).keyid == first.signer.public_key.keyid
    pem = public_key_pem(first.signer.public_key)
    assert pem.startswith(b"-----BEGIN PUBLIC KEY-----")
    assert key_from_pem(pem).keyid == first.signer.public_key.keyid
    path.chmod(0o644)
    with pytest.raises(RunStopped, match="may be read by others"):
        local_signer(path)
    path.chmod(0o600)
    link = tmp_path / "link.pem"
    link.symlink_to(path)
    with pytest.raises(RunStopped, match="cannot open"):
        local_signer(link)


def _verify(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = cli.main(["verify", *argv])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, capsys.readouterr().out


def test_the_command_exits_0_only_when_all_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = attested_run()
    folder = made.write(tmp_path / "run")
    key = tmp_path / "attestation.pub"
    key.write_bytes(public_key_pem(made.signer.public_key))
    code, out = _verify([str(folder), "--key", str(key)], capsys)
    assert (code, out.splitlines()[-1].split(":")[0]) == (0, "VERIFIED")
    (folder / "calls.json").write_bytes(b"[]")
    code, out = _verify([str(folder), "--key", str(key)], capsys)
    assert code == 1
    assert out.splitlines()[0].startswith("DIFFERS calls.json: sha256 ")
    code, _ = _verify([str(tmp_path / "absent"), "--key", str(key)], capsys)
    assert code == 2
    other = tmp_path / "other.pub"
    other.write_bytes(public_key_pem(CryptoSigner.generate_ed25519().public_key))
    code, out = _verify([str(folder), "--key", str(other)], capsys)
    assert code == 1 and "DIFFERS signature: not made by the key given" in out


@pytest.mark.integration  # moto's S3, in this process
def test_the_command_reads_a_store_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto import mock_aws

    made = attested_run()
    key = tmp_path / "attestation.pub"
    key.write_bytes(public_key_pem(made.signer.public_key))
    with mock_aws():
        import boto3

        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="reports")
        for name, data in made.files.items():
            s3.put_object(Bucket="reports", Key=f"reports/rfp-001/run/{name}", Body=data)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        code, out = _verify(["s3://reports/reports/rfp-001/run", "--key", str(key)], capsys)
        assert code == 0, out
        s3.put_object(Bucket="reports", Key="reports/rfp-001/run/report.html", Body=b"x")
        code, out = _verify(["s3://reports/reports/rfp-001/run/", "--key", str(key)], capsys)
        assert code == 1 and out.startswith("DIFFERS report.html: sha256 ")


def test_the_run_signs_with_kms_in_the_cluster_and_its_own_key_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.controller.signing_key import KMS_KEY_VARIABLE, kms_key, local_key_path
    from app.core import cluster_env

    for name in (KMS_KEY_VARIABLE, cluster_env.MODE, cluster_env.REHEARSAL, "ANALYST_SIGNING_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(cluster_env.ROLE_NAME, "analyst-role-1234")
    assert kms_key() is None
    assert local_key_path().parts[-2:] == ("procurement-analyst", "attestation-key.pem")
    monkeypatch.setenv(cluster_env.MODE, cluster_env.CLUSTER_MODE)
    assert kms_key() == "alias/analyst-role-1234-signing"
    assert str(local_key_path()).startswith(cluster_env.RUN_DIR + "/")
    monkeypatch.setenv(cluster_env.REHEARSAL, cluster_env.REHEARSAL_ON)
    assert kms_key() is None
    monkeypatch.setenv(KMS_KEY_VARIABLE, "arn:aws:kms:us-west-2:123456789012:key/x")
    assert kms_key() == "arn:aws:kms:us-west-2:123456789012:key/x"


def test_the_installation_key_is_among_what_a_runs_files_are_scanned_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config" / "key.pem"
    monkeypatch.setenv("ANALYST_SIGNING_KEY", str(path))
    monkeypatch.delenv("ANALYST_SIGNING_KMS_KEY", raising=False)
    assert local_key_needles() == {}, "no key made yet: nothing of it can be in a file"
    local_signer(path)
    needles = local_key_needles()
    assert set(needles) == {"the signing key (PEM)", "the signing key (raw)"}
    assert len(needles["the signing key (raw)"]) == 32  # an Ed25519 private key
    pem = path.read_bytes()
    with pytest.raises(KeyLeak, match=r"the signing key \(PEM\) in notes.txt"):
        scan_documents({"notes.txt": b"x" + pem + b"y", "clean.json": b"{}"}, needles)
    scan_documents({"clean.json": b"{}"}, needles)  # the control: a file without it passes
    monkeypatch.setenv("ANALYST_SIGNING_KMS_KEY", "alias/analyst-signing")
    assert local_key_needles() == {}, "a run that signs with KMS holds no private key"
