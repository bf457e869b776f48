"""`make manifests`: one redacted YAML file per Kubernetes object, valid for Kubernetes 1.36."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_validate import utils as kv
from stack_run import REPO_ROOT

# kubernetes-validate ships schemas for this version; the test fails rather than silently
# validating against another one if a future release drops it.
KUBERNETES_VERSION = "1.36.0"


# Every object the dev stack creates, one file each.
EXPECTED_FILES = (
    "configmap-supplier-ca.yaml",
    "deployment-supplier-api.yaml",
    "job-analyst-bubblewrap-1.yaml",
    "job-analyst-nono-1.yaml",
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
        [sys.executable, "infra/render_manifests.py", "--out", str(out), "--stack", "dev"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return {
        path.name: yaml.safe_load(path.read_text()) for path in sorted(Path(out).glob("*.yaml"))
    }


def test_every_object_has_its_own_file(manifests: dict[str, dict]) -> None:
    assert sorted(manifests) == list(EXPECTED_FILES)


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
    job = manifests["job-analyst-nono-1.yaml"]
    assert job["metadata"]["namespace"] == "procurement-analyst-dev"
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (
        env["SUPPLIER_API_URL"]
        == "https://supplier-api.procurement-analyst-dev.svc.cluster.local:8443"
    )
