"""Builds the pod specs of the analyst Jobs, as plain Kubernetes dicts, and what every pod of the
stack shares (its user, its hardening, its labels, its node architecture).

Pure: settings in, camelCase dicts (the shape `kubectl get -o yaml` shows) out, so every
security-relevant field can be tested without an engine and read in review as it will be
applied. The components only wrap these in resources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, assert_never

from app.core import cluster_env as env
from app.core.roles import Layer

from .security_profiles import apparmor_profile_name, localhost_seccomp_profile
from .targets import SANDBOX_RUNTIME_CLASS, RuntimeTarget, require_pod_shape

# The uid/gid the controller, the supplier API and (after bwrap or nono) every tool run as.
APP_UID = 1000

# Sizing of the analyst's sandbox. An isolated pod's VM is sized from its requests, and a pod
# without them gets a VM too small for the interpreter, the SDKs and a tool process. `make
# bench` measured one whole run at 120 MiB peak for the controller (nono run; 108 MiB under
# bubblewrap) plus 20 MiB for the largest tool process: 140 MiB. The request gives that
# about 3.5x, for the guest kernel, the page cache of the interpreter and the Bedrock client;
# limits sit above requests so a spike is not an OOM kill. Re-run `make bench` and update
# these when the app's footprint changes.
ANALYST_RESOURCES_FROM_BENCH: dict[str, dict[str, str]] = {
    "requests": {"cpu": "500m", "memory": "512Mi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}
INIT_RESOURCES: dict[str, dict[str, str]] = {
    "requests": {"cpu": "10m", "memory": "16Mi"},
    "limits": {"cpu": "100m", "memory": "64Mi"},
}

# A Nitro sandbox guest starts with user.max_user_namespaces at 0, so bwrap fails with ENOSPC.
# The kubelet refuses it as a pod sysctl, so a root init container writes the guest's own
# setting (not the node's) and fails the pod if the value did not stick.
USERNS_LIMIT = 128
USERNS_SYSCTL = "/proc/sys/user/max_user_namespaces"
RAISE_USERNS_SCRIPT = (
    f'echo {USERNS_LIMIT} > {USERNS_SYSCTL}; test "$(cat {USERNS_SYSCTL})" = {USERNS_LIMIT}'
)

# Files in a Secret volume: owner root, group fsGroup (the app's gid), readable by that group.
KEY_FILE_MODE = env.SECRET_FILE_MODE

# A finished Job (and its pod, whose log is the check list) has no ttlSecondsAfterFinished: it
# stays until the stack replaces it with the next run or destroys it. A TTL would let Kubernetes
# delete it while Pulumi's state still lists it, and `pulumi refresh` then `up` would create it
# again: the case re-run, sandbox nodes and a Bedrock turn spent
# (https://kubernetes.io/docs/concepts/workloads/controllers/ttlafterfinished/: unset, "this Job
# won't be cleaned up by the TTL controller"). The policy pack refuses a TTL.

# `pulumi up` does not wait for a Job (skipAwait), so nothing else would notice a pod stuck
# Pending (no sandbox capacity, an image that cannot be pulled) or a model call that hangs. A
# local run takes seconds (`make bench`); in the cluster the sandbox VM, the image pull and one
# Bedrock turn add minutes. Past this the Job fails with reason DeadlineExceeded and its pod is
# stopped. https://kubernetes.io/docs/concepts/workloads/controllers/job/#job-termination-and-cleanup
JOB_DEADLINE_SECONDS = 30 * 60

# EKS Pod Identity's webhook gives every container of the pod, init containers included, the
# credential variables and the token's mount, except the containers this pod annotation lists
# (a comma-separated list of names): aws/amazon-eks-pod-identity-webhook, pkg/handler/handler.go
# (getPodSpecPatch, getContainersToSkip) and its container-credentials test pod rawPodSkip.
POD_IDENTITY_SKIP = "eks.amazonaws.com/skip-containers"

# Tells the Jobs' pods apart: `kubectl get pods -l procurement-analyst/layer=nono`.
LAYER_LABEL = env.LAYER_LABEL

RUNTIME_DEFAULT = {"type": "RuntimeDefault"}

# Both images are built for this architecture only (infra/components/images.py builds
# linux/<IMAGE_ARCH>), so every pod that runs one is placed on nodes of it: on a node of another
# architecture the first exec fails (`exec format error`). The label is the kubelet's own:
# https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-arch
IMAGE_ARCH = "amd64"
ARCH_LABEL = "kubernetes.io/arch"


def image_node_selector() -> dict[str, str]:
    """The nodeSelector of every pod that runs one of the stack's images."""
    return {ARCH_LABEL: IMAGE_ARCH}


