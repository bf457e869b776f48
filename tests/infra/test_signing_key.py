"""The attestation signing key: the program creates an asymmetric KMS key whose policy lets only
the analyst's role sign (and denies every other principal), and gives that role kms:Sign on
that key alone; in a moto server enforcing IAM, the role signs (the control) and another
identity is refused with AccessDeniedException.

Limits: moto authorizes a KMS action against the resource "*" (its KMS responses name no
resource), so the role's deployed statement is attached with its resource widened to "*": the
actions it grants are the deployed ones, and the refusal of the other identity is IAM's
evaluation of the action. moto evaluates the identity policies, not a KMS key policy's
principals or conditions
(its key-policy check reads only Deny statements of kms:DescribeKey), so the key policy is
checked here as the document the program deploys; and moto signs a DIGEST message as if it
were the message itself, so its signature is not verified here (tests/unit/test_attestation.py
verifies real signatures).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any
from xml.etree import ElementTree

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from app.controller.signing_key import KmsSigner
from app.core.errors import RunStopped
from app.core.signing_policy import key_alias, render_signing_permissions
from tests.support.stack_run import StackRun

REGION = "us-west-2"
ROLE_ARN = "arn:aws:iam::123456789012:role/"


def test_the_key_is_asymmetric_and_only_the_analyst_role_signs(default_stack: StackRun) -> None:
    key = default_stack.one("aws:kms/key:Key")
    inputs = key["inputs"]
    assert (inputs["customerMasterKeySpec"], inputs["keyUsage"]) == ("ECC_NIST_P256", "SIGN_VERIFY")
    policy = json.loads(inputs["policy"])
    role = default_stack.one("aws:iam/role:Role")
    statements = {s["Sid"]: s for s in policy["Statement"]}
    account = statements["TheAccountAdministersTheKeyButNeverSigns"]
    assert "kms:Sign" not in account["Action"] and not any(
        a in ("kms:*", "kms:S*", "*") for a in account["Action"]
    ), f"{key['urn']}: the account's statement lets any of its principals sign"
    signs = statements["TheAnalystSigns"]
    assert (signs["Effect"], signs["Action"]) == ("Allow", "kms:Sign")
    assert signs["Principal"]["AWS"].startswith(ROLE_ARN), key["urn"]
    deny = statements["NoOtherIdentitySigns"]
    assert (deny["Effect"], deny["Action"], deny["Principal"]) == ("Deny", "kms:Sign", {"AWS": "*"})
    assert deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] == signs["Principal"]["AWS"]
    allowed = [
        s for s in policy["Statement"] if s["Effect"] == "Allow" and "kms:Sign" in s["Action"]
    ]
    assert allowed == [signs], f"{key['urn']}: kms:Sign is allowed to more than the analyst"
    assert role["urn"]


def test_the_role_may_sign_with_that_key_alone(default_stack: StackRun) -> None:
    policy = default_stack.one("aws:iam/rolePolicy:RolePolicy", "signing-sign")
    document = json.loads(policy["inputs"]["policy"])
    (statement,) = document["Statement"]
    assert statement["Action"] == ["kms:Sign", "kms:GetPublicKey"]
    assert statement["Resource"].startswith("arn:aws:kms:"), policy["urn"]
    assert "signingKeyArn" in default_stack.outputs
    # The Job finds the key by the alias its role's name gives it (ANALYST_ROLE_NAME).
    alias = default_stack.one("aws:kms/alias:Alias")
    # The mock engine names a role after its resource, as AWS names it after its auto-name.
    assert alias["inputs"]["name"] == key_alias("identity-role"), alias["urn"]


# --- moto, IAM enforced ---------------------------------------------------------------------

SETUP_CALLS = 6
RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_CALLS)}
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"moto_server did not start on {endpoint}")
                time.sleep(0.1)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)


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


@pytest.fixture(scope="module")
def kms_clients(moto_endpoint: str) -> tuple[str, Any, Any]:
    """The key, a KMS client of the assumed analyst role, and one of another identity."""
    kms, iam = _client("kms", moto_endpoint), _client("iam", moto_endpoint)
    key_arn = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"][
        "Arn"
    ]  # 1
    operator_arn = iam.create_user(UserName="operator")["User"]["Arn"]  # 2
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": operator_arn}, "Action": "sts:AssumeRole"}
        ],
    }
    role_arn = iam.create_role(RoleName="analyst", AssumeRolePolicyDocument=json.dumps(trust))[
        "Role"
    ]["Arn"]  # 3
    deployed = render_signing_permissions(key_arn)
    for statement in deployed["Statement"]:
        assert statement["Resource"] == key_arn  # the deployed scope, widened for moto alone
        statement["Resource"] = "*"
    iam.put_role_policy(
        RoleName="analyst", PolicyName="signing", PolicyDocument=json.dumps(deployed)
    )  # 4
    # Another identity: it may assume the role and read the key's public half, never sign.
    operator_policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": role_arn},
            {"Effect": "Allow", "Action": "kms:GetPublicKey", "Resource": "*"},
        ],
    }
    iam.put_user_policy(
        UserName="operator", PolicyName="operator", PolicyDocument=json.dumps(operator_policy)
    )  # 5
    keys = iam.create_access_key(UserName="operator")["AccessKey"]  # 6
    operator = {"key": keys["AccessKeyId"], "secret": keys["SecretAccessKey"]}
    creds = _client("sts", moto_endpoint, **operator).assume_role(
        RoleArn=role_arn, RoleSessionName="analyst"
    )["Credentials"]
    analyst = _client(
        "kms",
        moto_endpoint,
        key=creds["AccessKeyId"],
        secret=creds["SecretAccessKey"],
        token=creds["SessionToken"],
    )
    return key_arn, analyst, _client("kms", moto_endpoint, **operator)


def _code(error: ClientError) -> tuple[int, str]:
    """The HTTP status and the error code. moto's IAM refusals of a JSON-protocol service such
    as KMS come as an XML error document botocore leaves in the message: its code is read there."""
    status = int(error.response["ResponseMetadata"]["HTTPStatusCode"])
    message = str(error.response["Error"].get("Message", ""))
    if message.startswith("<?xml"):
        found = ElementTree.fromstring(message).find("./Errors/Error/Code")
        return status, found.text or "" if found is not None else ""
    return status, str(error.response["Error"]["Code"])


@pytest.mark.integration
def test_the_analyst_role_signs_and_another_identity_is_refused(
    kms_clients: tuple[str, Any, Any], moto_endpoint: str
) -> None:
    key_arn, analyst, other = kms_clients
    stranger = _client("kms", moto_endpoint, key="AKIAUNKNOWN000000000", secret="nope")
    with pytest.raises(ClientError) as unknown:
        stranger.get_public_key(KeyId=key_arn)
    assert _code(unknown.value) == (403, "InvalidClientTokenId"), (
        "the moto server is not enforcing IAM; every other result is void"
    )
    # The control: the analyst's role signs, through the signer a cluster run uses.
    signer = KmsSigner(analyst, key_arn)
    signature = signer.sign(b"DSSEv1 the statement")
    assert signature.keyid == signer.public_key.keyid and len(bytes.fromhex(signature.signature))
    # The same call by another identity, which may read the key: refused.
    assert KmsSigner(other, key_arn).public_key.keyid == signer.public_key.keyid
    with pytest.raises(RunStopped, match="the statement could not be signed") as stopped:
        KmsSigner(other, key_arn).sign(b"DSSEv1 the statement")
    refused = stopped.value.__cause__
    assert isinstance(refused, ClientError)
    assert _code(refused) == (403, "AccessDenied")


def test_the_jobs_start_after_the_signing_key_exists(default_stack: StackRun) -> None:
    key = default_stack.one("aws:kms/key:Key")
    alias = default_stack.one("aws:kms/alias:Alias")
    for job in default_stack.of_type("kubernetes:batch/v1:Job"):
        waits_for = set(job["dependencies"])
        assert {key["urn"], alias["urn"]} <= waits_for, (
            f"{job['urn']} may start before its signing key exists"
        )
