"""Names the stack gives things AWS and Kubernetes constrain: ECR repositories and analyst Jobs.

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
REPOSITORY_PREFIX = "procurement-analyst"

# A Job's name is also the value of its pods' `batch.kubernetes.io/job-name` label, so it must
# be a DNS-1123 label: 63 characters at most.
JOB_NAME_MAX = 63
SPEC_HASH_LENGTH = 10


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def stack_slug(stack: str) -> str:
    """The stack name as an ECR path component: lower case, runs of anything else as one `-`.

    A name that had to change keeps a short digest of the original, so `Prod` and `prod` (two
    stacks) never share repositories.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", stack.lower()).strip("-")
    if not slug:
        raise ValueError(f"stack name {stack!r} has no letter or digit to name its repositories by")
    return slug if slug == stack else f"{slug}-{_digest(stack, 6)}"


def ecr_repository_name(stack: str, image: str) -> str:
    """`procurement-analyst/<stack slug>/<image>`, checked against ECR's naming rule."""
    name = f"{REPOSITORY_PREFIX}/{stack_slug(stack)}/{image}"
    if len(name) > ECR_NAME_MAX or not ECR_NAME.fullmatch(name):
        raise ValueError(f"ECR repository name {name!r} is not valid (stack {stack!r})")
    return name


def spec_hash(spec: Any) -> str:
    """A short digest of a rendered spec, stable across runs (keys sorted, no whitespace)."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return _digest(canonical, SPEC_HASH_LENGTH)


def job_name(layer: Layer, run_trigger: str, spec: Any, prefix: str = "analyst") -> str:
    """`<prefix>-<layer>-<runTrigger>-<hash of the Job spec>` (prefix: analyst, or compare).

    Any change to what the Job would run gives a new name, so a Job is never replaced in place
    under the same name (which races the old object's deletion): the new one is created beside
    it, and the old one is left to its TTL with its log.
    """
    name = f"{prefix}-{layer.value}-{run_trigger}-{spec_hash(spec)}"
    if len(name) > JOB_NAME_MAX:
        raise ValueError(f"Job name {name!r} is longer than {JOB_NAME_MAX} characters")
    return name
