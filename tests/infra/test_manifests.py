"""`make manifests`: one redacted YAML file per Kubernetes object, valid for Kubernetes 1.36, and
the same objects the program creates."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_validate import utils as kv

from infra.config import parse_config
from infra.render_manifests import DeployValues, stack_objects
from tests.support.stack_run import REPO_ROOT, SECRET, StackRun

# kubernetes-validate ships schemas for this version; the test fails rather than silently
# validating against another one if a future release drops it.
KUBERNETES_VERSION = "1.36.0"


# Every object the dev stack creates, one file each; a Job's name ends in its spec's digest.
EXPECTED_FILES = (
    "configmap-supplier-ca.yaml",
    "deployment-supplier-api.yaml",
    "job-analyst-bubblewrap-1-*.yaml",
    "job-analyst-nono-1-*.yaml",
    "job-compare-bubblewrap-1-*.yaml",
    "job-compare-nono-1-*.yaml",
    "namespace-procurement-analyst-dev.yaml",
    "secret-supplier-key.yaml",
    "secret-supplier-tls.yaml",
    "service-supplier-api-alias.yaml",
    "service-supplier-api.yaml",
    "serviceaccount-analyst.yaml",
)


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("manifests")
    subprocess.run(
        [sys.executable, "-m", "infra.render_manifests", "--out", str(out), "--stack", "dev"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    rendered = {path.name: path for path in sorted(Path(out).glob("*.yaml"))}
    by_pattern = {}
    for pattern in EXPECTED_FILES:
        (name,) = [name for name in rendered if Path(name).match(pattern)] or [pattern]
        by_pattern[pattern] = yaml.safe_load(rendered[name].read_text()) if name in rendered else {}
    by_pattern["__files__"] = sorted(rendered)
    return by_pattern


def test_every_object_has_its_own_file(manifests: dict[str, Any]) -> None:
    files = manifests["__files__"]
    assert len(files) == len(EXPECTED_FILES)
    for pattern in EXPECTED_FILES:
        assert [name for name in files if Path(name).match(pattern)], f"no file {pattern}"


def test_the_schemas_for_the_target_version_are_shipped() -> None:
    assert KUBERNETES_VERSION in kv.all_versions()


@pytest.mark.parametrize("name", EXPECTED_FILES)
def test_each_manifest_is_valid_for_kubernetes_1_36_strict(
    manifests: dict[str, dict], name: str
) -> None:
    try:
        kv.validate(manifests[name], KUBERNETES_VERSION, strict=True)
    except kv.ValidationError as error:
        pytest.fail(
            f"{name} is not a valid {KUBERNETES_VERSION} object: "
            f"{error.message} at {list(error.path)}"
        )


def test_secret_values_are_redacted(manifests: dict[str, dict]) -> None:
    assert manifests["secret-supplier-key.yaml"]["stringData"] == {"api-key": "<redacted>"}
    assert manifests["secret-supplier-tls.yaml"]["stringData"] == {
        "tls.crt": "<redacted>",
        "tls.key": "<redacted>",
    }


def test_the_manifests_carry_the_dev_stack_settings(manifests: dict[str, dict]) -> None:
    job = manifests["job-analyst-nono-1-*.yaml"]
    assert re.fullmatch(r"analyst-nono-1-[0-9a-f]{10}", job["metadata"]["name"])
    assert job["metadata"]["namespace"] == "procurement-analyst-dev"
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (
        env["SUPPLIER_API_URL"]
        == "https://supplier-api.procurement-analyst-dev.svc.cluster.local:8443"
    )


def _redacted(value: Any) -> Any:
    """A recorded secret as `make manifests` writes it."""
    if value == SECRET:
        return "<redacted>"
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value


def test_the_program_creates_exactly_the_rendered_objects(default_stack: StackRun) -> None:
    # With the deployment's values, the pure rendering is what the program registered: the
    # same objects, the same Job names. (The CA and the checksum are the mocks' own values.)
    outputs = default_stack.outputs
    ca = default_stack.one("kubernetes:core/v1:ConfigMap")["inputs"]["data"]["ca.crt"]
    values = DeployValues(
        analyst_image=outputs["analystImage"],
        supplier_image=outputs["supplierImage"],
        bucket=outputs["bucket"],
        role_name=outputs["roleArn"].rsplit("/", 1)[1],
    )
    rendered = {
        (o["kind"], o["metadata"]["name"]): o for o in stack_objects(parse_config({}), values)
    }
    registered = {}
    for resource in default_stack.resources:
        if resource["type"].startswith("kubernetes:") and not resource["read"]:
            kind = resource["type"].rsplit(":", 1)[1]
            inputs = _redacted(resource["inputs"])
            registered[(kind, inputs["metadata"]["name"])] = {
                "apiVersion": inputs.pop("apiVersion"),
                "kind": inputs.pop("kind"),
                **inputs,
            }
    assert set(registered) == set(rendered)
    for key, registered_object in registered.items():
        expected = dict(rendered[key])
        if key[0] == "ConfigMap":
            expected["data"] = {"ca.crt": ca}
        if key[0] == "Deployment":
            template = registered_object["spec"]["template"]["metadata"]
            expected["spec"]["template"]["metadata"]["annotations"] = template["annotations"]
        assert registered_object == expected, f"{key} differs from its rendering"
