"""The local AWS stand-in with IAM enforced: the analyst's policy is really evaluated."""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from app.controller.services import moto_server
from app.controller.services.local_aws import LocalAws, LocalAwsSettings
from app.controller.services.moto_server import MotoUnavailable
from app.controller.services.processes import stop_process
from app.controller.services.seeds import control_seed, run_seed
from app.controller.store import OK, CaseStore
from app.core.case import load_case_folder
from app.core.run_tree import ToolIdentity, create_run

pytestmark = pytest.mark.integration

CASE_DIR = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAws, LocalAwsSettings]]:
    tool = ToolIdentity.for_this_controller()
    paths = create_run(tmp_path_factory.mktemp("runs"), tool)
    local = LocalAws(paths, tool, run_seed(load_case_folder(CASE_DIR)), control_seed("rfp-001"))
    with local as settings:
        yield local, settings


@pytest.fixture(scope="module")
def analyst(aws: tuple[LocalAws, LocalAwsSettings]) -> CaseStore:
    return aws[1].store()


def test_the_controller_is_the_assumed_analyst_role(
    aws: tuple[LocalAws, LocalAwsSettings], analyst: CaseStore
) -> None:
    settings = aws[1]
    identity = analyst.caller_identity()
    assert identity["Arn"] == settings.expected_caller_arn
    assert settings.expected_caller_arn.startswith(
        "arn:aws:sts::123456789012:assumed-role/analyst/"
    )
    assert settings.expected_role_arn == "arn:aws:iam::123456789012:role/analyst"
    assert settings.credentials_file.stat().st_mode & 0o777 == 0o440
    assert settings.credential.description == "the AWS credential file"


def test_analyst_permissions_are_enforced(analyst: CaseStore) -> None:
    proposal = "proposals/rfp-001/northstar.json"
    assert analyst.get(proposal) == (CASE_DIR / "proposals" / "northstar.json").read_bytes()
    assert analyst.try_put("reports/rfp-001/run/recommendation.md", b"# report") == OK
    assert analyst.get("reports/rfp-001/run/recommendation.md") == b"# report"
    assert analyst.try_put(proposal, b"tampered") == "AccessDenied"
    assert analyst.try_delete(proposal) == "AccessDenied"
    assert analyst.try_get("cases/rfp-other/case.json") == "AccessDenied"
    assert analyst.try_put("reports/rfp-other/run/x.md", b"x") == "AccessDenied"


def test_the_refused_object_exists(aws: tuple[LocalAws, LocalAwsSettings]) -> None:
    admin = aws[0].admin_store()
    assert admin.try_get("cases/rfp-other/case.json") == OK
    # The proposal the analyst could not overwrite or delete is still the original.
    original = (CASE_DIR / "proposals" / "northstar.json").read_bytes()
    assert admin.get("proposals/rfp-001/northstar.json") == original


def test_unknown_credentials_are_refused(aws: tuple[LocalAws, LocalAwsSettings]) -> None:
    settings = aws[1]
    s3 = boto3.session.Session().client(
        "s3",
        endpoint_url=settings.endpoint_url,
        region_name=settings.region,
        aws_access_key_id="AKIAUNKNOWNUNKNOWN00",
        aws_secret_access_key="not-a-secret",
        config=Config(s3={"addressing_style": "path"}),
    )
    with pytest.raises(ClientError) as refused:
        s3.get_object(Bucket=settings.bucket, Key="proposals/rfp-001/northstar.json")
    assert refused.value.response["Error"]["Code"] == "InvalidAccessKeyId"


def test_session_ignores_environment_credentials(
    aws: tuple[LocalAws, LocalAwsSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = aws[1]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFROMENVIRONMENT0")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "from-environment")
    monkeypatch.setenv("AWS_PROFILE", "someone-else")
    store = settings.store()
    assert store.caller_identity()["Arn"] == settings.expected_caller_arn


def test_the_port_is_the_runs_own_before_moto_has_started(tmp_path: Path) -> None:
    """The port is reserved before moto runs: a socket that does not ask to share it cannot
    bind it (EADDRINUSE). moto binds it itself, says when it listens, and then accepts a
    connection there, from the listening socket its own process holds."""
    moto = moto_server.MotoServer(tmp_path, 0)
    try:
        port = int(moto.endpoint_url.rsplit(":", 1)[1])
        with socket.socket() as other, pytest.raises(OSError) as taken:
            other.bind(("127.0.0.1", port))
        assert taken.value.errno == errno.EADDRINUSE
        moto.wait_ready()
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        assert moto.process is not None
        held = _open_files(moto.process.pid)
        listening = _listening_inodes(port)
        assert listening and {f"socket:[{inode}]" for inode in listening} <= held
    finally:
        stop_process(moto.detach())


def _open_files(pid: int) -> set[str]:
    """What each of the process's descriptors refers to. moto may still be opening and closing
    files: a descriptor listed may be closed before it is read, and is then left out (the
    listening socket is held for moto's life)."""
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return held


def _listening_inodes(port: int) -> set[str]:
    """The inodes of the sockets listening on 127.0.0.1:port (/proc/net/tcp, state 0A)."""
    wanted = f"0100007F:{port:04X}"
    with open("/proc/net/tcp", encoding="ascii") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    return {row[9] for row in rows if row[1] == wanted and row[3] == "0A"}


def test_a_moto_that_cannot_start_stops_the_setup_naming_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        moto_server,
        "_moto_program",
        lambda: [sys.executable, "-c", "import sys; print('no moto here'); sys.exit(3)"],
    )
    tool = ToolIdentity.for_this_controller()
    paths = create_run(tmp_path / "runs", tool)
    local = LocalAws(paths, tool, run_seed(load_case_folder(CASE_DIR)), control_seed("rfp-001"))
    with pytest.raises(MotoUnavailable) as stopped:
        local.__enter__()
    assert stopped.value.exit_code == 3
    assert "moto did not start" in str(stopped.value)
    assert "moto_listener exited 3 (output: no moto here)" in str(stopped.value)
    assert local.pid is None  # stopped
