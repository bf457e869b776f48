"""The two shapes an analyst pod can take (`runtimeTarget`), and what each asks of the cluster.

`isolated-sandbox` (the default): every analyst pod in EKS's Nitro sandbox RuntimeClass; the
bubblewrap pod is privileged, and that privilege stays inside the pod's own guest VM.
`hardened-container`: ordinary nodes, no sandbox RuntimeClass; the bubblewrap pod is not
privileged and gets exactly what bwrap needs instead: its own user namespace (`hostUsers:
false`), an unmasked /proc, and a Localhost seccomp profile (and, on nodes that enforce
AppArmor, a Localhost AppArmor profile). nono pods need none of this under either target.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Final

from app.core.roles import Layer

SANDBOX_RUNTIME_CLASS: Final = "isolated-sandbox"

# Pod Security Admission: the namespace enforces the strictest level that admits its pods, by
# the policies of this version (the first whose baseline admits an unmasked /proc in a pod with
# its own user namespace is 1.35: k8s.io/pod-security-admission policy/check_procMount_*.go).
POD_SECURITY_VERSION: Final = "v1.36"


class RuntimeTarget(StrEnum):
    """Where the analyst pods run, and so the bubblewrap pod's shape."""

    ISOLATED_SANDBOX = "isolated-sandbox"
    HARDENED_CONTAINER = "hardened-container"


class PodShapeError(ValueError):
    """A pod spec the program must not create; the message says why."""


def pod_shape_problems(spec: Mapping[str, Any]) -> list[str]:
    """Combinations of pod fields the targets rule out, each with the reason."""
    problems = []
    if spec.get("runtimeClassName") == SANDBOX_RUNTIME_CLASS and spec.get("hostUsers") is False:
        problems.append(
            f"hostUsers: false with runtimeClassName {SANDBOX_RUNTIME_CLASS}: EKS's Nitro "
            "sandbox pods do not support user namespaces, and there the pod's privilege stays "
            "inside its own guest VM anyway; use runtimeTarget hardened-container for a pod "
            "with its own user namespace"
        )
    return problems


def require_pod_shape(spec: Mapping[str, Any]) -> None:
    """Raises PodShapeError naming every problem of the spec, or returns."""
    problems = pod_shape_problems(spec)
    if problems:
        raise PodShapeError("; ".join(problems))


def pod_security_level(target: RuntimeTarget, layers: Iterable[Layer]) -> str:
    """The strictest Pod Security Standard that admits every pod the stack puts in its namespace.

    The supplier API's and the nono Job's pods meet `restricted`. The isolated-sandbox bubblewrap
    pod is privileged, which only `privileged` admits. The hardened-container bubblewrap pod sets
    procMount: Unmasked, which `restricted` always refuses and `baseline` admits only in a pod
    with its own user namespace, which it is.
    """
    if Layer.BUBBLEWRAP not in set(layers):
        return "restricted"
    if target is RuntimeTarget.ISOLATED_SANDBOX:
        return "privileged"
    return "baseline"


def needs_security_profiles(target: RuntimeTarget, layers: Iterable[Layer]) -> bool:
    """Only the hardened-container bubblewrap pod references a Localhost seccomp profile, which
    the Security Profiles Operator puts on the nodes."""
    return target is RuntimeTarget.HARDENED_CONTAINER and Layer.BUBBLEWRAP in set(layers)
