"""What each role and the controller got, read from one run's evidence.json: the boundary
picture's content, before any of it is laid out (picture.py).

What each role got is the run's own record: the places its policy showed it, as the layer's own
walker of that policy read them (``policy.grants``: under bubblewrap its mounts, under nono its
profile's file grants), and under bubblewrap its /proc readings (uid, namespaces against the
controller's, seccomp, capabilities), under nono its live profile (the proxy route and its
method/path pairs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from app.core.roles import ROLES

# How a path under the run's private tree is written, the tree itself named once on the page.
RUN_TREE: Final = "<run tree>"


@dataclass(frozen=True)
class Mount:
    target: str
    mode: str  # "read-only", "read-write", "own tmpfs", "own /proc"
    source: str | None = None

    @property
    def glyph(self) -> str:
        return {"read-only": "\u2190 ro", "read-write": "\u21c4 rw"}.get(self.mode, "\u25cb")


@dataclass(frozen=True)
class RoleView:
    role: str
    uid: str
    namespaces: str
    filters: tuple[str, ...]
    mounts: tuple[Mount, ...]
    network: str
    route: tuple[str, ...] = ()  # allowed "METHOD /path" pairs through its proxy
    proxy: str | None = None
    refused: str | None = None  # the errno of its own TCP connect to the host's loopback


def short_path(path: str, top: str) -> str:
    """A path under the run's tree, written from the tree: ``<run tree>/run/reader/in``."""
    if top and (path == top or path.startswith(top + "/")):
        return RUN_TREE + path[len(top) :]
    return path


def _mounts(policy: Mapping[str, Any], role: str, top: str) -> tuple[Mount, ...]:
    """The places the role's policy showed it, each host path written from the run's tree."""
    return tuple(
        Mount(
            short_path(str(grant.get("target", "?")), top),
            str(grant.get("mode", "?")),
            None if grant.get("source") is None else short_path(str(grant["source"]), top),
        )
        for grant in policy.get("grants", {}).get(role, [])
    )


def _bubblewrap_role(role: str, evidence: Mapping[str, Any]) -> RoleView:
    policy, readings = evidence["policy"], evidence.get("readings", {})
    top = str(evidence.get("endpoints", {}).get("run_tree", ""))
    status = readings.get(f"{role}_proc_status", {})
    own = status.get("namespaces", {})
    controller = readings.get("controller_namespaces", {})
    separate = sorted(kind for kind, value in own.items() if controller.get(kind) != value)
    shared = sorted(kind for kind, value in own.items() if controller.get(kind) == value)
    namespaces = f"own {' '.join(separate) or 'none'}"
    if shared:
        namespaces += f"; shares {' '.join(shared)}"
    proc = status.get("status", {})
    rules = len(policy.get("seccomp_baseline", {}).get("rules", []))
    filters = (
        f"seccomp mode {proc.get('Seccomp', '?')}, {proc.get('Seccomp_filters', '?')} filter: "
        f"the baseline of {rules} rules",
        f"capabilities CapEff {proc.get('CapEff', '?')}, NoNewPrivs {proc.get('NoNewPrivs', '?')}",
    )
    unshared = bool(policy.get("policy", {}).get("unshare_net"))
    network = "only lo, in a net namespace of its own" if unshared else "the controller's network"
    return RoleView(
        role=role,
        uid=f"uid {status.get('uid', '?')} gid {status.get('gid', '?')}",
        namespaces=namespaces,
        filters=filters,
        mounts=_mounts(policy, role, top),
        network=network,
    )


def _nono_role(role: str, evidence: Mapping[str, Any]) -> RoleView:
    policy, readings = evidence["policy"], evidence.get("readings", {})
    top = str(evidence.get("endpoints", {}).get("run_tree", ""))
    profile = policy.get("profiles", {}).get(role, {})
    process = profile.get("process", {})
    rules = len(policy.get("seccomp_baseline", {}).get("rules", []))
    filters = (
        f"Landlock file rules; seccomp ({process.get('enforcement_mode', '?')} mode): the "
        f"baseline of {rules} rules",
        f"largest file it may write: {process.get('max_file_bytes', '?')} bytes",
    )
    host_status = readings.get(f"{role}_status_on_host", {})
    uid = host_status.get("Uid", "").split()[:1]
    network_section = profile.get("network", {})
    route: tuple[str, ...] = ()
    proxy = None
    if network_section.get("block"):
        network = "none: socket() is refused"
    else:
        credentials = network_section.get("custom_credentials", {})
        supplier = credentials.get("supplier", {})
        allowed = supplier.get("endpoint_policy", {}).get("allow", [])
        route = tuple(f"{pair.get('method')} {pair.get('path')}" for pair in allowed)
        proxy = policy.get("proxies", {}).get(role)
        network = f"only its proxy, which forwards to {supplier.get('upstream', '?')}"
    return RoleView(
        role=role,
        uid=f"uid {uid[0]}" if uid else _uid_unread(readings),
        namespaces="none of its own (nono confines with Landlock and seccomp)",
        filters=filters,
        mounts=_mounts(policy, role, top),
        network=network,
        route=route,
        proxy=proxy,
    )


def _uid_unread(readings: Mapping[str, Any]) -> str:
    """What the box says of a role whose uid the run did not read from the host's /proc."""
    read = [role for role in ROLES if f"{role}_status_on_host" in readings]
    if not read:
        return "uid: not read for this role"
    return f"uid: not read (the host's /proc was read for the {' and '.join(read)} alone)"


def role_views(evidence: Mapping[str, Any]) -> list[RoleView]:
    build = _bubblewrap_role if evidence["layer"] == "bubblewrap" else _nono_role
    return [replace(build(role, evidence), refused=_refusal(evidence, role)) for role in ROLES]


def enclave(guest: Mapping[str, Any]) -> str | None:
    """The guest's product name when it names an enclave (a Nitro sandbox's guest does)."""
    product = guest.get("product_name")
    return product if isinstance(product, str) and "enclave" in product.lower() else None


def control_pairs(calls: Sequence[Mapping[str, Any]]) -> set[tuple[Any, Any]]:
    """The method/path pairs a role tried and its proxy refused: the controller's own call of
    the same pair, answered by the supplier, is that refusal's control, not a call of its work."""
    return {
        (call.get("method"), call.get("path"))
        for call in calls
        if call.get("by") in ROLES and not call.get("reaches_upstream")
    }


def _refusal(evidence: Mapping[str, Any], role: str) -> str | None:
    """The errno of the role's own TCP connection to the controller's loopback."""
    answers = evidence.get("attack_answers", {}).get("roles", {}).get(role, {})
    answer = answers.get("tcp4")
    return answer if isinstance(answer, str) and answer != "ok" else None
