"""Policies changed on purpose, to show that the check watching each change fails: the shipped
profiles with one hole each. They live here, never in the shipped policy types: a layer is
handed one of these as its profile source, as a test alone would."""

from __future__ import annotations

from typing import Any

from app.core.roles import Role
from app.tools.nono.policy import (
    CREDENTIAL_NAME,
    ProfileSource,
    ProfileValues,
    generate_profile,
)


def _widened(role_widened: Role, change: Any) -> ProfileSource:
    def source(role: Role, values: ProfileValues) -> dict[str, Any]:
        profile = generate_profile(role, values)
        if role == role_widened:
            change(profile, values)
        return profile

    return source


def _reads_key_file(profile: dict[str, Any], values: ProfileValues) -> None:
    profile["filesystem"] = {"read_file": [values.key_file], **profile["filesystem"]}


def _network_open(profile: dict[str, Any], values: ProfileValues) -> None:
    profile["network"] = {}


def _purchase_orders(profile: dict[str, Any], values: ProfileValues) -> None:
    route = profile["network"]["custom_credentials"][CREDENTIAL_NAME]
    route["endpoint_policy"]["allow"].append({"method": "POST", "path": "/purchase-orders"})


def _inherits_environment(profile: dict[str, Any], values: ProfileValues) -> None:
    profile["environment"]["inherit"] = True


# The reader may read the supplier key file; the evaluator has a network; the writer may post
# a purchase order; the reader inherits the controller's environment.
READER_READS_KEY_FILE = _widened("reader", _reads_key_file)
EVALUATOR_NETWORK = _widened("evaluator", _network_open)
WRITER_PURCHASE_ORDERS = _widened("writer", _purchase_orders)
READER_INHERITS_ENVIRONMENT = _widened("reader", _inherits_environment)
