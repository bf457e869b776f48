"""The stack's typed configuration: one pydantic model, read from `pulumi.Config` and validated.

Every key has its default here; `Pulumi.yaml` describes each key and repeats the same default
so the CLI shows it, and a test fails when the two disagree.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from app.core.ids import ID_PATTERN, is_valid_id
from app.core.roles import Layer

from .cluster_checks import MIN_KUBERNETES
from .config_rules import (
    cluster_name_problem,
    image_reference_problem,
    namespace_problem,
    nearest,
    version_problem,
)
from .targets import RuntimeTarget, needs_security_profiles

REPO_ROOT = Path(__file__).resolve().parents[1]
CASES_DIR = REPO_ROOT / "cases"

# The project name from Pulumi.yaml: config keys live in this namespace.
PROJECT = "procurement-analyst"


# A DNS-1123 label, short enough that `analyst-<layer>-<trigger>-<spec hash>` stays a valid Job
# name (at most 63 characters; see infra/naming.py).
_RUN_TRIGGER = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
# Bedrock model and inference-profile ids, e.g. `global.anthropic.claude-sonnet-4-5-...-v1:0`.
_MODEL_ID = re.compile(r"^[a-z0-9][a-z0-9.-]{2,126}(:[0-9]+)?$")
# A named profile of the AWS CLI's config files, and an IAM role ARN in any partition.
_AWS_PROFILE = re.compile(r"^[A-Za-z0-9_.@+=,-]{1,64}$")
_ROLE_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::\d{12}:role/[A-Za-z0-9_+=,.@/-]{1,512}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
# EKS needs subnets in at least two Availability Zones; two subnets is the least that can be.
MIN_SUBNETS = 2


class ClusterMode(StrEnum):
    """Whether the stack uses a cluster it is given or creates its own."""

    EXISTING = "existing"
    CREATE = "create"


class ImageMode(StrEnum):
    """Whether the stack builds the two images into ECR or is handed prebuilt references."""

    BUILD = "build"
    PREBUILT = "prebuilt"


class BucketOnDestroy(StrEnum):
    """What `pulumi destroy` does with the case bucket."""

    RETAIN = "retain"
    FORCE_DESTROY = "force-destroy"


class ClusterAddons(StrEnum):
    """Who installs the cluster-wide operators the hardened-container target needs."""

    # This stack installs cert-manager and the Security Profiles Operator, once per cluster.
    INSTALL = "install"
    # Another stack (or the cluster's owner) installed them; this stack only uses them.
    EXISTING = "existing"


class StackConfig(BaseModel):
    """Every setting a stack can choose, with its default."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    region: str = "us-west-2"
    cluster_mode: ClusterMode = Field(ClusterMode.EXISTING, alias="clusterMode")
    cluster_name: str = Field("procurement-analyst", alias="clusterName")
    kubernetes_version: str = Field("1.36", alias="kubernetesVersion")
    cluster_creator_admin: bool = Field(False, alias="clusterCreatorAdmin")
    namespace: str = "procurement-analyst"
    case_id: str = Field("rfp-001", alias="caseId")
    model_id: str = Field("global.anthropic.claude-sonnet-4-5-20250929-v1:0", alias="modelId")
    layers: tuple[Layer, ...] = (Layer.BUBBLEWRAP, Layer.NONO)
    runtime_target: RuntimeTarget = Field(RuntimeTarget.ISOLATED_SANDBOX, alias="runtimeTarget")
    node_app_armor: bool = Field(False, alias="nodeAppArmor")
    cluster_addons: ClusterAddons = Field(ClusterAddons.EXISTING, alias="clusterAddons")
    egress_policy: bool = Field(False, alias="egressPolicy")
    cluster_dns_address: str = Field("", alias="clusterDnsAddress")
    image_mode: ImageMode = Field(ImageMode.BUILD, alias="imageMode")
    analyst_image: str = Field("", alias="analystImage")
    supplier_image: str = Field("", alias="supplierImage")
    bucket_on_destroy: BucketOnDestroy = Field(BucketOnDestroy.RETAIN, alias="bucketOnDestroy")
    bucket_versioning: bool = Field(True, alias="bucketVersioning")
    run_trigger: str = Field("1", alias="runTrigger")
    comparison_pod: bool = Field(False, alias="comparisonPod")
    aws_profile: str = Field("", alias="awsProfile")
    aws_role_arn: str = Field("", alias="awsRoleArn")
    preview_role_arn: str = Field("", alias="previewRoleArn")
    owner: str = ""
    vpc_id: str = Field("", alias="vpcId")
    subnet_ids: tuple[str, ...] = Field((), alias="subnetIds")

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not _REGION.fullmatch(value):
            raise ValueError(
                f"must be an AWS Region name such as us-west-2, matching {_REGION.pattern}"
            )
        return value

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str) -> str:
        return _accept(value, cluster_name_problem(value))

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return _accept(value, namespace_problem(value))

    @field_validator("analyst_image", "supplier_image")
    @classmethod
    def _image(cls, value: str) -> str:
        return _accept(value, image_reference_problem(value) if value else "")

    @field_validator("case_id")
    @classmethod
    def _case_id(cls, value: str) -> str:
        if not is_valid_id(value):
            raise ValueError(f"must match {ID_PATTERN.pattern}")
        if not (CASES_DIR / value / "case.json").is_file():
            known = sorted(p.name for p in CASES_DIR.iterdir() if (p / "case.json").is_file())
            raise ValueError(f"has no folder cases/{value}/case.json; allowed: {', '.join(known)}")
        return value

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not _MODEL_ID.fullmatch(value):
            raise ValueError(
                f"must be a Bedrock model or inference profile id matching {_MODEL_ID.pattern}"
            )
        return value

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        return _accept(value, version_problem(value, MIN_KUBERNETES))

    @field_validator("layers")
    @classmethod
    def _layers(cls, value: tuple[Layer, ...]) -> tuple[Layer, ...]:
        if not value or len(set(value)) != len(value):
            allowed = ", ".join(layer.value for layer in Layer)
            raise ValueError(f"must name each of {allowed} at most once, and at least one")
        return value

    @field_validator("run_trigger")
    @classmethod
    def _run_trigger(cls, value: str) -> str:
        if not _RUN_TRIGGER.fullmatch(value):
            raise ValueError(f"must match {_RUN_TRIGGER.pattern}: it becomes part of the Job name")
        return value

    @field_validator("aws_profile")
    @classmethod
    def _aws_profile(cls, value: str) -> str:
        if value and not _AWS_PROFILE.fullmatch(value):
            raise ValueError(f"must be an AWS CLI profile name matching {_AWS_PROFILE.pattern}")
        return value

    @field_validator("aws_role_arn", "preview_role_arn")
    @classmethod
    def _aws_role_arn(cls, value: str) -> str:
        if value and not _ROLE_ARN.fullmatch(value):
            raise ValueError("must be an IAM role ARN, arn:<partition>:iam::<account>:role/<name>")
        return value

    @field_validator("cluster_dns_address")
    @classmethod
    def _cluster_dns_address(cls, value: str) -> str:
        if value:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise ValueError("must be an IPv4 or IPv6 address, e.g. 172.20.0.10") from None
        return value

    @field_validator("owner")
    @classmethod
    def _owner(cls, value: str) -> str:
        # An AWS tag value: at most 256 characters of letters, digits, spaces and + - = . _ : / @
        # https://docs.aws.amazon.com/tag-editor/latest/userguide/best-practices-and-strats.html
        if not re.fullmatch(r"[\w\s+=.:/@-]{0,256}", value):
            raise ValueError(
                "must be an AWS tag value: letters, digits, spaces and + - = . _ : / @"
            )
        return value

    @field_validator("vpc_id")
    @classmethod
    def _vpc_id(cls, value: str) -> str:
        if value and not _VPC_ID.fullmatch(value):
            raise ValueError(f"must be a VPC id matching {_VPC_ID.pattern}")
        return value

    @field_validator("subnet_ids")
    @classmethod
    def _subnet_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [subnet for subnet in value if not _SUBNET_ID.fullmatch(subnet)]
        if bad:
            raise ValueError(f"{', '.join(bad)} must match {_SUBNET_ID.pattern}")
        if len(set(value)) != len(value):
            raise ValueError("must name each subnet once")
        return value

    @model_validator(mode="after")
    def _created_cluster_network(self) -> StackConfig:
        # A created cluster goes into the network the stack names, never a default VPC.
        if self.cluster_mode is ClusterMode.CREATE:
            if not self.vpc_id:
                raise ValueError("clusterMode create needs vpcId set to the cluster's VPC")
            if len(self.subnet_ids) < MIN_SUBNETS:
                raise ValueError(
                    f"clusterMode create needs subnetIds: at least {MIN_SUBNETS} subnets of vpcId"
                    " in different Availability Zones"
                )
        elif self.cluster_creator_admin:
            # A key the existing cluster would ignore is refused, not ignored.
            raise ValueError(
                "clusterCreatorAdmin applies to clusterMode create only: an existing cluster's"
                " access entries are its own"
            )
        return self

    @model_validator(mode="after")
    def _app_armor_on_hardened_nodes(self) -> StackConfig:
        # The sandbox pod's shape is fixed; a key it would ignore is refused, not ignored.
        if self.node_app_armor and self.runtime_target is not RuntimeTarget.HARDENED_CONTAINER:
            raise ValueError(
                "nodeAppArmor applies to runtimeTarget hardened-container only: an "
                "isolated-sandbox pod is privileged in its own guest VM"
            )
        return self

    @model_validator(mode="after")
    def _addons_on_hardened_bubblewrap(self) -> StackConfig:
        # Only the hardened-container bubblewrap pod needs the operators; a stack that would
        # ignore `install` must not appear to own them.
        needs = needs_security_profiles(self.runtime_target, self.layers)
        if self.cluster_addons is ClusterAddons.INSTALL and not needs:
            raise ValueError(
                "clusterAddons install applies to runtimeTarget hardened-container with the "
                "bubblewrap layer only: no other pod needs the cluster-wide operators"
            )
        return self

    @model_validator(mode="after")
    def _prebuilt_images(self) -> StackConfig:
        if self.image_mode is ImageMode.PREBUILT:
            missing = [
                alias
                for alias, value in (
                    ("analystImage", self.analyst_image),
                    ("supplierImage", self.supplier_image),
                )
                if not value
            ]
            if missing:
                raise ValueError(
                    f"imageMode prebuilt needs {' and '.join(missing)} set to an image reference"
                )
        elif self.analyst_image or self.supplier_image:
            raise ValueError(
                "analystImage and supplierImage apply to imageMode prebuilt only: imageMode "
                "build builds both images"
            )
        return self


