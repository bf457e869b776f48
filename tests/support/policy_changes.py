"""Policies changed on purpose, to show that the check watching each change fails: the shipped
profiles with one hole each. They live here, never in the shipped policy types: a layer is
handed one of these as its profile source, as a test alone would."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from app.core.roles import Role
from app.tools.bubblewrap.policy import (
    BASE_ENVIRONMENT,
    CODE_MOUNT,
    INPUT_MOUNT,
    Element,
    ElementsFor,
    RolePaths,
    shipped_elements,
)
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


# --- bubblewrap: each role's vector with one hole --------------------------------------------


def _bwrap_changed(change: Callable[[list[Element], RolePaths], list[Element]]) -> ElementsFor:
    def elements_for(role: Role, paths: RolePaths) -> Iterable[Element]:
        return change(list(shipped_elements(role, paths)), paths)

    return elements_for


def _without(*keys: str) -> ElementsFor:
    return _bwrap_changed(lambda found, _: [e for e in found if e.key not in keys])


def _after(found: list[Element], key: str, added: list[Element]) -> list[Element]:
    at = [e.key for e in found].index(key) + 1
    return [*found[:at], *added, *found[at:]]


def _input_writable(found: list[Element], paths: RolePaths) -> list[Element]:
    source = str(paths.input_dir)
    writable = Element(f"--bind {INPUT_MOUNT}", ("--bind", source, INPUT_MOUNT))
    return [writable if e.key == f"--ro-bind {INPUT_MOUNT}" else e for e in found]


def bwrap_extra_ro_bind(source: str, destination: str) -> ElementsFor:
    """Another host path mounted read-only, after the code."""
    mount = Element(f"--ro-bind {destination}", ("--ro-bind", source, destination))
    return _bwrap_changed(lambda found, _: _after(found, f"--ro-bind {CODE_MOUNT}", [mount]))


def bwrap_extra_env(*pairs: tuple[str, str]) -> ElementsFor:
    """More variables set, after the shipped ones."""
    added = [Element(f"--setenv {name}", ("--setenv", name, value)) for name, value in pairs]
    last = f"--setenv {BASE_ENVIRONMENT[-1][0]}"
    return _bwrap_changed(lambda found, _: _after(found, last, added))


BWRAP_SHARED_NET = _without("--unshare-net")
BWRAP_NESTED_USERNS = _without("--disable-userns", "--assert-userns-disabled")
BWRAP_INPUT_WRITABLE = _bwrap_changed(_input_writable)
