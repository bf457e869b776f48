"""The analyst stack's pod checks: plain functions of a resource's properties, each returning
the violations it finds with the resource's name. analyst_guard.py wraps them as policies.

A pod is either in the isolated-sandbox RuntimeClass, where only the bubblewrap Job may be
privileged (and its init container root), or outside any RuntimeClass (runtimeTarget
hardened-container), where no container may gain privileges, keep a capability or run without
seccomp, and only the bubblewrap pod, in its own user namespace, gets an unmasked /proc.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

JOB = "kubernetes:batch/v1:Job"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
SANDBOX = "isolated-sandbox"
LAYER_LABEL = "procurement-analyst/layer"
# The pods' labels, as app/core/cluster_env.py names them (a test keeps the two in step: the
# pack runs on its own, without the application's packages).
COMPONENT_LABEL = "app.kubernetes.io/name"
ANALYST_COMPONENT = "analyst"
COMPARISON_COMPONENT = "ordinary-comparison"
# Only `python -m rehearsal` sets this variable (app/core/cluster_env.REHEARSAL): in a deployed
# pod it would swap Bedrock for the offline model and skip the image's provenance checks.
REHEARSAL_SWITCH = "ANALYST_REHEARSAL"
# The only containers that may be privileged, and the only one that may be root, both in the
# isolated-sandbox bubblewrap Job alone: bwrap's private procfs needs a privileged controller
# there, and only root can raise the guest's user namespace limit before it starts
# (infra/pod_specs.py says why). Outside the sandbox (runtimeTarget hardened-container) the
# bubblewrap pod needs neither.
PRIVILEGED_CONTAINERS = {("initContainers", "raise-userns-limit"), ("containers", "analyst")}
ROOT_CONTAINER = ("initContainers", "raise-userns-limit")
CONFINING_SECCOMP = {"RuntimeDefault", "Localhost"}
# EKS Pod Identity gives every container the role's credentials but those this pod annotation
# lists (infra/pod_specs.py POD_IDENTITY_SKIP says where that is defined).
POD_IDENTITY_SKIP = "eks.amazonaws.com/skip-containers"
# Set on an analyst container when the stack bounds the pod's egress (app/core/cluster_env.py).
EGRESS_DENIED = "ANALYST_EGRESS_DENIED"
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"


def pod_spec(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if resource_type not in (JOB, DEPLOYMENT):
        return None
    spec: Mapping[str, Any] = (props.get("spec") or {}).get("template", {}).get("spec") or {}
    return spec


def component(props: Mapping[str, Any]) -> str | None:
    labels = (props.get("metadata") or {}).get("labels") or {}
    found = labels.get(COMPONENT_LABEL)
    return found if isinstance(found, str) else None


def is_bubblewrap_job(resource_type: str, props: Mapping[str, Any]) -> bool:
    """The bubblewrap layer's analyst Job (not the ordinary pod compared with it)."""
    labels = (props.get("metadata") or {}).get("labels") or {}
    return (
        resource_type == JOB
        and labels.get(LAYER_LABEL) == "bubblewrap"
        and component(props) == ANALYST_COMPONENT
    )


def is_sandboxed_bubblewrap_job(resource_type: str, props: Mapping[str, Any]) -> bool:
    spec = pod_spec(resource_type, props) or {}
    return is_bubblewrap_job(resource_type, props) and spec.get("runtimeClassName") == SANDBOX