def app_user() -> dict[str, Any]:
    """The identity every container but the bubblewrap pod's init container runs as."""
    return {"runAsUser": APP_UID, "runAsGroup": APP_UID, "runAsNonRoot": True}


def no_privilege() -> dict[str, Any]:
    """What every unprivileged container of the stack holds: no privilege gain (no_new_privs),
    a read-only root, no capabilities."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


RUN_DIR_VOLUME = "run"
TMP_VOLUME = "tmp"


# A value only a deployment knows: a str here and in `make manifests`, a Pulumi Output of one
# inside the program, where it stays a leaf of the object and everything around it is known in a
# preview too (so the policy pack can judge the pod before the image is built).
DeployValue = Any


@dataclass(frozen=True)
class JobInputs:
    """What one analyst Job's pod needs to know."""

    layer: Layer
    image: DeployValue
    namespace: str
    case_id: str
    bucket: DeployValue
    region: str
    model_id: str
    role_name: DeployValue
    service_account: str
    target: RuntimeTarget = RuntimeTarget.ISOLATED_SANDBOX
    # hardened-container only: the nodes enforce AppArmor and hold the committed profile.
    node_apparmor: bool = False
    # egressPolicy: the destinations no rule names (infra/egress.py), which the Job probes.
    egress_denied: str = ""


@dataclass(frozen=True)
class JobSettings:
    """The stack settings the analyst Jobs are made from; what only a deployment knows comes
    in per Job (`inputs`)."""

    namespace: str
    case_id: str
    region: str
    model_id: str
    layers: tuple[Layer, ...]
    runtime_target: RuntimeTarget
    node_apparmor: bool
    run_trigger: str
    comparison_pod: bool
    service_account: str
    # egressPolicy: the destinations the Job must fail to reach (empty: no policy, no probe).
    egress_denied: str = ""

    def inputs(
        self, layer: Layer, *, image: DeployValue, bucket: DeployValue, role_name: DeployValue
    ) -> JobInputs:
        """One layer's Job, with the deployment's values (Outputs in the program)."""
        return JobInputs(
            layer=layer,
            image=image,
            namespace=self.namespace,
            case_id=self.case_id,
            bucket=bucket,
            region=self.region,
            model_id=self.model_id,
            role_name=role_name,
            service_account=self.service_account,
            target=self.runtime_target,
            node_apparmor=self.node_apparmor,
            egress_denied=self.egress_denied,
        )


def analyst_command(layer: Layer, case_id: str) -> list[str]:
    """The controller's command line in the Job."""
    return [
        "python",
        "-m",
        "app.controller",
        "run",
        "--layer",
        layer.value,
        "--case",
        f"{env.CASES_DIR}/{case_id}",
        # The run's private directories and its report copies (the controller's default, under
        # the run volume's reports/) are separate folders of the one writable volume.
        "--workdir",
        f"{env.RUN_DIR}/runs",
    ]


def labels(component: str) -> dict[str, str]:
    """The labels every object of one component carries."""
    return {
        env.COMPONENT_LABEL: component,
        "app.kubernetes.io/part-of": "procurement-analyst",
        "app.kubernetes.io/managed-by": "pulumi",
    }


