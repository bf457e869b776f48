"""The rehearsal's kubelet semantics, each against what Kubernetes documents, without namespaces:
volume files and modes, fsGroup, the projected token, privileges, the webhook, the trust policy,
and that no rendered object sets the rehearsal's switch."""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from app.core import cluster_env as env
from app.core.iam_policy import pod_identity_trust_policy
from app.core.roles import Layer
from rehearsal.image_stand_in import ANALYST_IMAGE
from rehearsal.objects import render
from rehearsal.pod_identity import AUDIENCE, TOKEN_FILE, mutate, skipped
from rehearsal.secret_values import ObjectData
from rehearsal.security import ConfigError, privileges
from rehearsal.trust import trust_allows
from rehearsal.volumes import make_volumes

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root, as the kubelet does")

VALUES = {
    ("Secret", env.SUPPLIER_KEY_SECRET): ObjectData(
        "Secret", env.SUPPLIER_KEY_SECRET, {env.SUPPLIER_KEY_ITEM: b"k" * 48}
    ),
    ("ConfigMap", env.SUPPLIER_CA_CONFIGMAP): ObjectData(
        "ConfigMap", env.SUPPLIER_CA_CONFIGMAP, {env.SUPPLIER_CA_ITEM: b"ca"}
    ),
}


def _pod(layer: Layer, *, annotations: bool = True) -> dict[str, Any]:
    template = render().analyst_jobs[layer]["spec"]["template"]
    listed = skipped(template["metadata"].get("annotations", {})) if annotations else set()
    admitted, _ = mutate(template["spec"], "us-west-2", listed)
    return admitted


def _credentialed(container: dict[str, Any]) -> bool:
    names = {entry["name"] for entry in container.get("env", [])}
    mounted = any(m["name"] == "eks-pod-identity-token" for m in container.get("volumeMounts", []))
    return {env.POD_IDENTITY_URI, env.POD_IDENTITY_TOKEN_FILE} <= names and mounted


def _made(pod: dict[str, Any], tmp_path: Path) -> dict[str, Path]:
    made = make_volumes(pod, "spec", tmp_path, VALUES, {AUDIENCE: b"token"})
    return made.directories


def test_a_secret_file_is_its_default_mode_root_and_the_fs_group(tmp_path: Path) -> None:
    volumes = _made(_pod(Layer.NONO), tmp_path)
    key = volumes["supplier-key"] / env.SUPPLIER_KEY_ITEM
    assert key.is_symlink() and os.readlink(key) == f"..data/{env.SUPPLIER_KEY_ITEM}"
    st = os.stat(key)
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o440, 0, 1000)
    # Directories get the group, group access and setgid; the volume root is a tmpfs root.
    assert stat.S_IMODE(os.stat(volumes["supplier-key"]).st_mode) == 0o3777
    assert stat.S_IMODE(os.stat(volumes["run"]).st_mode) == 0o2777
    assert os.stat(volumes["run"]).st_gid == 1000


def test_without_fs_group_the_secret_stays_roots(tmp_path: Path) -> None:
    pod = _pod(Layer.NONO)
    del pod["securityContext"]["fsGroup"]
    key = _made(pod, tmp_path)["supplier-key"] / env.SUPPLIER_KEY_ITEM
    st = os.stat(key)
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o440, 0, 0)


def test_the_token_is_0640_and_owned_by_the_pods_one_uid_when_there_is_one(
    tmp_path: Path,
) -> None:
    name = Path(TOKEN_FILE).name
    nono = os.stat(_made(_pod(Layer.NONO), tmp_path / "n")["eks-pod-identity-token"] / name)
    assert (stat.S_IMODE(nono.st_mode), nono.st_uid, nono.st_gid) == (0o640, 1000, 1000)
    # The bubblewrap pod's init container runs as 0: no single uid, so root owns the token.
    bwrap = os.stat(_made(_pod(Layer.BUBBLEWRAP), tmp_path / "b")["eks-pod-identity-token"] / name)
    assert (stat.S_IMODE(bwrap.st_mode), bwrap.st_uid, bwrap.st_gid) == (0o640, 0, 1000)


def test_the_webhook_credentials_every_container_but_those_the_pod_lists() -> None:
    # EKS's webhook mutates init containers as well as containers, and leaves out the names in
    # eks.amazonaws.com/skip-containers: the root init container is listed, so it holds no
    # variable and no token, while the controller beside it gets both.
    pod = _pod(Layer.BUBBLEWRAP)
    (init,) = pod["initContainers"]
    assert not _credentialed(init), init
    assert not any(e["name"].startswith("AWS_") for e in init.get("env", [])), init["env"]
    assert _credentialed(pod["containers"][0])
    # Control: without the annotation the same webhook credentials the init container too.
    (unlisted,) = _pod(Layer.BUBBLEWRAP, annotations=False)["initContainers"]
    assert _credentialed(unlisted)
    # It does not override what the Job sets.
    analyst = pod["containers"][0]["env"]
    assert [e["name"] for e in analyst].count(env.REGION) == 1


def test_privileges_follow_each_pods_security_context() -> None:
    nono = privileges(_pod(Layer.NONO), _pod(Layer.NONO)["containers"][0], ANALYST_IMAGE, "c")
    assert (nono.uid, nono.gid, nono.groups, nono.capabilities) == (1000, 1000, (1000,), ())
    assert nono.no_new_privs and nono.read_only_root and not nono.privileged
    bwrap = _pod(Layer.BUBBLEWRAP)
    init = privileges(bwrap, bwrap["initContainers"][0], ANALYST_IMAGE, "i")
    assert (init.uid, init.privileged, init.no_new_privs) == (0, True, False)
    root = copy.deepcopy(bwrap["containers"][0])
    root["securityContext"]["runAsUser"] = 0
    with pytest.raises(ConfigError, match="runAsNonRoot"):
        privileges(bwrap, root, ANALYST_IMAGE, "c")


def test_the_trust_policy_admits_only_the_pods_of_its_namespace_and_service_account() -> None:
    policy = pod_identity_trust_policy(
        cluster_arn="arn:aws:eks:us-west-2:123456789012:cluster/c",
        namespace="ns",
        service_account="analyst",
    )
    tags = {
        "eks-cluster-arn": "arn:aws:eks:us-west-2:123456789012:cluster/c",
        "kubernetes-namespace": "ns",
        "kubernetes-service-account": "analyst",
    }
    assert trust_allows(policy, tags)[0]
    allowed, reason = trust_allows(policy, {**tags, "kubernetes-namespace": "other"})
    assert not allowed and "kubernetes-namespace=other" in reason
    odd = copy.deepcopy(policy)
    odd["Statement"][0]["Condition"] = {"ArnLike": {"aws:SourceArn": "x"}}
    allowed, reason = trust_allows(odd, tags)
    assert not allowed and "does not evaluate" in reason


def test_no_rendered_object_sets_the_rehearsal_switch() -> None:
    for manifest in render().objects:
        spec = (manifest.get("spec") or {}).get("template", {}).get("spec") or {}
        for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            names = [entry["name"] for entry in container.get("env", [])]
            assert env.REHEARSAL not in names, manifest["metadata"]["name"]
