"""A role's profile as the launcher applies it: a pure translation of the profile into grants,
then the calls that make them a nono-py capability set (made in a launch process: launch_pool.py).

The file fields keep the meaning nono's profile format gives them: ``read`` and ``allow`` are
directories (read, read and write), ``read_file`` and ``allow_file`` single files. The network
is ``block``, or one ``custom_credentials`` route, which the launcher serves through the role's
front: the role may connect to that port alone. Anything else in those sections is refused,
never ignored, since nono would give it a meaning this launcher does not apply.

The profiles are this project's own format (docs/proofs.md, "The policy is data"): nono never
reads them, and would refuse their ``process`` and ``network.proxy_front`` sections.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import nono_py

from app.core.results import ToolRunError
from app.tools.layer import Grant

# Each file field this launcher applies: its access, and whether it names single files.
FILE_FIELDS: Final = {
    "read": (nono_py.AccessMode.READ, False),
    "read_file": (nono_py.AccessMode.READ, True),
    "allow": (nono_py.AccessMode.READ_WRITE, False),
    "allow_file": (nono_py.AccessMode.READ_WRITE, True),
}
# What a network section may hold besides its one route: the front's settings (proxy.py).
_ROUTE_FIELDS: Final = frozenset({"custom_credentials", "proxy_front"})


class ProfileError(ToolRunError):
    """A profile this launcher cannot apply as written: the role is not started."""


class Network(enum.Enum):
    BLOCKED = "blocked"  # no socket reaches anything
    FRONT = "front"  # TCP to the role's front alone
    OPEN = "open"  # no network rule at all (a profile without a network section)


@dataclass(frozen=True)
class FileGrant:
    path: str
    access: nono_py.AccessMode
    single_file: bool


@dataclass(frozen=True)
class Grants:
    """What one role may reach, as read from its profile."""

    files: tuple[FileGrant, ...]
    network: Network


def grants(role: str, profile: Mapping[str, Any]) -> Grants:
    """The role's grants; ProfileError names what cannot be applied."""
    return Grants(
        files=_file_grants(role, profile.get("filesystem", {})),
        network=_network(role, profile.get("network", {})),
    )


def pictured_grants(role: str, profile: Mapping[str, Any]) -> tuple[Grant, ...]:
    """The profile's file grants as the boundary picture draws them, reads first."""
    writes = nono_py.AccessMode.READ_WRITE
    return tuple(
        Grant(f.path, "read-write" if f.access == writes else "read-only")
        for f in sorted(grants(role, profile).files, key=lambda f: f.access == writes)
    )


def _file_grants(role: str, files: Mapping[str, Any]) -> tuple[FileGrant, ...]:
    unknown = sorted(set(files) - set(FILE_FIELDS))
    if unknown:
        raise ProfileError(f"the {role} profile's filesystem fields {unknown} are not applied here")
    found = []
    for field, paths in files.items():
        access, single = FILE_FIELDS[field]
        for path in paths:
            if not isinstance(path, str) or not path.startswith("/"):
                raise ProfileError(f"the {role} profile's filesystem.{field} holds {path!r}")
            found.append(FileGrant(path, access, single))
    return tuple(found)


def _network(role: str, network: Mapping[str, Any]) -> Network:
    if not network:
        return Network.OPEN
    if dict(network) == {"block": True}:
        return Network.BLOCKED
    if "custom_credentials" in network and set(network) <= _ROUTE_FIELDS:
        return Network.FRONT
    raise ProfileError(f"the {role} profile's network section is not understood: {network}")


class Capabilities(Protocol):
    """What apply calls: nono-py's CapabilitySet, the launch request's recorder (launch_pool.py),
    or a test's."""

    def allow_path(self, path: str, mode: nono_py.AccessMode) -> None: ...

    def allow_file(self, path: str, mode: nono_py.AccessMode) -> None: ...

    def block_network(self) -> None: ...

    def allow_tcp_connect_port(self, port: int) -> None: ...


def apply(grants: Grants, caps: Capabilities, front_port: int | None = None) -> None:
    """Grants ``caps`` what ``grants`` says; ``front_port`` is the role's front, for a route."""
    for grant in grants.files:
        if grant.single_file:
            caps.allow_file(grant.path, grant.access)
        else:
            caps.allow_path(grant.path, grant.access)
    if grants.network is Network.BLOCKED:
        caps.block_network()
    elif grants.network is Network.FRONT:
        if front_port is None:
            raise ProfileError("a credential route needs the role's front")
        # The role's front alone: nono's own listener, and every other port, answer EACCES
        # (nono-py's proxy_only would grant nono's listener, which tunnels).
        caps.block_network()
        caps.allow_tcp_connect_port(front_port)
