"""Names the stack gives things AWS and Kubernetes constrain: ECR repositories and Jobs.

Pure: inputs in, a valid name out, or a ValueError that says which input cannot be named.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from app.core.roles import Layer

# ECR repository names: lower-case components separated by `/`, each made of alphanumeric runs
# joined by single `.`, `_` or `-`, at most 256 characters.
# https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_CreateRepository.html
ECR_NAME = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")
ECR_NAME_MAX = 256

# A Job's name is also the value of its pods' `batch.kubernetes.io/job-name` label, so it must
# be a DNS-1123 label: 63 characters at most.
JOB_NAME_MAX = 63
# The random suffix: 5 bytes, 10 hex digits.
NAME_SUFFIX_BYTES = 5
NAME_SUFFIX_LENGTH = 2 * NAME_SUFFIX_BYTES


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def slug(name: str, what: str = "name") -> str:
    """A name as an ECR path component: lower case, runs of anything else as one `-`.

    A name that had to change keeps a short digest of the original, so `Prod` and `prod` (two
    stacks) never share repositories.
    """
    shaped = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not shaped:
        raise ValueError(f"{what} {name!r} has no letter or digit to name its repositories by")
    return shaped if shaped == name else f"{shaped}-{_digest(name, 6)}"


# The stack instance's random id (pulumi-random's RandomId in the stack's own state): 4 bytes.
INSTANCE_BYTES = 4


def ecr_repository_name(
    organization: str, project: str, stack: str, image: str, instance: str
) -> str:
    """`<project>/<organization>/<stack>-<instance>/<image>`, each part a slug, within ECR's rule.

    ECR names are unique per account and Region: the same stack name of another project, or of
    the same project in another organization or fork, must not collide, and neither must two
    people's `dev` stacks on self-managed backends (S3, a file), where every stack's
    organization is `organization` (https://www.pulumi.com/docs/iac/concepts/state-and-backends/
    #scoping-diy-backend). So the stack part carries `instance`, a random id drawn once into the
    stack's own state (the bucket and roles have random suffixes of their own). A name past
    ECR's length keeps its project and image and puts one digest of the rest in between.
    """
    if not re.fullmatch(r"[0-9a-f]{1,16}", instance):
        raise ValueError(f"stack instance id {instance!r} is not a short hex string")
    stack_part = f"{slug(stack, 'stack')}-{instance}"
    parts = [slug(project, "project"), slug(organization, "organization"), stack_part]
    name = "/".join([*parts, image])
    if len(name) > ECR_NAME_MAX:
        name = f"{parts[0][:100]}/{_digest(f'{organization}/{stack}/{instance}', 16)}/{image}"
    if not ECR_NAME.fullmatch(name):
        raise ValueError(f"ECR repository name {name!r} is not valid (stack {stack!r})")
    return name


def spec_digest(run_trigger: str, spec: Any) -> str:
    """SHA-256 of a Job's trigger and rendered spec, stable across runs (keys sorted, no
    whitespace): the keeper of the random part of its name."""
    canonical = json.dumps(
        {"runTrigger": run_trigger, "spec": spec}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def rendered_suffix(digest: str) -> str:
    """What `make manifests` and the rehearsal put where the stack's random suffix goes."""
    return digest[:NAME_SUFFIX_LENGTH]


def job_name(layer: Layer, run_trigger: str, suffix: str, prefix: str = "analyst") -> str:
    """`<prefix>-<layer>-<runTrigger>-<suffix>` (prefix: analyst, or compare).

    In the stack the suffix is a random id whose keeper is the Job's spec digest: any change to
    what the Job would run, a change back to an earlier spec included, draws a new suffix, so a
    Job is never created under a name a retained Job still holds (the API server answers
    AlreadyExists), and never replaced in place under its own name.
    """
    name = f"{prefix}-{layer.value}-{run_trigger}-{suffix}"
    if len(name) > JOB_NAME_MAX:
        raise ValueError(f"Job name {name!r} is longer than {JOB_NAME_MAX} characters")
    return name
