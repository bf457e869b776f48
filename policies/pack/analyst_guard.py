"""The CrossGuard policies for the procurement analyst stack: what a reviewer checks by hand.

Each check is a plain function of a resource's properties (or of the stack's resources) that
returns the violations it finds, each naming the resource; the pulumi-policy wrappers at the
end only adapt them. A value still unknown in a preview is skipped, never guessed: the same
policies run again on `pulumi up`, when it is known.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
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
from pulumi_policy.proxy import UnknownValueError

# NOTE: `pulumi preview --policy-pack` runs this directory as a script directory (this module is
# top-level there), while the tests import the package policies.pack: load the sibling either way.
pod_guard = importlib.import_module(f"{__package__}.pod_guard" if __package__ else "pod_guard")
JOB: str = pod_guard.JOB
DEPLOYMENT: str = pod_guard.DEPLOYMENT
SERVICE_ACCOUNT: str = pod_guard.SERVICE_ACCOUNT
SANDBOX: str = pod_guard.SANDBOX
LAYER_LABEL: str = pod_guard.LAYER_LABEL

NAMESPACE = "kubernetes:core/v1:Namespace"
APPLICATION_NETWORK_POLICY = "kubernetes:networking.k8s.aws/v1alpha1:ApplicationNetworkPolicy"
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


def known(props: Mapping[str, Any], key: str) -> Any:
    """props[key], or None while a preview cannot know it (pulumi-policy raises on reading an
    unknown value, which would make the whole policy advisory): skipped now, judged on up."""
    try:
        return props.get(key)
    except UnknownValueError:
        return None


def bounded_jobs(name: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """A Job runs once, within a deadline, and has no TTL: a Job that Kubernetes deletes while
    the stack's state lists it is created again by `pulumi refresh` and `up`, the case re-run."""
    if resource_type != JOB:
        return []
    spec = props.get("spec") or {}
    violations = []
    if spec.get("backoffLimit") != 0:
        violations.append(f"{name}: backoffLimit is {spec.get('backoffLimit')!r}, not 0")
    value = spec.get("activeDeadlineSeconds")
    # The engine sends every number as a double: 1800 arrives as 1800.0.
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        violations.append(
            f"{name}: activeDeadlineSeconds is not set to a positive number of seconds"
        )
    if "ttlSecondsAfterFinished" in spec:
        violations.append(
            f"{name}: ttlSecondsAfterFinished is set: Kubernetes would delete the finished Job the "
            "stack still lists, and `pulumi refresh` then `up` would run the case again"
        )
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
    "analyst-pods-sandboxed-or-hardened": (
        "Every analyst pod runs in isolated-sandbox, or unprivileged and under seccomp outside it.",
        pod_guard.sandboxed_or_hardened,
    ),
    "privileged-only-for-sandboxed-bubblewrap": (
        "privileged only on the isolated-sandbox bubblewrap Job's init and analyst containers.",
        pod_guard.privileged_containers,
    ),
    "no-user-namespace-in-sandbox": (
        "No isolated-sandbox pod sets hostUsers: false.",
        pod_guard.no_user_namespace_in_sandbox,
    ),
    "unmasked-proc-only-for-bubblewrap-in-own-user-namespace": (
        "procMount: Unmasked only in the bubblewrap pod, and only with hostUsers: false.",
        pod_guard.unmasked_proc,
    ),
    "non-root-except-userns-init": (
        "Everything is non-root except the isolated-sandbox bubblewrap Job's init container.",
        pod_guard.non_root,
    ),
    "no-service-account-token": ("automountServiceAccountToken: false.", pod_guard.no_token_mount),
    "no-pod-identity-in-init-containers": (
        "No init container of an analyst pod gets the role's credentials from Pod Identity.",
        pod_guard.no_credentials_for_root_init,
    ),
    "jobs-run-once-with-deadline-no-ttl": (
        "Jobs have backoffLimit 0, a deadline and no TTL.",
        bounded_jobs,
    ),
    "ecr-scan-on-push": ("ECR repositories scan on push.", scan_on_push),
    "no-rehearsal-switch": (
        f"No pod sets {pod_guard.REHEARSAL_SWITCH}: the offline model is for rehearsals only.",
        pod_guard.no_rehearsal_switch,
    ),
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
        known(r.props, "bucket")
        for r in resources
        if r.resource_type == BUCKET and isinstance(known(r.props, "bucket"), str)
    }
    violations = []
    for policy in (r for r in resources if r.resource_type == ROLE_POLICY):
        document = known(policy.props, "policy")
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
    # pulumi-policy hands the properties over as Mapping and Sequence proxies, not dicts and
    # lists; an unknown value is skipped.
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key in value:
            yield from _strings(known(value, key))
    elif isinstance(value, Sequence):
        for index in range(len(value)):
            try:
                item = value[index]
            except UnknownValueError:
                continue
            yield from _strings(item)


