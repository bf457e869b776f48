"""The controller's S3 access to the case store, the same in local and cluster mode.

Only the clients differ: locally they point at the moto stand-in with the analyst's assumed
role credentials from a file; in the cluster they use the default credential chain (Pod
Identity) and the region from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from app.core.errors import RunStopped

MAX_OBJECT_BYTES = 16 * 1024 * 1024
OK = "OK"


class StoreError(RunStopped):
    """An S3 call failed for a reason other than the refusal a check expects."""


@dataclass(frozen=True)
class AwsDeadline:
    """How long one AWS call may take, and which service it is, for the line that says it
    did not answer. Each attempt has ``connect_s`` to connect and ``read_s`` for each read;
    ``attempts`` in all (botocore's standard retry mode between them)."""

    service: str
    connect_s: float
    read_s: float
    attempts: int

    def config(self, **extra: Any) -> Config:
        return Config(
            connect_timeout=self.connect_s,
            read_timeout=self.read_s,
            retries={"mode": "standard", "total_max_attempts": self.attempts},
            **extra,
        )

    @property
    def most_s(self) -> float:
        """The longest a call can take before it is reported as unanswered."""
        return self.attempts * (self.connect_s + self.read_s)

    def no_answer(self, error: BotoCoreError) -> str:
        """What a call that got no answer says: the service, and whether it stalled or went."""
        if isinstance(error, ReadTimeoutError):
            return (
                f"{self.service} did not answer within {self.read_s:.0f}s "
                f"({self.attempts} {'try' if self.attempts == 1 else 'tries'}): it is stalled"
            )
        if isinstance(error, ConnectTimeoutError):
            return f"{self.service} took no connection within {self.connect_s:.0f}s"
        if isinstance(error, (EndpointConnectionError, ConnectionClosedError)):
            return f"{self.service} is gone (its connection was refused or closed): {error}"
        return f"{self.service} gave no answer: {error}"


# The cluster's S3 and STS: botocore's standard three tries, each bounded.
CLUSTER_DEADLINE: Final = AwsDeadline("AWS", connect_s=10.0, read_s=30.0, attempts=3)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


class CaseStore:
    """Objects of one bucket; ``try_*`` return a refusal's error code instead of raising."""

    def __init__(
        self, s3: Any, sts: Any, bucket: str, deadline: AwsDeadline = CLUSTER_DEADLINE
    ) -> None:
        self.s3 = s3
        self.sts = sts
        self.bucket = bucket
        self.deadline = deadline

    @classmethod
    def from_session(
        cls,
        session: boto3.Session,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        deadline: AwsDeadline = CLUSTER_DEADLINE,
    ) -> CaseStore:
        # Path-style addressing: the local endpoint is an IP address, where virtual-host
        # style (bucket.127.0.0.1) cannot resolve; S3 accepts both.
        config = deadline.config(s3={"addressing_style": "path"})
        s3 = session.client("s3", endpoint_url=endpoint_url, config=config)
        sts = session.client("sts", endpoint_url=endpoint_url, config=config)
        return cls(s3, sts, bucket, deadline)

    def _where(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def get(self, key: str) -> bytes:
        try:
            reply = self.s3.get_object(Bucket=self.bucket, Key=key)
            body = reply["Body"]
            try:
                if reply.get("ContentLength", 0) > MAX_OBJECT_BYTES:
                    raise StoreError(f"{self._where(key)} is over {MAX_OBJECT_BYTES} bytes")
                # Bounded whatever the length header said, or whether there was one.
                data: bytes = body.read(MAX_OBJECT_BYTES + 1)
            finally:
                body.close()
            if len(data) > MAX_OBJECT_BYTES:
                raise StoreError(f"{self._where(key)} is over {MAX_OBJECT_BYTES} bytes")
            return data
        except ClientError as exc:
            raise StoreError(
                f"cannot read {self._where(key)}: {_code(exc)}; check the object exists "
                "and the analyst role may read it"
            ) from exc
        except BotoCoreError as exc:
            raise StoreError(
                f"cannot read {self._where(key)}: {self.deadline.no_answer(exc)}"
            ) from None

    def put(self, key: str, data: bytes) -> None:
        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        except ClientError as exc:
            raise StoreError(
                f"cannot write {self._where(key)}: {_code(exc)}; the analyst role may write "
                "only under reports/<case>/"
            ) from exc
        except BotoCoreError as exc:
            raise StoreError(
                f"cannot write {self._where(key)}: {self.deadline.no_answer(exc)}"
            ) from None

    def caller_identity(self) -> dict[str, str]:
        """Account, Arn and UserId of the credentials in use (never the credentials)."""
        try:
            reply = self.sts.get_caller_identity()
        except ClientError as exc:
            raise StoreError(f"cannot ask STS who this controller is: {exc}") from exc
        except BotoCoreError as exc:
            raise StoreError(
                f"cannot ask STS who this controller is: {self.deadline.no_answer(exc)}"
            ) from None
        return {name: reply[name] for name in ("Account", "Arn", "UserId")}

    def _attempt(self, operation: str, key: str, call: Any) -> str:
        """The error code of one refused call, or "OK"; a failure to ask at all raises."""
        try:
            call()
        except ClientError as exc:
            return _code(exc)
        except BotoCoreError as exc:
            # No answer is not a refusal: the check must not read a dead endpoint as a denial.
            raise StoreError(
                f"{operation} {self._where(key)} got no answer: {self.deadline.no_answer(exc)}"
            ) from None
        return OK

    def try_get(self, key: str) -> str:
        def call() -> None:
            self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].close()

        return self._attempt("GetObject", key, call)

    def try_put(self, key: str, data: bytes = b"probe") -> str:
        return self._attempt(
            "PutObject", key, lambda: self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
        )

    def try_delete(self, key: str) -> str:
        return self._attempt(
            "DeleteObject", key, lambda: self.s3.delete_object(Bucket=self.bucket, Key=key)
        )