def job_spec(job: JobInputs) -> dict[str, Any]:
    """The Job spec: one attempt, at most JOB_DEADLINE_SECONDS, kept while the stack holds it."""
    pod = analyst_pod_spec(job)
    metadata: dict[str, Any] = {"labels": layer_labels(env.ANALYST_COMPONENT, job.layer)}
    inits = [container["name"] for container in pod.get("initContainers", [])]
    if inits:
        # The root init container needs no AWS identity: the webhook leaves it without one.
        metadata["annotations"] = {POD_IDENTITY_SKIP: ",".join(inits)}
    return {
        "backoffLimit": 0,
        "activeDeadlineSeconds": JOB_DEADLINE_SECONDS,
        "template": {"metadata": metadata, "spec": pod},
    }


def layer_labels(component: str, layer: Layer) -> dict[str, str]:
    """A component's labels, and the layer whose analyst pod it is or is compared with."""
    return {**labels(component), LAYER_LABEL: layer.value}


def analyst_pod_spec(job: JobInputs) -> dict[str, Any]:
    """The analyst pod for one layer and runtime target; refuses a shape the targets rule out."""
    match job.layer:
        case Layer.BUBBLEWRAP if job.target is RuntimeTarget.HARDENED_CONTAINER:
            spec = _hardened_bubblewrap_pod(job)
        case Layer.BUBBLEWRAP:
            spec = _bubblewrap_pod(job)
        case Layer.NONO:
            spec = _nono_pod(job)
        case _:
            assert_never(job.layer)
    require_pod_shape(spec)
    return spec


def _bubblewrap_pod(job: JobInputs) -> dict[str, Any]:
    # NOTE: bwrap mounts a private procfs for its child's pid namespace, which the masked /proc
    # of an unprivileged container refuses (EPERM); so this container is privileged. The
    # privilege reaches the sandbox guest's kernel, which belongs to this pod alone. It rules
    # out allowPrivilegeEscalation: false and the runtime's seccomp profile for the controller;
    # the tool processes get uid 1000, no capabilities, no_new_privs and seccomp from bwrap.
    container = _analyst_container(job)
    container["securityContext"] = {"privileged": True, **app_user()}
    init = {
        "name": "raise-userns-limit",
        "image": job.image,
        "command": ["sh", "-ec", RAISE_USERNS_SCRIPT],
        "resources": INIT_RESOURCES,
        "securityContext": {
            "privileged": True,
            "runAsUser": 0,
            "runAsGroup": 0,
            "runAsNonRoot": False,
        },
    }
    return _pod(job, containers=[container], init_containers=[init], seccomp=None)


def _hardened_bubblewrap_pod(job: JobInputs) -> dict[str, Any]:
    # NOTE: no privilege. bwrap gets exactly what it needs instead: the pod's own user namespace
    # (hostUsers: false), in which an unmasked /proc (procMount: Unmasked, which Kubernetes
    # allows only there) lets bwrap mount a procfs for the tool's pid namespace, and the
    # project's seccomp profile, the runtime default plus the namespace, mount and pivot_root
    # calls bwrap makes (policies/bubblewrap/container-seccomp.json, delivered by the Security
    # Profiles Operator). No init container: the node's user.max_user_namespaces applies, and
    # `doctor` names it when it is 0. The controller keeps no_new_privs, no capabilities and a
    # read-only root, as the nono pod does.
    container = _analyst_container(job)
    context: dict[str, Any] = {**app_user(), **no_privilege(), "procMount": "Unmasked"}
    if job.node_apparmor:
        # The runtime's default AppArmor profile denies every mount; this one allows bwrap's.
        context["appArmorProfile"] = {
            "type": "Localhost",
            "localhostProfile": apparmor_profile_name(),
        }
    container["securityContext"] = context
    seccomp = {"type": "Localhost", "localhostProfile": localhost_seccomp_profile(job.namespace)}
    spec = _pod(job, containers=[container], init_containers=[], seccomp=seccomp)
    spec["hostUsers"] = False
    return spec