def no_secret_in_outputs(resources: list[StackResource]) -> list[tuple[str, str]]:
    """No stack output holds a secret value of any resource, in part or whole."""
    secrets = {
        value
        for r in resources
        for prop in SECRET_PROPERTIES.get(r.resource_type, ())
        for value in _strings(known(r.props, prop))
        if len(value) >= MIN_SECRET_LENGTH
    }
    violations = []
    for stack in (r for r in resources if r.resource_type == STACK):
        for output in stack.props:
            if any(
                secret in text
                for text in _strings(known(stack.props, output))
                for secret in secrets
            ):
                violations.append((f"stack output {output!r} holds a secret value", stack.urn))
    return violations


def namespace_pod_security(resources: list[StackResource]) -> list[tuple[str, str]]:
    """Each namespace enforces a Pod Security level, and `privileged` only for a pod that is."""
    privileged_pod = any(
        pod_guard.is_sandboxed_bubblewrap_job(r.resource_type, r.props)
        and any(
            (c.get("securityContext") or {}).get("privileged")
            for _, c in pod_guard.containers(pod_guard.pod_spec(r.resource_type, r.props) or {})
        )
        for r in resources
    )
    violations = []
    for namespace in (r for r in resources if r.resource_type == NAMESPACE):
        level = ((namespace.props.get("metadata") or {}).get("labels") or {}).get(
            pod_guard.ENFORCE_LABEL
        )
        if level is None:
            violations.append((f"{namespace.name}: enforces no Pod Security level", namespace.urn))
        elif level == "privileged" and not privileged_pod:
            violations.append(
                (
                    f"{namespace.name}: enforces 'privileged' though no pod of the stack is",
                    namespace.urn,
                )
            )
    return violations


def analyst_egress_bounded(resources: list[StackResource]) -> list[tuple[str, str]]:
    """With egressPolicy on (the analyst Jobs are told to probe it), an ApplicationNetworkPolicy
    with egress rules selects every analyst pod in its namespace."""
    policies = [r for r in resources if r.resource_type == APPLICATION_NETWORK_POLICY]
    violations = []
    for job in (r for r in resources if r.resource_type == JOB):
        if not pod_guard.probes_bounded_egress(job.props):
            continue
        labels = pod_guard.template_labels(job.props)
        namespace = (job.props.get("metadata") or {}).get("namespace")
        selected = any(
            (policy.props.get("metadata") or {}).get("namespace") == namespace
            and "Egress" in ((policy.props.get("spec") or {}).get("policyTypes") or [])
            and all(
                labels.get(key) == value
                for key, value in (
                    ((policy.props.get("spec") or {}).get("podSelector") or {}).get("matchLabels")
                    or {}
                ).items()
            )
            for policy in policies
        )
        if not selected:
            violations.append(
                (
                    f"{job.name}: an analyst pod that probes its bounded egress, but no "
                    "ApplicationNetworkPolicy selects it",
                    job.urn,
                )
            )
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
    "analyst-egress-bounded": (
        "With egressPolicy on, an ApplicationNetworkPolicy bounds every analyst pod's egress.",
        analyst_egress_bounded,
    ),
    "namespace-enforces-pod-security": (
        "The namespace enforces a Pod Security level; privileged only for a privileged pod.",
        namespace_pod_security,
    ),
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