def containers(spec: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for kind in ("initContainers", "containers"):
        for container in spec.get(kind) or []:
            yield kind, container


def sandboxed_or_hardened(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Every analyst pod runs in isolated-sandbox, or outside any RuntimeClass (hardened-container)
    with no container able to gain privileges, keep a capability or run without seccomp."""
    if resource_type != JOB:
        return []
    spec = pod_spec(resource_type, props) or {}
    found = spec.get("runtimeClassName")
    if component(props) == COMPARISON_COMPONENT and found is not None:
        # It shows what a pod outside the sandbox reports on the same node: inside, it would
        # compare nothing.
        return [f"{name}: the ordinary comparison pod runs in RuntimeClass {found!r}"]
    if found == SANDBOX:
        return []
    if found is not None:
        return [f"{name}: the analyst pod runs in RuntimeClass {found!r}, not {SANDBOX!r}"]
    pod_seccomp = ((spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    violations = []
    for _, container in containers(spec):
        label = f"{name}: outside {SANDBOX}, container {container.get('name')!r}"
        context = container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            violations.append(f"{label} may gain privileges (allowPrivilegeEscalation)")
        if "ALL" not in ((context.get("capabilities") or {}).get("drop") or []):
            violations.append(f"{label} does not drop every capability")
        seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in CONFINING_SECCOMP:
            violations.append(f"{label} runs without a seccomp profile ({seccomp!r})")
    return violations


def privileged_containers(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """`privileged` only on the isolated-sandbox bubblewrap Job's init and analyst containers."""
    spec = pod_spec(resource_type, props)
    if spec is None:
        return []
    allowed = PRIVILEGED_CONTAINERS if is_sandboxed_bubblewrap_job(resource_type, props) else set()
    return [
        f"{name}: container {container.get('name')!r} is privileged"
        for kind, container in containers(spec)
        if (container.get("securityContext") or {}).get("privileged")
        and (kind, container.get("name")) not in allowed
    ]


def no_user_namespace_in_sandbox(
    name: str, resource_type: str, props: Mapping[str, Any]
) -> list[str]:
    """No pod in isolated-sandbox asks for its own user namespace (hostUsers: false)."""
    spec = pod_spec(resource_type, props) or {}
    if spec.get("runtimeClassName") == SANDBOX and spec.get("hostUsers") is False:
        return [
            f"{name}: hostUsers: false in {SANDBOX}, whose Nitro sandbox pods do not support "
            "user namespaces; use runtimeTarget hardened-container for that shape"
        ]
    return []


def unmasked_proc(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """An unmasked /proc only for the bubblewrap Job's pod, and only in its own user namespace."""
    spec = pod_spec(resource_type, props)
    if spec is None:
        return []
    violations = []
    for _, container in containers(spec):
        if (container.get("securityContext") or {}).get("procMount") != "Unmasked":
            continue
        label = f"{name}: container {container.get('name')!r} has an unmasked /proc"
        if not is_bubblewrap_job(resource_type, props):
            violations.append(f"{label}, which only bwrap needs")
        elif spec.get("hostUsers") is not False:
            violations.append(f"{label} without the pod's own user namespace")
    return violations


def non_root(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """The pod and every container run as non-root, except the isolated-sandbox bubblewrap Job's
    init container."""
    spec = pod_spec(resource_type, props)
    if spec is None:
        return []
    violations = []
    pod = spec.get("securityContext") or {}
    if pod.get("runAsNonRoot") is not True or pod.get("runAsUser") == 0:
        violations.append(f"{name}: the pod does not set runAsNonRoot: true with a non-root uid")
    exempt = {ROOT_CONTAINER} if is_sandboxed_bubblewrap_job(resource_type, props) else set()
    for kind, container in containers(spec):
        if (kind, container.get("name")) in exempt:
            continue
        context = container.get("securityContext") or {}
        uid = context.get("runAsUser", pod.get("runAsUser"))
        non_root_set = context.get("runAsNonRoot", pod.get("runAsNonRoot"))
        if uid == 0 or non_root_set is not True:
            violations.append(f"{name}: container {container.get('name')!r} may run as root")
    return violations


def no_token_mount(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """No pod, and not the analyst's ServiceAccount, mounts a Kubernetes API token."""
    if resource_type == SERVICE_ACCOUNT:
        source: Mapping[str, Any] = props
    else:
        spec = pod_spec(resource_type, props)
        if spec is None:
            return []
        source = spec
    if source.get("automountServiceAccountToken") is not False:
        return [f"{name}: automountServiceAccountToken is not false"]
    return []


def no_rehearsal_switch(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """No container of any pod sets the rehearsal's switch."""
    spec = pod_spec(resource_type, props)
    if spec is None:
        return []
    return [
        f"{name}: container {container.get('name')!r} sets {REHEARSAL_SWITCH}, which only a "
        "rehearsal may set"
        for _, container in containers(spec)
        if any(
            (entry or {}).get("name") == REHEARSAL_SWITCH for entry in container.get("env") or []
        )
    ]


def no_credentials_for_root_init(
    name: str, resource_type: str, props: Mapping[str, Any]
) -> list[str]:
    """Every init container of an analyst pod is left out of Pod Identity's injection: the root,
    privileged one needs no AWS identity, and may not hold the role's."""
    spec = pod_spec(resource_type, props)
    if spec is None or component(props) != ANALYST_COMPONENT:
        return []
    template = (props.get("spec") or {}).get("template") or {}
    listed = ((template.get("metadata") or {}).get("annotations") or {}).get(POD_IDENTITY_SKIP, "")
    skipped = {part.strip() for part in str(listed).split(",")}
    return [
        f"{name}: init container {container.get('name')!r} gets the role's credentials (not "
        f"listed in {POD_IDENTITY_SKIP})"
        for kind, container in containers(spec)
        if kind == "initContainers" and container.get("name") not in skipped
    ]


def probes_bounded_egress(props: Mapping[str, Any]) -> bool:
    """An analyst Job whose controller is told its egress is bounded (egressPolicy on)."""
    spec = pod_spec(JOB, props) or {}
    return component(props) == ANALYST_COMPONENT and any(
        (entry or {}).get("name") == EGRESS_DENIED
        for _, container in containers(spec)
        for entry in container.get("env") or []
    )


def template_labels(props: Mapping[str, Any]) -> Mapping[str, Any]:
    template = (props.get("spec") or {}).get("template") or {}
    found: Mapping[str, Any] = (template.get("metadata") or {}).get("labels") or {}
    return found
