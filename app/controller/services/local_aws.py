"""S3, IAM and STS on loopback for a local run: a moto server with IAM enforcement on.

The analyst gets a role whose only permissions are ``render_permissions_policy`` (the policy
the stack deploys), and the controller uses temporary credentials from assuming that role,
so every AccessDenied a local run shows is a real policy evaluation.

How enforcement is switched on: moto authenticates nothing until it has served
``INITIAL_NO_AUTH_ACTION_COUNT`` authorised requests, then checks the signature and the
policies of every later one. The count is set to exactly the bootstrap calls below (create an
admin user, give it an allow-all inline policy, create its access key); every later call,
the admin's own included, is signed and evaluated, and setup proves it by checking that the
bootstrap's throwaway credentials are refused. The admin's keys live only in this object's
memory: never in os.environ, never in a file.

What moto does not evaluate, so what a local AccessDenied cannot prove:
  - policy Conditions (only trust-policy conditions such as sts:ExternalId are read);
  - session policies passed to AssumeRole (stored, never applied);
  - CopyObject's source: only the destination key is authorised;
  - resource-based policies (bucket policies) and permission boundaries.
Its /moto-api/ endpoints (reset, reset-auth) take no credentials at all: the server is bound
to 127.0.0.1 and no tool process has a route to it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.loaders import Loader, create_loader

from app.controller.services.moto_server import (
    STARTUP_TIMEOUT_SECONDS,
    LocalAwsError,
    MotoServer,
    exit_status,
    moto_failure,
)
from app.controller.services.processes import LoopbackService
from app.controller.services.seeds import SeedCase
from app.controller.store import AwsDeadline, CaseStore
from app.core.endpoints import AwsCredentialFile, HostPort
from app.core.iam_policy import render_permissions_policy
from app.core.run_tree import RunPaths, ToolIdentity, create_secrets_dir, write_secret_file

# The services the stand-in is asked for.
Service = Literal["iam", "s3", "sts"]

LOCAL_BUCKET = "analyst-local"
LOCAL_REGION = "us-east-1"
ROLE_NAME = "analyst"
PROFILE = "analyst"
ADMIN_USER = "analyst-local-admin"
CREDENTIALS_FILE = "aws-credentials"
MOTO = "moto (the local S3, IAM and STS)"
# Every later call, the run's own included: the slowest measured was 0.22 s (CreateBucket, at
# a load average of 3), most take 7 to 45 ms; 10 s is forty times the slowest. One try: a
# stalled moto is not helped by asking again, and a retried CreateUser would not be the same.
LOCAL_DEADLINE = AwsDeadline(MOTO, connect_s=5.0, read_s=10.0, attempts=1)
BOOTSTRAP_DEADLINE = AwsDeadline(MOTO, connect_s=5.0, read_s=STARTUP_TIMEOUT_SECONDS, attempts=1)
# The requests moto serves before enforcing IAM. Each is one HTTP request (retries are off for
# the bootstrap client), so the environment variable below is derived from this tuple.
BOOTSTRAP_CALLS = ("iam:CreateUser", "iam:PutUserPolicy", "iam:CreateAccessKey")
# Any key id works while moto is not yet enforcing; afterwards these are unknown to it.
_BOOTSTRAP_KEY = ("bootstrap-not-a-key", "bootstrap-not-a-secret")

_ALLOW_ALL = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}


@functools.cache
def _service_models() -> Loader:
    """botocore's data loader, shared by every session of this process: each session would
    otherwise read and parse the same service models (S3's, IAM's, STS's) again."""
    return create_loader()


def _botocore_session() -> botocore.session.Session:
    core = botocore.session.Session()
    core.register_component("data_loader", _service_models())
    return core


@dataclass(frozen=True)
class LocalAwsSettings:
    """How the controller reaches the local AWS stand-in, as the analyst and nobody else."""

    endpoint_url: str
    region: str
    bucket: str
    credentials_file: Path
    profile: str
    expected_role_arn: str  # the role: arn:aws:iam::<account>:role/analyst
    expected_caller_arn: str  # who STS says the controller is: the role's assumed session

    @property
    def credential(self) -> AwsCredentialFile:
        return AwsCredentialFile(self.credentials_file, "the AWS credential file")

    @property
    def endpoint(self) -> HostPort:
        host, _, port = self.endpoint_url.removeprefix("http://").partition(":")
        return HostPort(host, int(port))

    def session(self) -> boto3.Session:
        """A session built only from the credentials file: environment credentials are ignored."""
        core = _botocore_session()
        core.set_config_variable("credentials_file", str(self.credentials_file))
        # No ~/.aws/config: a developer's profile must not change what the run uses.
        core.set_config_variable("config_file", os.devnull)
        # An explicit profile also makes botocore skip the AWS_* environment variables.
        core.set_config_variable("profile", self.profile)
        core.set_config_variable("region", self.region)
        return boto3.Session(botocore_session=core)

    def store(self) -> CaseStore:
        return CaseStore.from_session(
            self.session(), self.bucket, endpoint_url=self.endpoint_url, deadline=LOCAL_DEADLINE
        )


def _call_of(error: BotoCoreError | ClientError) -> str:
    """The operation or the address a failed call was making, as botocore names it."""
    if isinstance(error, ClientError):
        return error.operation_name
    kwargs = getattr(error, "kwargs", {})
    return str(kwargs.get("endpoint_url") or kwargs.get("operation_name") or type(error).__name__)


class LocalAws(LoopbackService):
    """Starts moto, provisions the analyst's world, and stops moto when the block ends."""

    def __init__(
        self,
        paths: RunPaths,
        tool: ToolIdentity,
        case: SeedCase,
        other: SeedCase,
        *,
        bucket: str = LOCAL_BUCKET,
        region: str = LOCAL_REGION,
    ) -> None:
        self.paths = paths
        self.tool = tool
        self.case = case
        self.other = other
        self.bucket = bucket
        self.region = region
        self.state_dir = paths.top / "aws"
        self._moto: MotoServer | None = None
        self._endpoint_url = ""
        self._admin: dict[str, str] = {}
        # One session for every client made here. It holds no credentials: each client is
        # given its own.
        self._boto = boto3.session.Session(botocore_session=_botocore_session())

    # -- moto -----------------------------------------------------------------------------

    def start(self) -> None:
        """Starts moto without waiting for it: ``provision`` waits for it first."""
        self.state_dir.mkdir(mode=0o700)
        self._moto = MotoServer(self.state_dir, len(BOOTSTRAP_CALLS))
        self._endpoint_url = self._moto.endpoint_url

    def _client(self, service: Service, key: tuple[str, str], *, bootstrap: bool = False) -> Any:
        # Credentials are passed to the client, never through the environment, so nothing
        # else in this process can pick them up. One try each: moto counts the bootstrap's
        # requests, and none is helped by a second.
        deadline = BOOTSTRAP_DEADLINE if bootstrap else LOCAL_DEADLINE
        config: Config = deadline.config(s3={"addressing_style": "path"})
        return self._boto.client(
            service,
            endpoint_url=self._endpoint_url,
            region_name=self.region,
            aws_access_key_id=key[0],
            aws_secret_access_key=key[1],
            config=config,
        )

    # -- provisioning -----------------------------------------------------------------------

    def _bootstrap_admin(self) -> tuple[str, str]:
        iam = self._client("iam", _BOOTSTRAP_KEY, bootstrap=True)
        sent: list[str] = []
        # Counts the HTTP requests actually sent, which is what moto counts.
        iam.meta.events.register("before-send.iam", lambda **kwargs: sent.append("iam"))
        iam.create_user(UserName=ADMIN_USER)
        iam.put_user_policy(
            UserName=ADMIN_USER, PolicyName="local-admin", PolicyDocument=json.dumps(_ALLOW_ALL)
        )
        created = iam.create_access_key(UserName=ADMIN_USER)["AccessKey"]
        if len(sent) != len(BOOTSTRAP_CALLS):
            raise LocalAwsError(
                f"the bootstrap sent {len(sent)} requests but moto was told to leave "
                f"{len(BOOTSTRAP_CALLS)} unauthenticated; keep BOOTSTRAP_CALLS in step"
            )
        return created["AccessKeyId"], created["SecretAccessKey"]

    def _require_enforcement(self) -> None:
        """The bootstrap key must now be refused, or IAM is not being evaluated at all."""
        try:
            self._client("sts", _BOOTSTRAP_KEY, bootstrap=True).get_caller_identity()
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "InvalidClientTokenId":
                return
            raise
        raise LocalAwsError(
            "moto accepted an unknown access key after the bootstrap calls, so IAM is not "
            "enforced; check INITIAL_NO_AUTH_ACTION_COUNT reaches moto_listener"
        )

    def _seed(self, admin: tuple[str, str]) -> str:
        if self.other.case_id == self.case.case_id:
            raise LocalAwsError(
                f"the control's case is the run's own case {self.case.case_id}; "
                "the AccessDenied control needs a different case"
            )
        s3 = self._client("s3", admin)
        s3.create_bucket(Bucket=self.bucket)  # us-east-1 takes no LocationConstraint
        for item in self.case.store_objects() + self.other.store_objects():
            s3.put_object(Bucket=self.bucket, Key=item.key, Body=item.data)
        return self.case.case_id

    def _analyst_role(self, admin: tuple[str, str], admin_arn: str, case_id: str) -> str:
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": admin_arn}, "Action": "sts:AssumeRole"}
            ],
        }
        iam = self._client("iam", admin)
        role_arn = iam.create_role(RoleName=ROLE_NAME, AssumeRolePolicyDocument=json.dumps(trust))[
            "Role"
        ]["Arn"]
        iam.put_role_policy(
            RoleName=ROLE_NAME,
            PolicyName="analyst-permissions",
            PolicyDocument=json.dumps(render_permissions_policy(self.bucket, case_id)),
        )
        return str(role_arn)

    def _write_credentials(self, assumed: dict[str, Any]) -> Path:
        secrets_dir = (
            self.paths.secrets
            if self.paths.secrets.is_dir()
            else create_secrets_dir(self.paths, self.tool)
        )
        creds = assumed["Credentials"]
        text = (
            f"[{PROFILE}]\n"
            f"aws_access_key_id = {creds['AccessKeyId']}\n"
            f"aws_secret_access_key = {creds['SecretAccessKey']}\n"
            f"aws_session_token = {creds['SessionToken']}\n"
        )
        path = secrets_dir / CREDENTIALS_FILE
        write_secret_file(path, text.encode("ascii"), self.tool)
        return path

    def __enter__(self) -> LocalAwsSettings:
        self.start()
        return self.provision()

    def provision(self) -> LocalAwsSettings:
        """Bootstraps moto's admin, seeds the store and the analyst's role, and writes the
        analyst's credentials; stops moto if any of it fails."""
        try:
            if self._moto is None:
                raise LocalAwsError("moto was not started; use the stand-in inside `with`")
            self._moto.wait_ready()
            try:
                role_arn, assumed = self._provision_world()
            except (BotoCoreError, ClientError) as error:
                raise self._setup_failed(error) from None
            credentials_file = self._write_credentials(assumed)
        except BaseException:
            self.stop()
            raise
        return LocalAwsSettings(
            endpoint_url=self._endpoint_url,
            region=self.region,
            bucket=self.bucket,
            credentials_file=credentials_file,
            profile=PROFILE,
            expected_role_arn=role_arn,
            expected_caller_arn=str(assumed["AssumedRoleUser"]["Arn"]),
        )

    def _provision_world(self) -> tuple[str, dict[str, Any]]:
        """The calls that give the analyst its world in moto: the role's ARN and the
        credentials of its assumed session."""
        admin = self._bootstrap_admin()
        self._require_enforcement()
        self._admin = {"key": admin[0], "secret": admin[1]}
        admin_arn = self._client("sts", admin).get_caller_identity()["Arn"]
        case_id = self._seed(admin)
        role_arn = self._analyst_role(admin, admin_arn, case_id)
        session_name = f"analyst-{self.paths.run_id[:8]}"
        assumed = self._client("sts", admin).assume_role(
            RoleArn=role_arn, RoleSessionName=session_name
        )
        return role_arn, assumed

    def _setup_failed(self, error: BotoCoreError | ClientError) -> LocalAwsError:
        """One line for a call of the set-up that failed: moto had started (it said it
        listens), so the fault is moto's now, never its installation."""
        process = None if self._moto is None else self._moto.process
        code = exit_status(process)
        if code is not None:
            return LocalAwsError(
                f"moto exited {code} while the run set up the local AWS stand-in "
                f"({_call_of(error)}): {moto_failure(process, self.state_dir)}",
                "moto started and then died; see its output above, and run again",
            )
        if isinstance(error, ClientError):
            return LocalAwsError(
                f"moto refused a call of the set-up ({_call_of(error)}): {error}",
                "moto's version may not be requirements.lock's; reinstall requirements-local.txt",
            )
        deadline = LOCAL_DEADLINE if self._admin else BOOTSTRAP_DEADLINE
        return LocalAwsError(
            f"{deadline.no_answer(error)}, while the run set up the local AWS stand-in",
            "the machine may be overloaded, or moto was stopped; run again",
        )

    def running(self) -> subprocess.Popen[bytes] | None:
        return None if self._moto is None else self._moto.process

    def admin_store(self) -> CaseStore:
        """The store as the local admin: the control that shows an object the analyst is
        refused does exist. Local only; the cluster has no admin in the controller."""
        if not self._admin:
            raise LocalAwsError("the local AWS stand-in is not running; use it inside `with`")
        admin = (self._admin["key"], self._admin["secret"])
        return CaseStore(
            self._client("s3", admin), self._client("sts", admin), self.bucket, LOCAL_DEADLINE
        )

    def detach(self) -> subprocess.Popen[bytes] | None:
        """Also forgets the admin's keys."""
        self._admin = {}
        moto, self._moto = self._moto, None
        return None if moto is None else moto.detach()
