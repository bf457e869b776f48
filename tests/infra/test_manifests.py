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
from tests.support.stack_run import REPO_ROOT, SECRET, StackRun, run_stack

# kubernetes-validate ships schemas for this version; the test fails rather than silently
# validating against another one if a future release drops it.
KUBERNETES_VERSION = "1.36.0"


# Every object the dev stack creates, one file each; a Job's name ends in its spec's digest.
EXPECTED_FILES = (
    "applicationnetworkpolicy-analyst-egress.yaml",
    "configmap-supplier-ca.yaml",
    "deployment-supplier-api.yaml",
    "job-analyst-bubblewrap-1-*.yaml",
    "job-analyst-nono-1-*.yaml",
    "job-compare-bubblewrap-1-*.yaml",
    "job-compare-nono-1-*.yaml",
    "namespace-procurement-analyst-dev.yaml",
    "networkpolicy-supplier-api-ingress.yaml",
    "secret-supplier-key.yaml",
    "secret-supplier-tls.yaml",
    "service-supplier-api-alias.yaml",
    "service-supplier-api.yaml",
    "serviceaccount-analyst.yaml",
)


def _render(out: Path, *options: str) -> dict[str, Path]:
    """`python -m infra.render_manifests` into ``out``: each file written, by name."""
    subprocess.run(
        [sys.executable, "-m", "infra.render_manifests", "--out", str(out), *options],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return {path.name: path for path in sorted(out.glob("*.yaml"))}


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    rendered = _render(tmp_path_factory.mktemp("manifests"), "--stack", "dev")
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


# kubernetes-validate knows the built-in kinds only: the ApplicationNetworkPolicy is validated
# against its CRD's published schema in tests/infra/test_egress.py.
BUILT_IN_FILES = [name for name in EXPECTED_FILES if not name.startswith("applicationnetwork")]


@pytest.mark.parametrize("name", BUILT_IN_FILES)
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


# --- the hardened-container target ---------------------------------------------------------

HARDENED_FILES = (
    *[name for name in EXPECTED_FILES if not name.startswith("namespace-")],
    "namespace-procurement-analyst-dev.yaml",
    "seccompprofile-procurement-analyst-dev-bwrap.yaml",
)
# The SeccompProfile's spec fields and enums in the Security Profiles Operator's v1 CRD
# (api/seccompprofile/v1/seccompprofile_types.go at v1.0.0). kubernetes-validate has schemas
# for built-in kinds only, so the custom object is checked against these, and its spec, the
# committed profile, is the one tests/integration/test_container_seccomp.py loads into bwrap.
SECCOMP_PROFILE_SPEC = {
    "baseProfileName",
    "defaultAction",
    "architectures",
    "listenerPath",
    "listenerMetadata",
    "syscalls",
    "flags",
}
SECCOMP_ACTIONS = {
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_TRAP",
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_TRACE",
    "SCMP_ACT_ALLOW",
    "SCMP_ACT_LOG",
    "SCMP_ACT_NOTIFY",
}
SECCOMP_ARCHES = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64"}
SECCOMP_OPERATORS = {
    "SCMP_CMP_NE",
    "SCMP_CMP_LT",
    "SCMP_CMP_LE",
    "SCMP_CMP_EQ",
    "SCMP_CMP_GE",
    "SCMP_CMP_GT",
    "SCMP_CMP_MASKED_EQ",
}


@pytest.fixture(scope="module")
def hardened_manifests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    rendered = _render(
        tmp_path_factory.mktemp("hardened-manifests"), "--runtime-target", "hardened-container"
    )
    found: dict[str, Any] = {"__files__": sorted(rendered)}
    for pattern in HARDENED_FILES:
        names = [name for name in rendered if Path(name).match(pattern)]
        found[pattern] = yaml.safe_load(rendered[names[0]].read_text()) if names else {}
    return found


def test_the_hardened_target_renders_every_object_once(hardened_manifests: dict[str, Any]) -> None:
    files = hardened_manifests["__files__"]
    assert len(files) == len(HARDENED_FILES)
    for pattern in HARDENED_FILES:
        assert [name for name in files if Path(name).match(pattern)], f"no file {pattern}"


@pytest.mark.parametrize(
    "name",
    [n for n in HARDENED_FILES if not n.startswith(("seccompprofile", "applicationnetwork"))],
)
def test_each_hardened_manifest_is_valid_for_kubernetes_1_36_strict(
    hardened_manifests: dict[str, dict], name: str
) -> None:
    try:
        kv.validate(hardened_manifests[name], KUBERNETES_VERSION, strict=True)
    except kv.ValidationError as error:
        pytest.fail(f"{name}: {error.message} at {list(error.path)}")


def test_the_seccomp_profile_object_has_the_operators_v1_shape(
    hardened_manifests: dict[str, dict],
) -> None:
    profile = hardened_manifests["seccompprofile-procurement-analyst-dev-bwrap.yaml"]
    assert profile["apiVersion"] == "security-profiles-operator.x-k8s.io/v1"
    assert profile["kind"] == "SeccompProfile"
    assert "namespace" not in profile["metadata"], "SeccompProfile is cluster-scoped in v1"
    spec = profile["spec"]
    assert set(spec) <= SECCOMP_PROFILE_SPEC and spec["defaultAction"] in SECCOMP_ACTIONS
    assert set(spec["architectures"]) <= SECCOMP_ARCHES | {"SCMP_ARCH_ARM"}
    for rule in spec["syscalls"]:
        assert set(rule) <= {"names", "action", "errnoRet", "args"}, rule
        assert rule["names"] and rule["action"] in SECCOMP_ACTIONS, rule
        for arg in rule.get("args", []):
            assert set(arg) <= {"index", "value", "valueTwo", "op"}, arg
            assert arg["op"] in SECCOMP_OPERATORS and 0 <= arg["index"] <= 5, arg


def test_the_hardened_program_creates_exactly_the_rendered_objects() -> None:
    stack = run_stack(runtimeTarget="hardened-container")
    outputs = stack.outputs
    values = DeployValues(
        analyst_image=outputs["analystImage"],
        supplier_image=outputs["supplierImage"],
        bucket=outputs["bucket"],
        role_name=outputs["roleArn"].rsplit("/", 1)[1],
    )
    config = parse_config({"runtimeTarget": "hardened-container"})
    rendered = {(o["kind"], o["metadata"]["name"]): o for o in stack_objects(config, values)}
    registered = {}
    for resource in stack.resources:
        kind = resource["type"].rsplit(":", 1)[1]
        if resource["type"].startswith("kubernetes:") and not resource["read"]:
            if kind == "Release":
                continue  # Helm charts, not objects: tests/infra/test_hardened_target.py
            inputs = _redacted(resource["inputs"])
            registered[(kind, inputs["metadata"]["name"])] = inputs
    assert set(registered) == set(rendered)
    for key in [("SeccompProfile", "procurement-analyst-bwrap")] + [
        k for k in rendered if k[0] in ("Job", "Namespace")
    ]:
        inputs = dict(registered[key])
        assert {"apiVersion": inputs.pop("apiVersion"), "kind": inputs.pop("kind"), **inputs} == (
            rendered[key]
        ), f"{key} differs from its rendering"
