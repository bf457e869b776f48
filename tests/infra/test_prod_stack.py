"""The committed prod stack starts from nothing: its first preview and its first `up` create the
ECR repositories, build both images into them and run every pod by the digest that build
returns, so no image has to exist before the stack does, and no Job is registered before the
image it runs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.support.stack_run import REPO_ROOT, run_stack

PROJECT = "procurement-analyst"
IMAGE = "docker-build:index:Image"
REPOSITORY = "aws:ecr/repository:Repository"
JOB = "kubernetes:batch/v1:Job"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _prod_settings() -> dict[str, Any]:
    document = yaml.safe_load((REPO_ROOT / "Pulumi.prod.yaml").read_text(encoding="utf-8"))
    return {key.removeprefix(f"{PROJECT}:"): value for key, value in document["config"].items()}


@pytest.mark.parametrize("preview", [True, False], ids=["first preview", "first up"])
def test_the_prod_stack_registers_its_images_before_any_pod_that_runs_them(preview: bool) -> None:
    settings = _prod_settings()
    assert settings["imageMode"] == "build"
    assert "analystImage" not in settings and "supplierImage" not in settings
    run = run_stack(stack="prod", preview=preview, **settings)
    order = [r["urn"] for r in run.resources]
    repositories = run.of_type(REPOSITORY)
    images = {
        r["name"].removeprefix("images-").removesuffix("-build"): r for r in run.of_type(IMAGE)
    }
    assert sorted(images) == ["analyst", "supplier-api"]
    assert len(repositories) == 2
    for image in images.values():
        # Built into a repository of this same run, after it.
        assert any(repo["urn"] in image["dependencies"] for repo in repositories), image["urn"]
    for workload, image in [
        *((job, images["analyst"]) for job in run.of_type(JOB)),
        (run.one(DEPLOYMENT), images["supplier-api"]),
    ]:
        assert image["urn"] in workload["property_dependencies"]["spec"], (
            f"{workload['urn']} does not take its image from {image['urn']}"
        )
        assert order.index(image["urn"]) < order.index(workload["urn"]), workload["urn"]
    if not preview:
        assert (
            run.outputs["analystImage"].split("@sha256:")[0]
            in run.outputs["ecrRepositories"].values()
        )
