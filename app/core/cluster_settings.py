"""The cluster-mode settings, parsed strictly into one typed object before anything is created.

Every variable the Job and EKS Pod Identity give the controller is named here with one parser
(app/core/setting_parsers.py), which says what it accepts. The run stops with the
first unusable variable (exit 2, its name and what it accepts); `doctor` in the pod shows every
one with the same parser and the same words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

from app.core import cluster_env
from app.core.errors import BadInput
from app.core.setting_parsers import (
    Endpoint,
    Unusable,
    ca_file,
    credentials_uri,
    destinations,
    https_service,
    key_file,
    name_parser,
    read_key_file,
    rehearsal_switch,
    token_file,
)

T = TypeVar("T")

_BUCKET: Final = re.compile(r"^(?!.*\.\.)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION: Final = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$")
_ROLE_NAME: Final = re.compile(r"^[A-Za-z0-9+=,.@_-]{1,64}$")
_MODEL_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,2047}$")


class SettingUnusable(BadInput):
    """A cluster-mode variable is missing or unusable; the message names it."""

    def __init__(self, name: str, message: str, remedy: str) -> None:
        super().__init__(message, remedy)
        self.name = name


@dataclass(frozen=True)
class Variable(Generic[T]):
    """One variable cluster mode reads: its name, what it is, and how it is parsed."""

    name: str
    what: str
    parse: Callable[[str], T]
    # Who sets it, for the remedy when it is missing.
    set_by: str = "the analyst Job sets it"
    # The value when it is not set at all, for a variable that may be left out.
    default: Callable[[], T] | None = None

    def value(self, environ: Mapping[str, str]) -> T:
        """The variable's value, parsed; SettingUnusable when it is missing or unusable."""
        text = environ.get(self.name)
        if text is None and self.default is not None:
            return self.default()
        if text is None or (not text and self.default is None):
            raise SettingUnusable(self.name, f"{self.name} is not set", self.set_by)
        try:
            return self.parse(text)
        except Unusable as error:
            raise SettingUnusable(
                self.name,
                f"{self.name}={text!r}: {error.problem}",
                f"{self.name} must be {error.accepts}",
            ) from None


POD_IDENTITY = (
    "EKS Pod Identity sets it: create the association for the analyst ServiceAccount before "
    "the pod starts (pulumi up does), and on a cluster without Auto Mode the "
    "eks-pod-identity-agent add-on"
)

BUCKET: Final = Variable(
    cluster_env.BUCKET,
    "an S3 bucket name",
    name_parser(
        _BUCKET,
        "an S3 bucket name",
        "3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit at each end, "
        "no two dots together",
    ),
)
REGION: Final = Variable(
    cluster_env.REGION,
    "an AWS Region name",
    name_parser(_REGION, "an AWS Region name", "a Region name such as us-west-2"),
)
MODEL_ID: Final = Variable(
    cluster_env.MODEL_ID,
    "a Bedrock model id",
    name_parser(
        _MODEL_ID,
        "a Bedrock model id",
        "a model or inference profile id (letters, digits and . : / _ -), such as "
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ),
)
ROLE_NAME: Final = Variable(
    cluster_env.ROLE_NAME,
    "an IAM role name",
    name_parser(_ROLE_NAME, "an IAM role name", "1 to 64 letters, digits and + = , . @ _ -"),
)
SUPPLIER_URL: Final = Variable(
    cluster_env.SUPPLIER_API_URL, "the supplier Service's URL", https_service
)
SUPPLIER_ALIAS_URL: Final = Variable(
    cluster_env.SUPPLIER_API_ALIAS_URL, "the supplier alias Service's URL", https_service
)
SUPPLIER_KEY_FILE: Final = Variable(
    cluster_env.SUPPLIER_KEY_FILE, "the supplier key file", key_file
)
SUPPLIER_CA_FILE: Final = Variable(
    cluster_env.SUPPLIER_CA_FILE, "the supplier's CA certificate file", ca_file
)
CREDENTIALS_URI: Final = Variable(
    cluster_env.POD_IDENTITY_URI, "the Pod Identity credential URI", credentials_uri,
    POD_IDENTITY,
)  # fmt: skip
TOKEN_FILE: Final = Variable(
    cluster_env.POD_IDENTITY_TOKEN_FILE, "the Pod Identity token file", token_file,
    POD_IDENTITY,
)  # fmt: skip
REHEARSAL: Final = Variable(
    cluster_env.REHEARSAL, "the rehearsal switch", rehearsal_switch, default=lambda: False
)

EGRESS_DENIED: Final[Variable[tuple[tuple[str, int], ...]]] = Variable(
    cluster_env.EGRESS_DENIED,
    "the destinations the pod's egress policy denies",
    destinations,
    default=lambda: (),
)

VARIABLES: Final[tuple[Variable[Any], ...]] = (
    BUCKET,
    REGION,
    MODEL_ID,
    ROLE_NAME,
    SUPPLIER_URL,
    SUPPLIER_ALIAS_URL,
    SUPPLIER_KEY_FILE,
    SUPPLIER_CA_FILE,
    CREDENTIALS_URI,
    TOKEN_FILE,
    REHEARSAL,
    EGRESS_DENIED,
)


def problems(environ: Mapping[str, str]) -> list[SettingUnusable]:
    """Every variable that is missing (those first) or unusable."""
    found = []
    for variable in VARIABLES:
        try:
            variable.value(environ)
        except SettingUnusable as problem:
            found.append(problem)
    return sorted(found, key=lambda problem: not problem.message.endswith(" is not set"))


@dataclass(frozen=True)
class ClusterSettings:
    """Everything cluster mode reads from its environment, each value checked."""

    bucket: str
    region: str
    model_id: str
    role_name: str
    supplier: Endpoint
    supplier_alias: Endpoint
    supplier_key_file: Path
    supplier_ca_file: Path
    credentials_agent: Endpoint
    token_file: Path
    rehearsal: bool
    # Read here once, so a key file that cannot be used stops the run before anything exists.
    supplier_key: bytes = field(repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ClusterSettings:
        """The settings, or SettingUnusable for the first variable that is missing or unusable,
        naming the others that are too."""
        found = problems(environ)
        if found:
            first, *others = found
            if not others:
                raise first
            names = ", ".join(problem.name for problem in others)
            raise SettingUnusable(
                first.name,
                first.message,
                f"{first.remedy} (also unusable: {names}; `doctor` shows each)",
            )
        key_path = SUPPLIER_KEY_FILE.value(environ)
        try:
            key = read_key_file(key_path)
        except Unusable as error:  # it changed since it was checked a moment ago
            raise SettingUnusable(
                SUPPLIER_KEY_FILE.name, f"{SUPPLIER_KEY_FILE.name}: {error.problem}", ""
            ) from None
        return cls(
            bucket=BUCKET.value(environ),
            region=REGION.value(environ),
            model_id=MODEL_ID.value(environ),
            role_name=ROLE_NAME.value(environ),
            supplier=SUPPLIER_URL.value(environ),
            supplier_alias=SUPPLIER_ALIAS_URL.value(environ),
            supplier_key_file=key_path,
            supplier_ca_file=SUPPLIER_CA_FILE.value(environ),
            credentials_agent=CREDENTIALS_URI.value(environ),
            token_file=TOKEN_FILE.value(environ),
            rehearsal=REHEARSAL.value(environ),
            supplier_key=key,
        )
