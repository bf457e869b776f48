"""The review workflow: preview with the policy pack on pull requests, up on main, AWS through
OIDC, actions pinned by commit, and Docker ready before a preview of the image builds."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.support.stack_run import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "pulumi.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return document


def _pulumi_step(job: dict[str, Any]) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if s.get("uses", "").startswith("pulumi/actions@")]
    return step


def test_pull_requests_preview_with_the_policy_pack_and_comment(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["preview"]
    assert job["if"] == "github.event_name == 'pull_request'"
    step = _pulumi_step(job)["with"]
    assert step["command"] == "preview"
    assert step["policyPacks"] == "policies/pack"
    assert step["comment-on-pr"] is True
    assert job["permissions"]["pull-requests"] == "write"


def test_main_updates_the_dev_stack(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["deploy-dev"]
    assert "refs/heads/main" in job["if"]
    step = _pulumi_step(job)["with"]
    assert step["command"] == "up" and step["policyPacks"] == "policies/pack"
    assert workflow["env"]["PULUMI_STACK"] == "dev"
    assert (REPO_ROOT / "Pulumi.dev.yaml").is_file()


@pytest.mark.parametrize("name", ["preview", "deploy-dev"])
def test_aws_sign_in_is_oidc_never_keys(workflow: dict[str, Any], name: str) -> None:
    job = workflow["jobs"][name]
    assert job["permissions"]["id-token"] == "write"
    (aws,) = [s for s in job["steps"] if "configure-aws-credentials" in s.get("uses", "")]
    assert "role-to-assume" in aws["with"]
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "aws-access-key-id" not in text and "AWS_SECRET_ACCESS_KEY" not in text
    assert workflow["permissions"] == {}, "the default token must have no permissions"


def test_every_action_is_pinned_by_commit(workflow: dict[str, Any]) -> None:
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


@pytest.mark.parametrize("name", ["preview", "deploy-dev"])
def test_docker_buildx_is_ready_before_pulumi_runs(workflow: dict[str, Any], name: str) -> None:
    # The dev stack builds its images, and docker-build checks for BuildKit even in a preview.
    steps = [s.get("uses", "") for s in workflow["jobs"][name]["steps"]]
    buildx = next(i for i, uses in enumerate(steps) if "setup-buildx-action" in uses)
    pulumi = next(i for i, uses in enumerate(steps) if uses.startswith("pulumi/actions@"))
    assert buildx < pulumi
    dev = yaml.safe_load((REPO_ROOT / "Pulumi.dev.yaml").read_text())["config"]
    assert dev["procurement-analyst:imageMode"] == "build"


def _step(job: dict[str, Any], action: str) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if s.get("uses", "").startswith(f"{action}@")]
    return step


def test_a_pull_request_previews_as_a_read_only_identity_of_its_own(
    workflow: dict[str, Any],
) -> None:
    # Any branch's infra/ runs in the preview before review: never with the deploy identity.
    preview, deploy = workflow["jobs"]["preview"], workflow["jobs"]["deploy-dev"]
    assert preview["environment"] == "dev-preview" and deploy["environment"] == "dev"
    roles = {
        name: _step(job, "aws-actions/configure-aws-credentials")["with"]["role-to-assume"]
        for name, job in (("preview", preview), ("deploy", deploy))
    }
    assert roles == {
        "preview": "${{ vars.AWS_PREVIEW_ROLE_ARN }}",
        "deploy": "${{ vars.AWS_DEPLOY_ROLE_ARN }}",
    }
    scopes = {
        name: _step(job, "pulumi/auth-actions")["with"]["scope"]
        for name, job in (("preview", preview), ("deploy", deploy))
    }
    assert scopes == {
        "preview": "team:${{ vars.PULUMI_PREVIEW_TEAM }}",
        "deploy": "team:${{ vars.PULUMI_DEPLOY_TEAM }}",
    }


@pytest.mark.parametrize("name", ["preview", "deploy-dev"])
def test_pulumi_cloud_is_signed_in_by_oidc_exchange_before_pulumi_runs(
    workflow: dict[str, Any], name: str
) -> None:
    job = workflow["jobs"][name]
    steps = [s.get("uses", "") for s in job["steps"]]
    exchange = next(i for i, uses in enumerate(steps) if uses.startswith("pulumi/auth-actions@"))
    pulumi = next(i for i, uses in enumerate(steps) if uses.startswith("pulumi/actions@"))
    assert exchange < pulumi
    token = _step(job, "pulumi/auth-actions")["with"]
    assert token["requested-token-type"] == "urn:pulumi:token-type:access_token:team"
    assert int(token["token-expiration"]) <= 3600
    assert "PULUMI_ACCESS_TOKEN" not in WORKFLOW.read_text(encoding="utf-8"), (
        "a long-lived Pulumi access token is still passed"
    )
