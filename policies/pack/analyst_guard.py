"""The CrossGuard policies for the procurement analyst stack: what a reviewer checks by hand.

Each check is a plain function of a resource's properties (or of the stack's resources) that
returns the violations it finds, each naming the resource; the pulumi-policy wrappers at the
end only adapt them. A value still unknown in a preview is skipped, never guessed: the same
policies run again on `pulumi up`, when it is known.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

SANDBOX = "isolated-sandbox"
# The pods' labels, as app/core/cluster_env.py names them (a test keeps the two in step: the
# pack runs on its own, without the application's packages).
COMPONENT_LABEL = "app.kubernetes.io/name"
ANALYST_COMPONENT = "analyst"
COMPARISON_COMPONENT = "ordinary-comparison"
LAYER_LABEL = "procurement-analyst/layer"
# The only containers that may be privileged, and the only one that may be root: bwrap's
# private procfs needs a privileged controller, and only root can raise the guest's user
# namespace limit before it starts (infra/pod_specs.py says why).
PRIVILEGED_CONTAINERS = {("initContainers", "raise-userns-limit"), ("containers", "analyst")}
ROOT_CONTAINER = ("initContainers", "raise-userns-limit")

# Only `python -m rehearsal` sets this variable (app/core/cluster_env.REHEARSAL): in a deployed
# pod it would swap Bedrock for the offline model and skip the image's provenance checks.
REHEARSAL_SWITCH = "ANALYST_REHEARSAL"

JOB = "kubernetes:batch/v1:Job"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
BUCKET = "aws:s3/bucket:Bucket"
PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
)
REPOSITORY = "aws:ecr/repository:Repository"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
STACK = "pulumi:pulumi:Stack"
PUBLIC_ACCESS_FLAGS = (
    "blockPublicAcls",
    "blockPublicPolicy",
    "ignorePublicAcls",
    "restrictPublicBuckets",
)
ENCRYPTION_ALGORITHMS = {"AES256", "aws:kms", "aws:kms:dsse"}
# Properties that hold a secret value, by resource type: none may appear in a stack output.
SECRET_PROPERTIES: dict[str, tuple[str, ...]] = {
    "random:index/randomPassword:RandomPassword": ("result",),
    "tls:index/privateKey:PrivateKey": ("privateKeyPem", "privateKeyOpenssh", "privateKeyPemPkcs8"),
    "kubernetes:core/v1:Secret": ("stringData", "data"),
}
# A secret shorter than this is not looked for: it would match by chance.
MIN_SECRET_LENGTH = 8


def _pod_spec(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if resource_type not in (JOB, DEPLOYMENT):
        return None
    spec: Mapping[str, Any] = (props.get("spec") or {}).get("template", {}).get("spec") or {}
    return spec


def _is_bubblewrap_job(resource_type: str, props: Mapping[str, Any]) -> bool:
    labels = (props.get("metadata") or {}).get("labels") or {}
    return (
        resource_type == JOB
        and labels.get(LAYER_LABEL) == "bubblewrap"
        and labels.get(COMPONENT_LABEL) == ANALYST_COMPONENT
    )


def _containers(spec: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for kind in ("initContainers", "containers"):
        for container in spec.get(kind) or []:
            yield kind, container


# --- resource checks: (name, resource type, props) -> violations ---------------------------


def _component(props: Mapping[str, Any]) -> str | None:
    labels = (props.get("metadata") or {}).get("labels") or {}
    component = labels.get(COMPONENT_LABEL)
    return component if isinstance(component, str) else None


def sandbox_runtime(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Every analyst pod runs in the isolated-sandbox RuntimeClass (the ordinary comparison
    pod must not: it shows what a pod outside the sandbox reports on the same node)."""
    if resource_type != JOB:
        return []
    found = (_pod_spec(resource_type, props) or {}).get("runtimeClassName")
    if _component(props) == COMPARISON_COMPONENT:
        if found is not None:
            return [f"{name}: the ordinary comparison pod runs in RuntimeClass {found!r}"]
        return []
    if found != SANDBOX:
        return [f"{name}: the analyst pod runs in RuntimeClass {found!r}, not {SANDBOX!r}"]
    return []


