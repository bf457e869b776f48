"""`verify RUN_DIR_OR_S3_PREFIX`: whether a stored run's signed statement holds, read from its
folder or its store prefix, against a public key and a folder of committed policies of the
reviewer's choosing (app/report/verification.py decides; this reads and prints).

Each file is read bounded and never followed (a link in the run folder is refused as absent);
each difference is printed on a line of its own, escaped, then one line saying what was proven
and what was skipped. Exit 0 only when everything holds, 1 when anything differs, 2 for a
source, key or folder that cannot be read.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from app.controller.signing_key import KmsSigner, local_key_path, local_public_key
from app.core.errors import BadInput
from app.core.escaping import escaped
from app.core.repo import POLICIES_DIR
from app.report.attestation import MAX_ATTESTATION_BYTES, key_from_pem
from app.report.statement import ATTESTATION_NAME, SUBJECT_NAMES
from app.report.verification import Verdict, verify_run

READ_NAMES: Final = (*SUBJECT_NAMES, ATTESTATION_NAME)
MAX_FILE_BYTES: Final = 64 * 1024 * 1024
S3_SCHEME: Final = "s3://"


@dataclass(frozen=True)
class VerifyRequest:
    source: str
    key: Path | None = None
    kms_key: str | None = None
    policy_dir: Path | None = None


def _limit(name: str) -> int:
    return MAX_ATTESTATION_BYTES if name == ATTESTATION_NAME else MAX_FILE_BYTES


def folder_files(folder: Path) -> dict[str, bytes]:
    if not folder.is_dir():
        raise BadInput(f"{folder}: not a run's folder", "give the folder a run's report is in")
    found: dict[str, bytes] = {}
    for name in READ_NAMES:
        try:
            descriptor = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise BadInput(f"{folder / name}: cannot be read ({error.strerror})") from error
        with os.fdopen(descriptor, "rb") as opened:
            if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode):
                raise BadInput(f"{folder / name}: not a regular file")
            data = opened.read(_limit(name) + 1)
        if len(data) > _limit(name):
            raise BadInput(f"{folder / name}: larger than {_limit(name)} bytes")
        found[name] = data
    return found


def store_files(uri: str, s3: Any) -> dict[str, bytes]:
    """The run's files under an ``s3://bucket/reports/<case>/<run>/`` prefix."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, prefix = uri[len(S3_SCHEME) :].partition("/")
    if not bucket:
        raise BadInput(f"{uri}: no bucket", "give s3://BUCKET/reports/CASE/RUN/")
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    found: dict[str, bytes] = {}
    for name in READ_NAMES:
        try:
            answer = s3.get_object(Bucket=bucket, Key=prefix + name)
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in ("NoSuchKey", "404"):
                continue
            raise BadInput(f"{uri}{name}: cannot be read ({code})") from error
        except BotoCoreError as error:
            raise BadInput(f"{uri}{name}: cannot be read ({error})") from error
        if int(answer.get("ContentLength", 0)) > _limit(name):
            raise BadInput(f"{uri}{name}: larger than {_limit(name)} bytes")
        found[name] = answer["Body"].read(_limit(name) + 1)
    return found


def _keys(request: VerifyRequest, session: Any) -> list[Any]:
    if request.key is not None:
        try:
            return [key_from_pem(request.key.read_bytes())]
        except (OSError, ValueError) as error:
            raise BadInput(f"{request.key}: {error}", "give a PEM public key") from error
    if request.kms_key is not None:
        return [KmsSigner(session().client("kms"), request.kms_key).public_key]
    return [local_public_key(local_key_path())]


def _session() -> Any:
    import boto3

    return boto3.Session()


def verify(request: VerifyRequest, stream: TextIO, session: Any = _session) -> int:
    if request.source.startswith(S3_SCHEME):
        files = store_files(request.source, session().client("s3"))
    else:
        files = folder_files(Path(request.source))
    policy_dir = request.policy_dir or POLICIES_DIR
    if not policy_dir.is_dir():
        raise BadInput(f"{policy_dir}: not a folder", "give --policy-dir a checkout's policies/")
    verdict: Verdict = verify_run(files, _keys(request, session), policy_dir)
    for problem in verdict.problems:
        print(f"DIFFERS {escaped(problem)}", file=stream)
    print(escaped(verdict.line()), file=stream, flush=True)
    return 0 if verdict.holds else 1
