"""Pod specs broken on purpose, for `python -m rehearsal run --change MODULE:FUNCTION`.

Each function changes the objects the program renders, in place, the way a plausible mistake
in infra/ would; the rehearsal must then fail and name the field.
"""

from __future__ import annotations

from typing import Any

from app.core import cluster_env as env

Manifest = dict[str, Any]


def _job(objects: list[Manifest], layer: str) -> dict[str, Any]:
    for manifest in objects:
        labels = manifest["metadata"].get("labels", {})
        if (
            manifest["kind"] == "Job"
            and labels.get(env.COMPONENT_LABEL) == env.ANALYST_COMPONENT
            and labels.get(env.LAYER_LABEL) == layer
        ):
            spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
            return spec
    raise LookupError(f"no analyst Job for {layer}")


def drop_fs_group(objects: list[Manifest]) -> None:
    """The nono pod without securityContext.fsGroup."""
    del _job(objects, "nono")["securityContext"]["fsGroup"]


def key_where_a_tool_can_reach(objects: list[Manifest]) -> None:
    """The bubblewrap pod mounts the key Secret under /usr, which every tool process reads."""
    container = _job(objects, "bubblewrap")["containers"][0]
    directory = "/usr/share/supplier-key"
    for mount in container["volumeMounts"]:
        if mount["name"] == "supplier-key":
            mount["mountPath"] = directory
    for entry in container["env"]:
        if entry["name"] == env.SUPPLIER_KEY_FILE:
            entry["value"] = f"{directory}/{env.SUPPLIER_KEY_ITEM}"


def remove_init_container(objects: list[Manifest]) -> None:
    """The bubblewrap pod without the init container that raises the guest's userns limit."""
    del _job(objects, "bubblewrap")["initContainers"]


def misspell_bucket_variable(objects: list[Manifest]) -> None:
    """The nono pod's ANALYST_BUCKET spelled ANALYST_BUKET."""
    for entry in _job(objects, "nono")["containers"][0]["env"]:
        if entry["name"] == env.BUCKET:
            entry["name"] = "ANALYST_BUKET"


def profile_without_pivot_root(objects: list[Manifest]) -> None:
    """The SeccompProfile object's spec without pivot_root, one of bwrap's widenings."""
    (profile,) = [m for m in objects if m["kind"] == "SeccompProfile"]
    for rule in profile["spec"]["syscalls"]:
        if "pivot_root" in rule["names"]:
            rule["names"].remove("pivot_root")


def open_https_egress(objects: list[Manifest]) -> None:
    """The analyst pods' egress policy with one more rule: anywhere, on 443."""
    for manifest in objects:
        if manifest["kind"] == "ApplicationNetworkPolicy":
            manifest["spec"]["egress"].append(
                {
                    "to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}],
                    "ports": [{"protocol": "TCP", "port": 443}],
                }
            )


def drop_dns_egress(objects: list[Manifest]) -> None:
    """The analyst pods' egress policy without its DNS rule (port 53 to the cluster resolver)."""
    for manifest in objects:
        if manifest["kind"] == "ApplicationNetworkPolicy":
            manifest["spec"]["egress"] = [
                rule
                for rule in manifest["spec"]["egress"]
                if all(port["port"] != 53 for port in rule.get("ports", []))
            ]