def _accept(value: str, problem: str) -> str:
    if problem:
        raise ValueError(problem)
    return value


class ConfigError(Exception):
    """A stack config value is invalid; the message names the key and what it accepts."""


def _describe(error: ErrorDetails) -> str:
    loc = error["loc"]
    if not loc:
        # A cross-key rule (see _prebuilt_images): its message names the keys itself.
        return f"{PROJECT}: {error['msg'].removeprefix('Value error, ')}"
    # Values arrive under their config keys (the aliases), so loc[0] is the key as set.
    key = str(loc[0]) + "".join(f"[{part}]" for part in loc[1:])
    if error["type"] == "enum":
        message = f"allowed values are {error.get('ctx', {}).get('expected')}"
    elif error["type"] == "extra_forbidden":
        known = list(config_keys().values())
        guess = nearest(str(loc[0]), known)
        hint = f"; did you mean {guess}?" if guess else ""
        message = f"unknown key{hint} (known keys: {', '.join(known)})"
    else:
        message = error["msg"].removeprefix("Value error, ")
    return f"{PROJECT}:{key}: {message} (got {_shown(error.get('input'))})"


# A value is quoted back whole up to this length; a longer one is cut and its length given.
SHOWN_CHARACTERS = 80


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) <= SHOWN_CHARACTERS:
        return text
    return f"{text[:SHOWN_CHARACTERS]}... ({len(str(value))} characters)"


