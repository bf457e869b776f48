"""The deployed S3 permissions policy, evaluated for real by IAM in a moto server.

The policy documents are the ones the program registers on its `aws:iam/rolePolicy:RolePolicy`
resources (taken from the recorded inputs, never re-rendered), attached to a role in a moto
server that enforces IAM once its setup calls are spent (INITIAL_NO_AUTH_ACTION_COUNT). The
test assumes that role and checks what it may and may not do with the seeded objects.

Limits: moto evaluates actions and resources but ignores policy conditions and session
policies, so the Bedrock statement's InferenceProfileArn condition is not exercised here.
EKS Pod Identity cannot assume a role in moto, so the role's trust policy here names the
test's operator instead; the deployed trust policy is checked in test_identity.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from app.controller.services.moto_server import MotoServer
from tests.support.stack_run import StackRun

pytestmark = pytest.mark.integration

REGION = "us-west-2"
# Setup requests made before IAM is enforced; counted in _set_up below. One more and the
# setup itself would be refused, one fewer and the first assertion would run unenforced.
SETUP_CALLS = 12
RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"})


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # The controller's own moto: on a port reserved for it until it listens, so a test running
    # beside this one cannot take the port between its choice and moto's bind.
    server = MotoServer(tmp_path_factory.mktemp("moto"), no_auth_requests=SETUP_CALLS)
    try:
        server.wait_ready()
        yield server.endpoint_url
    finally:
        process = server.detach()
        if process is not None:
            process.terminate()
            process.wait(timeout=10)


def _client(service: str, endpoint: str, **credentials: str) -> Any:
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=endpoint,
        config=RETRIES,
        aws_access_key_id=credentials.get("key", "setup"),
        aws_secret_access_key=credentials.get("secret", "setup"),
        aws_session_token=credentials.get("token"),
    )


def _set_up(stack: StackRun, endpoint: str) -> tuple[str, dict[str, str]]:
    """Seed the bucket and create the role and an operator; return the role ARN and the
    operator's keys. Each numbered call below is one of SETUP_CALLS."""
    bucket = stack.outputs["bucket"]
    s3 = _client("s3", endpoint)
    iam = _client("iam", endpoint)
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})  # 1
    objects = stack.of_type("aws:s3/bucketObjectv2:BucketObjectv2")
    assert len(objects) == 5
    for obj in objects:  # 2-6
        body = Path(obj["inputs"]["source"]["__asset__"]).read_bytes()
        s3.put_object(Bucket=bucket, Key=obj["inputs"]["key"], Body=body)
    operator_arn = iam.create_user(UserName="operator")["User"]["Arn"]  # 7
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": operator_arn}, "Action": "sts:AssumeRole"}
        ],
    }
    role_arn = iam.create_role(RoleName="analyst", AssumeRolePolicyDocument=json.dumps(trust))[
        "Role"
    ]["Arn"]  # 8
    # The identity's own two (the signing key's is tested in test_signing_key.py).
    policies = [
        p
        for p in stack.of_type("aws:iam/rolePolicy:RolePolicy")
        if p["name"].startswith("identity-")
    ]
    assert len(policies) == 2
    for policy in policies:  # 9-10
        iam.put_role_policy(
            RoleName="analyst", PolicyName=policy["name"], PolicyDocument=policy["inputs"]["policy"]
        )
    # The operator may assume the role, and read anything: the control that shows an object
    # the role is refused does exist and is readable under another policy.
    operator_policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": role_arn},
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/*"},
        ],
    }
    iam.put_user_policy(
        UserName="operator", PolicyName="operator", PolicyDocument=json.dumps(operator_policy)
    )  # 11
    keys = iam.create_access_key(UserName="operator")["AccessKey"]  # 12
    return role_arn, {"key": keys["AccessKeyId"], "secret": keys["SecretAccessKey"]}


@dataclass(frozen=True)
class Principals:
    """S3 clients for the operator (the control) and for the assumed analyst role."""

    bucket: str
    operator: Any
    analyst: Any


@pytest.fixture(scope="module")
def principals(default_stack: StackRun, moto_endpoint: str) -> Principals:
    role_arn, operator = _set_up(default_stack, moto_endpoint)
    # IAM is enforced from here on.
    sts = _client("sts", moto_endpoint, **operator)
    creds = sts.assume_role(RoleArn=role_arn, RoleSessionName="analyst")["Credentials"]
    analyst = _client(
        "s3",
        moto_endpoint,
        key=creds["AccessKeyId"],
        secret=creds["SecretAccessKey"],
        token=creds["SessionToken"],
    )
    return Principals(
        default_stack.outputs["bucket"], _client("s3", moto_endpoint, **operator), analyst
    )


def _refused(call: Any, **kwargs: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response["Error"]["Code"]


def test_iam_is_enforced_for_an_unknown_caller(principals: Principals, moto_endpoint: str) -> None:
    stranger = _client("s3", moto_endpoint, key="AKIAUNKNOWN000000000", secret="nope")
    code = _refused(stranger.get_object, Bucket=principals.bucket, Key="cases/rfp-001/case.json")
    assert code == "InvalidAccessKeyId", (
        "the moto server is not enforcing IAM; every other result is void"
    )


@pytest.mark.parametrize("key", ["cases/rfp-001/case.json", "proposals/rfp-001/northstar.json"])
def test_the_role_reads_its_case(principals: Principals, key: str) -> None:
    body = principals.analyst.get_object(Bucket=principals.bucket, Key=key)["Body"].read()
    assert json.loads(body)


def test_the_role_writes_a_report_under_its_case(principals: Principals) -> None:
    key = "reports/rfp-001/run-0001/recommendation.md"
    principals.analyst.put_object(Bucket=principals.bucket, Key=key, Body=b"# report\n")
    assert (
        principals.analyst.get_object(Bucket=principals.bucket, Key=key)["Body"].read()
        == b"# report\n"
    )


def test_the_role_may_not_overwrite_a_proposal(principals: Principals) -> None:
    key = "proposals/rfp-001/harbor.json"
    code = _refused(principals.analyst.put_object, Bucket=principals.bucket, Key=key, Body=b"{}")
    assert code == "AccessDenied"
    assert json.loads(
        principals.operator.get_object(Bucket=principals.bucket, Key=key)["Body"].read()
    )


def test_the_role_may_not_delete_a_proposal(principals: Principals) -> None:
    key = "proposals/rfp-001/cedar.json"
    assert (
        _refused(principals.analyst.delete_object, Bucket=principals.bucket, Key=key)
        == "AccessDenied"
    )
    assert principals.operator.get_object(Bucket=principals.bucket, Key=key)["ContentLength"] > 0


def test_the_role_may_not_read_another_case(principals: Principals) -> None:
    key = "cases/rfp-other/case.json"
    assert (
        _refused(principals.analyst.get_object, Bucket=principals.bucket, Key=key) == "AccessDenied"
    )
    # The control: the object is there, and readable under a policy that allows it.
    assert (
        json.loads(
            principals.operator.get_object(Bucket=principals.bucket, Key=key)["Body"].read()
        )["case_id"]
        == "rfp-other"
    )


def test_the_role_may_not_write_outside_its_reports(principals: Principals) -> None:
    key = "reports/rfp-other/run-0001/recommendation.md"
    assert (
        _refused(principals.analyst.put_object, Bucket=principals.bucket, Key=key, Body=b"x")
        == "AccessDenied"
    )