def privileged_containers(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """`privileged` only on the bubblewrap Job's init container and analyst container."""
    spec = _pod_spec(resource_type, props)
    if spec is None:
        return []
    allowed = PRIVILEGED_CONTAINERS if _is_bubblewrap_job(resource_type, props) else set()
    return [
        f"{name}: container {container.get('name')!r} is privileged"
        for kind, container in _containers(spec)
        if (container.get("securityContext") or {}).get("privileged")
        and (kind, container.get("name")) not in allowed
    ]


def non_root(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """The pod and every container run as non-root, except the bubblewrap Job's init container."""
    spec = _pod_spec(resource_type, props)
    if spec is None:
        return []
    violations = []
    pod = spec.get("securityContext") or {}
    if pod.get("runAsNonRoot") is not True or pod.get("runAsUser") == 0:
        violations.append(f"{name}: the pod does not set runAsNonRoot: true with a non-root uid")
    exempt = {ROOT_CONTAINER} if _is_bubblewrap_job(resource_type, props) else set()
    for kind, container in _containers(spec):
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
        spec = _pod_spec(resource_type, props)
        if spec is None:
            return []
        source = spec
    if source.get("automountServiceAccountToken") is not False:
        return [f"{name}: automountServiceAccountToken is not false"]
    return []


def no_rehearsal_switch(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """No container of any pod sets the rehearsal's switch."""
    spec = _pod_spec(resource_type, props)
    if spec is None:
        return []
    return [
        f"{name}: container {container.get('name')!r} sets {REHEARSAL_SWITCH}, which only a "
        "rehearsal may set"
        for _, container in _containers(spec)
        if any(
            (entry or {}).get("name") == REHEARSAL_SWITCH for entry in container.get("env") or []
        )
    ]


def bounded_jobs(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """A Job runs once, within a deadline, and is cleaned up after a TTL."""
    if resource_type != JOB:
        return []
    spec = props.get("spec") or {}
    violations = []
    if spec.get("backoffLimit") != 0:
        violations.append(f"{name}: backoffLimit is {spec.get('backoffLimit')!r}, not 0")
    for field in ("activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        value = spec.get(field)
        if not isinstance(value, int) or value <= 0:
            violations.append(f"{name}: {field} is not set to a positive number of seconds")
    return violations


def scan_on_push(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """Every ECR repository scans each image on push."""
    if resource_type != REPOSITORY:
        return []
    scanning = props.get("imageScanningConfiguration") or {}
    if scanning.get("scanOnPush") is not True:
        return [f"{name}: the ECR repository does not scan images on push"]
    return []


RESOURCE_CHECKS: dict[str, tuple[str, Callable[[str, str, Mapping[str, Any]], list[str]]]] = {
    "analyst-pods-in-sandbox": ("Every analyst pod runs in isolated-sandbox.", sandbox_runtime),
    "privileged-only-for-bubblewrap": (
        "privileged only on the bubblewrap Job's init and analyst containers.",
        privileged_containers,
    ),
    "non-root-except-userns-init": (
        "Everything is non-root except the bubblewrap Job's init container.",
        non_root,
    ),
    "no-service-account-token": ("automountServiceAccountToken: false.", no_token_mount),
    "no-rehearsal-switch": (
        f"No pod sets {REHEARSAL_SWITCH}: the offline model is for rehearsals only.",
        no_rehearsal_switch,
    ),
    "jobs-run-once-with-deadline-and-ttl": (
        "Jobs have backoffLimit 0, a deadline and a TTL.",
        bounded_jobs,
    ),
    "ecr-scan-on-push": ("ECR repositories scan on push.", scan_on_push),
}


# --- stack checks: resources -> (violation, urn) -------------------------------------------


class StackResource:
    """What a stack check needs of one resource: the shape of pulumi-policy's PolicyResource."""

    def __init__(
        self,
        resource_type: str,
        urn: str,
        name: str,
        props: Mapping[str, Any],
        property_dependencies: Mapping[str, list[str]],
    ) -> None:
        self.resource_type = resource_type
        self.urn = urn
        self.name = name
        self.props = props
        self.property_dependencies = property_dependencies


def _for_bucket(bucket: StackResource, candidates: Iterable[StackResource]) -> list[StackResource]:
    """The resources whose `bucket` input is this bucket (by dependency, known in preview too)."""
    return [
        resource
        for resource in candidates
        if bucket.urn in resource.property_dependencies.get("bucket", [])
    ]


def bucket_locked_down(resources: list[StackResource]) -> list[tuple[str, str]]:
    """Each bucket has every public access flag on and default encryption."""
    violations = []
    blocks = [r for r in resources if r.resource_type == PUBLIC_ACCESS_BLOCK]
    encryptions = [r for r in resources if r.resource_type == ENCRYPTION]
    for bucket in (r for r in resources if r.resource_type == BUCKET):
        matching = _for_bucket(bucket, blocks)
        if not any(all(b.props.get(f) is True for f in PUBLIC_ACCESS_FLAGS) for b in matching):
            violations.append((f"{bucket.name}: public access is not blocked", bucket.urn))
        algorithms = {
            (rule.get("applyServerSideEncryptionByDefault") or {}).get("sseAlgorithm")
            for e in _for_bucket(bucket, encryptions)
            for rule in e.props.get("rules") or []
        }
        if not algorithms & ENCRYPTION_ALGORITHMS:
            violations.append((f"{bucket.name}: no default encryption", bucket.urn))
    return violations


def _statements(document: Any) -> list[Mapping[str, Any]]:
    parsed = json.loads(document) if isinstance(document, str) else document
    statements = parsed.get("Statement") or []
    return [statements] if isinstance(statements, dict) else list(statements)


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def iam_least_privilege(resources: list[StackResource]) -> list[tuple[str, str]]:
    """No `*` in an action, and every S3 resource within the stack's own bucket."""
    buckets = {
        r.props["bucket"]
        for r in resources
        if r.resource_type == BUCKET and isinstance(r.props.get("bucket"), str)
    }
    violations = []
    for policy in (r for r in resources if r.resource_type == ROLE_POLICY):
        document = policy.props.get("policy")
        if not isinstance(document, str):
            continue  # unknown until the bucket exists: checked again on `pulumi up`
        for statement in _statements(document):
            for action in _as_list(statement.get("Action")) + _as_list(statement.get("NotAction")):
                if "*" in action:
                    message = f"{policy.name}: action {action!r} has a wildcard"
                    violations.append((message, policy.urn))
            for arn in _as_list(statement.get("Resource")):
                match = re.fullmatch(r"arn:[^:]+:s3:::([^/]+)(/.*)?", arn)
                if match and match[1] not in buckets:
                    violations.append(
                        (f"{policy.name}: {arn} is outside the stack's bucket", policy.urn)
                    )
    return violations


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def no_secret_in_outputs(resources: list[StackResource]) -> list[tuple[str, str]]:
    """No stack output holds a secret value of any resource, in part or whole."""
    secrets = {
        value
        for r in resources
        for prop in SECRET_PROPERTIES.get(r.resource_type, ())
        for value in _strings(r.props.get(prop))
        if len(value) >= MIN_SECRET_LENGTH
    }
    violations = []
    for stack in (r for r in resources if r.resource_type == STACK):
        for output, value in stack.props.items():
            if any(secret in text for text in _strings(value) for secret in secrets):
                violations.append((f"stack output {output!r} holds a secret value", stack.urn))
    return violations


STACK_CHECKS: dict[str, tuple[str, Callable[[list[StackResource]], list[tuple[str, str]]]]] = {
    "bucket-private-and-encrypted": (
        "The bucket blocks public access and is encrypted.",
        bucket_locked_down,
    ),
    "iam-least-privilege": (
        "IAM policies have no * action and are scoped to the stack's bucket.",
        iam_least_privilege,
    ),
    "no-secret-in-plain-output": ("No secret value is in a stack output.", no_secret_in_outputs),
}


# --- pulumi-policy adapters ----------------------------------------------------------------


def _resource_policy(
    name: str, description: str, check: Callable[[str, str, Mapping[str, Any]], list[str]]
) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        for violation in check(args.name, args.resource_type, args.props):
            report(violation, None)

    return ResourceValidationPolicy(name, description, validate)


def _stack_policy(
    name: str, description: str, check: Callable[[list[StackResource]], list[tuple[str, str]]]
) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        resources = [
            StackResource(
                r.resource_type,
                r.urn,
                r.name,
                r.props,
                {key: [dep.urn for dep in deps] for key, deps in r.property_dependencies.items()},
            )
            for r in args.resources
        ]
        for violation, urn in check(resources):
            report(violation, urn)

    return StackValidationPolicy(name, description, validate)


def policies() -> list[Policy]:
    """Every policy of the pack."""
    found: list[Policy] = [
        _resource_policy(name, description, check)
        for name, (description, check) in RESOURCE_CHECKS.items()
    ]
    found += [
        _stack_policy(name, description, check)
        for name, (description, check) in STACK_CHECKS.items()
    ]
    return found


ENFORCEMENT = EnforcementLevel.MANDATORY
