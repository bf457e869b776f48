"""AWS as the stack makes it, on a moto server with IAM enforcement: the bucket with the objects
the program seeds, and the analyst's role with its trust policy and both permission policies
exactly as the program renders them.

What moto (5.2.5) evaluates, found by running it: identity policies on S3 object calls (the
AccessDenied checks are real). What it does not: a trust policy's `Service` principal (it
compares only an `AWS` principal, and answers a `Service` one with an internal error), and any
trust condition but `sts:ExternalId` (the `aws:RequestTag/...` keys the role is scoped by are
never given a value). So the Pod Identity agent stand-in evaluates the trust policy itself
(`rehearsal/trust.py`), and moto's STS issues each pod's session before enforcement begins.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import boto3
from botocore.config import Config

from app.controller.services.moto_server import MotoServer
from app.controller.services.processes import stop_process
from app.core.iam_policy import pod_identity_trust_policy, render_permissions_policy
from infra.bedrock_policy import bedrock_invoke_policy
from infra.components.storage import seed_objects

from .objects import StackUnderRehearsal

ACCOUNT: Final = "123456789012"  # moto's account
ADMIN: Final = "rehearsal-admin"
_ALLOW_ALL: Final = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}
_ANY_KEY: Final = ("rehearsal-bootstrap", "rehearsal-bootstrap-secret")


@dataclass(frozen=True)
class PodSession:
    """What EKS Pod Identity gives one pod: the session moto issued, and its tags."""

    pod: str
    tags: dict[str, str]
    credentials: dict[str, Any]
    assumed_arn: str


@dataclass
class RehearsalAws:
    """moto with the stack's bucket and role; the admin's keys stay in this object."""

    stack: StackUnderRehearsal
    bucket: str
    role_name: str
    state_dir: Path
    pods: list[str]
    endpoint_url: str = ""
    trust_policy: dict[str, Any] = field(default_factory=dict)
    sessions: dict[str, PodSession] = field(default_factory=dict)
    _process: subprocess.Popen[bytes] | None = None
    _admin: tuple[str, str] = ("", "")

    @property
    def region(self) -> str:
        return self.stack.config.region

    @property
    def cluster_arn(self) -> str:
        return f"arn:aws:eks:{self.region}:{ACCOUNT}:cluster/{self.stack.config.cluster_name}"

    @property
    def role_arn(self) -> str:
        return f"arn:aws:iam::{ACCOUNT}:role/{self.role_name}"

    def client(self, service: str, key: tuple[str, ...]) -> Any:
        return boto3.session.Session().client(
            service,  # type: ignore[call-overload]
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=key[0],
            aws_secret_access_key=key[1],
            aws_session_token=key[2] if len(key) > 2 else None,
            config=Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}),
        )

    def session_tags(self, pod: str) -> dict[str, str]:
        """The session tags EKS Pod Identity sets for a pod of the analyst's service account.
        https://docs.aws.amazon.com/eks/latest/userguide/pod-id-abac.html"""
        return {
            "eks-cluster-arn": self.cluster_arn,
            "eks-cluster-name": self.stack.config.cluster_name,
            "kubernetes-namespace": self.stack.namespace,
            "kubernetes-service-account": self.stack.service_account,
            "kubernetes-pod-name": pod,
            "kubernetes-pod-uid": f"rehearsal-{pod}",
        }

    def start(self) -> None:
        """Bootstrap (unauthenticated, counted), then enforcement, then seeding as the admin."""
        config = self.stack.config
        self.trust_policy = pod_identity_trust_policy(
            cluster_arn=self.cluster_arn,
            namespace=self.stack.namespace,
            service_account=self.stack.service_account,
        )
        permissions = {
            "s3": render_permissions_policy(self.bucket, config.case_id),
            "bedrock": bedrock_invoke_policy(
                model_id=config.model_id, region=self.region, account_id=ACCOUNT, partition="aws"
            ),
        }
        requests = 3 + 1 + len(permissions) + len(self.pods)
        moto = MotoServer(self.state_dir, requests)
        moto.wait_ready()
        self._process, self.endpoint_url = moto.detach(), moto.endpoint_url
        iam = self.client("iam", _ANY_KEY)
        iam.create_user(UserName=ADMIN)
        iam.put_user_policy(
            UserName=ADMIN, PolicyName="admin", PolicyDocument=json.dumps(_ALLOW_ALL)
        )
        key = iam.create_access_key(UserName=ADMIN)["AccessKey"]
        iam.create_role(
            RoleName=self.role_name, AssumeRolePolicyDocument=json.dumps(self.trust_policy)
        )
        for name, document in permissions.items():
            iam.put_role_policy(
                RoleName=self.role_name, PolicyName=name, PolicyDocument=json.dumps(document)
            )
        sts = self.client("sts", _ANY_KEY)
        for pod in self.pods:
            tags = self.session_tags(pod)
            issued = sts.assume_role(
                RoleArn=self.role_arn,
                RoleSessionName=f"eks-{config.cluster_name}-{pod}"[:64],
                Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
            )
            self.sessions[pod] = PodSession(
                pod, tags, issued["Credentials"], issued["AssumedRoleUser"]["Arn"]
            )
        self._admin = (key["AccessKeyId"], key["SecretAccessKey"])
        self._require_enforcement()
        self._seed()

    def _require_enforcement(self) -> None:
        try:
            self.client("sts", _ANY_KEY).get_caller_identity()
        except Exception as error:
            if "InvalidClientTokenId" in str(error):
                return
            raise
        raise RuntimeError("moto accepted an unknown key after the bootstrap: IAM is not enforced")

    def _seed(self) -> None:
        s3 = self.client("s3", self._admin)
        s3.create_bucket(
            Bucket=self.bucket, CreateBucketConfiguration={"LocationConstraint": self.region}
        )
        for seed in seed_objects(self.stack.config.case_id):
            s3.put_object(Bucket=self.bucket, Key=seed.key, Body=seed.data())

    def keys_under(self, prefix: str) -> list[str]:
        """The store's keys under a prefix, read as the admin (the report's landing check)."""
        listed = self.client("s3", self._admin).list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return sorted(item["Key"] for item in listed.get("Contents", []))

    def read(self, key: str) -> bytes:
        """One object of the store, read as the admin (what a Job's run stored)."""
        body = self.client("s3", self._admin).get_object(Bucket=self.bucket, Key=key)["Body"]
        data: bytes = body.read()
        return data

    def stop(self) -> None:
        self._admin = ("", "")
        process, self._process = self._process, None
        stop_process(process)
