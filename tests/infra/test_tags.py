"""Every AWS resource the stack creates carries Project, Stack, ManagedBy and Owner: they are the
AWS provider's default tags (infra/tags.py), the provider every AWS resource is created through,
and no resource sets a tag of the same key that would replace them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.tags import default_tags
from tests.support.stack_run import CREATE_MODE, CREATE_WORLD, StackRun, run_failing, run_stack


def _provider_tags(run: StackRun) -> dict[str, str]:
    provider = run.one("pulumi:providers:aws")
    tags = provider["inputs"]["defaultTags"]
    parsed: dict[str, Any] = json.loads(tags) if isinstance(tags, str) else tags
    return dict(parsed["tags"])


@pytest.mark.parametrize("mode", ["existing", "create"])
def test_every_aws_resource_is_created_through_the_tagged_provider(mode: str) -> None:
    settings: dict[str, Any] = {"owner": "procurement-platform"}
    run = (
        run_stack(**settings)
        if mode == "existing"
        else run_stack(world=CREATE_WORLD, **CREATE_MODE, **settings)
    )
    assert _provider_tags(run) == {
        "Project": "procurement-analyst",
        "Stack": "dev",
        "ManagedBy": "pulumi",
        "Owner": "procurement-platform",
    }
    provider = run.one("pulumi:providers:aws")
    created = [r for r in run.resources if r["custom"] and r["type"].startswith("aws:")]
    assert created, "the stack creates AWS resources"
    for resource in created:
        assert run.provider_urn(resource["provider"]) == provider["urn"], (
            f"{resource['urn']} is not created through the tagged provider"
        )
        own = resource["inputs"].get("tags") or {}
        assert not set(own) & set(_provider_tags(run)), (
            f"{resource['urn']} replaces a default tag: {own}"
        )


def test_an_owner_is_a_tag_value_or_left_out() -> None:
    assert "Owner" not in default_tags("p", "dev", "")
    assert "Owner" not in _provider_tags(run_stack())
    assert "procurement-analyst:owner: must be an AWS tag value" in (
        run_failing(owner="bad\u0000owner").stderr
    )
