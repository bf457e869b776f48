"""The rules a stack setting must meet where it ends up: an EKS cluster name, a Kubernetes
namespace, an OCI image reference, a Kubernetes version. Pure: a value in, the reason it is not
acceptable out (empty when it is), so `infra/config.py` refuses it before the first resource.
"""

from __future__ import annotations

import difflib
import re
from typing import Final

# EKS CreateCluster: 1 to 100 characters, letters, digits, '-' and '_', starting with a letter
# or digit. https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html
EKS_CLUSTER_NAME: Final = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}")

# A namespace name is a DNS-1123 label (Kubernetes' validation.IsDNS1123Label).
DNS_LABEL: Final = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
# Namespaces Kubernetes creates and owns; `kube-` is its prefix for the system's own.
# https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/
RESERVED_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
RESERVED_NAMESPACE_PREFIX: Final = "kube-"

# The reference grammar of the distribution project (distribution/reference, reference.go), which
# the OCI distribution spec and every runtime parse image names with:
#   reference := name [ ":" tag ] [ "@" digest ]; name := [domain "/"] path; path at most 255.
_ALPHANUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = rf"{_ALPHANUMERIC}(?:{_SEPARATOR}{_ALPHANUMERIC})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_REFERENCE: Final = re.compile(rf"(?P<name>{_NAME})(?::{_TAG})?(?:@{_DIGEST})?")
IMAGE_NAME_MAX: Final = 255

# MAJOR.MINOR, each a decimal number without leading zeros (Kubernetes' own version form).
MAJOR_MINOR: Final = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def cluster_name_problem(value: str) -> str:
    if EKS_CLUSTER_NAME.fullmatch(value):
        return ""
    return (
        "must be an EKS cluster name: 1 to 100 letters, digits, '-' or '_', starting with a "
        "letter or digit"
    )


def namespace_problem(value: str) -> str:
    if not DNS_LABEL.fullmatch(value):
        return (
            "must be a DNS-1123 label: at most 63 lower-case letters, digits and '-', starting "
            "and ending with a letter or digit"
        )
    if value in RESERVED_NAMESPACES or value.startswith(RESERVED_NAMESPACE_PREFIX):
        return (
            "is a namespace Kubernetes reserves for itself (default, and kube-*); the stack "
            "creates and deletes its own namespace, so name one it alone owns"
        )
    return ""


def image_reference_problem(value: str) -> str:
    match = IMAGE_REFERENCE.fullmatch(value)
    if match is None:
        return (
            "must be an image reference, [registry/]repository[:tag][@sha256:digest], in lower "
            "case (the OCI reference grammar)"
        )
    if len(match["name"]) > IMAGE_NAME_MAX:
        return f"has a name longer than {IMAGE_NAME_MAX} characters, which registries refuse"
    return ""


def version_problem(value: str, floor: tuple[int, int]) -> str:
    match = MAJOR_MINOR.fullmatch(value)
    if match is None or (int(match[1]), int(match[2])) < floor:
        least = ".".join(map(str, floor))
        return f"must be a MAJOR.MINOR version of at least {least}, without leading zeros"
    return ""


def nearest(key: str, known: list[str]) -> str:
    """The known key a mistyped one most likely meant, or empty when none is close."""
    lowered = {name.lower(): name for name in known}
    if key.lower() in lowered:
        return lowered[key.lower()]
    close = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else ""