def parse_config(raw: dict[str, Any]) -> StackConfig:
    """Validate raw config values, raising ConfigError with one line per bad key."""
    try:
        return StackConfig.model_validate(raw)
    except ValidationError as exc:
        lines = [_describe(error) for error in exc.errors()]
        raise ConfigError("invalid stack configuration:\n  " + "\n  ".join(lines)) from None


def config_keys() -> dict[str, str]:
    """Config key (as set with `pulumi config set`) for every field of the model."""
    return {name: info.alias or name for name, info in StackConfig.model_fields.items()}


# Keys declared `type: array` in Pulumi.yaml: the engine hands them to the program as JSON.
LIST_FIELDS = frozenset({"layers", "subnet_ids"})


def load_config() -> StackConfig:
    """Read the stack's config through `pulumi.Config` and validate it.

    The engine has already checked each value against the type Pulumi.yaml declares (an array
    key set as a plain string never gets here), so a list key arrives as a JSON array.
    """
    import pulumi

    config = pulumi.Config(PROJECT)
    raw: dict[str, Any] = {}
    for field, key in config_keys().items():
        value = config.get_object(key) if field in LIST_FIELDS else config.get(key)
        if value is not None:
            raw[key] = value
    # The language host hands the program the stack's whole config as PULUMI_CONFIG: a key of
    # this project that no field reads (a typo such as `regoin`) is refused, never ignored.
    for full_key, value in pulumi.runtime.get_config_env().items():
        key = str(full_key).removeprefix(f"{PROJECT}:")
        if str(full_key).startswith(f"{PROJECT}:") and key not in raw:
            raw[key] = value
    return parse_config(raw)