def _nono_pod(job: JobInputs) -> dict[str, Any]:
    # nono's controls (Landlock, seccomp) need no privilege, and Landlock needs no_new_privs
    # for an unprivileged process anyway, so this pod is hardened throughout.
    container = _analyst_container(job)
    container["securityContext"] = {
        **app_user(),
        **no_privilege(),
        "seccompProfile": dict(RUNTIME_DEFAULT),
    }
    return _pod(job, containers=[container], init_containers=[], seccomp=RUNTIME_DEFAULT)


def _analyst_container(job: JobInputs) -> dict[str, Any]:
    variables = env.job_env(
        # The same value as the container's image (an Output in the program), so the report
        # names the image that ran.
        image=job.image,
        namespace=job.namespace,
        bucket=job.bucket,
        region=job.region,
        model_id=job.model_id,
        role_name=job.role_name,
    )
    if job.egress_denied:
        variables[env.EGRESS_DENIED] = job.egress_denied
    return {
        "name": "analyst",
        "image": job.image,
        "workingDir": env.APP_DIR,
        "command": analyst_command(job.layer, job.case_id),
        "env": [{"name": name, "value": value} for name, value in variables.items()],
        "resources": ANALYST_RESOURCES_FROM_BENCH,
        "volumeMounts": [
            {"name": "supplier-key", "mountPath": env.SUPPLIER_KEY_DIR, "readOnly": True},
            {"name": "supplier-ca", "mountPath": env.SUPPLIER_CA_DIR, "readOnly": True},
            {"name": RUN_DIR_VOLUME, "mountPath": env.RUN_DIR},
            {"name": TMP_VOLUME, "mountPath": "/tmp"},
        ],
    }


def _pod(
    job: JobInputs,
    *,
    containers: list[dict[str, Any]],
    init_containers: list[dict[str, Any]],
    seccomp: dict[str, str] | None,
) -> dict[str, Any]:
    # The key file is 0440 root:<fsGroup>, so the controller reads it by group.
    security: dict[str, Any] = {**app_user(), "fsGroup": APP_UID}
    if seccomp is not None:
        security["seccompProfile"] = seccomp
    spec: dict[str, Any] = {
        "serviceAccountName": job.service_account,
        # The controller never calls the Kubernetes API. EKS Pod Identity does not use this
        # token: its webhook injects its own projected token volume and the credential
        # variables into the pod, whatever this field says.
        "automountServiceAccountToken": False,
        "restartPolicy": "Never",
        "nodeSelector": image_node_selector(),
        "securityContext": security,
        "containers": containers,
        "volumes": [
            secret_volume("supplier-key", env.SUPPLIER_KEY_SECRET, env.SUPPLIER_KEY_ITEM),
            {"name": "supplier-ca", "configMap": {"name": env.SUPPLIER_CA_CONFIGMAP}},
            {"name": RUN_DIR_VOLUME, "emptyDir": {}},
            {"name": TMP_VOLUME, "emptyDir": {}},
        ],
    }
    if init_containers:
        spec["initContainers"] = init_containers
    if job.target is RuntimeTarget.ISOLATED_SANDBOX:
        spec["runtimeClassName"] = SANDBOX_RUNTIME_CLASS
    return spec


def secret_volume(volume: str, secret: str, *items: str) -> dict[str, Any]:
    """A Secret mounted as files of KEY_FILE_MODE; only the items named, when any are."""
    source: dict[str, Any] = {"secretName": secret, "defaultMode": KEY_FILE_MODE}
    if items:
        source["items"] = [{"key": item, "path": item} for item in items]
    return {"name": volume, "secret": source}
