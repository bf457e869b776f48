"""What a role's profile asks of its proxy (its credential route and its front), read from the
profile's network section and refused where nono would fill a gap with a default of its own or
where the front could not hold the role to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from app.core.results import ToolRunError
from app.core.roles import Role

# What a front allows at most, whatever a profile asks: a role's tool process holds a few
# connections at once, and each costs the proxy host a descriptor.
MOST_CONNECTIONS: Final = 64
_WILDCARDS: Final = frozenset("*?[]{}")


@dataclass(frozen=True)
class ProxyRoute:
    """What a role's profile asks of its proxy, read from the profile's network section."""

    prefix: str
    upstream: str
    credential_key: str
    env_var: str
    inject_header: str
    credential_format: str
    tls_ca: str
    rules: tuple[tuple[str, str], ...]

    @classmethod
    def from_profile(cls, role: Role, network: dict[str, Any]) -> ProxyRoute:
        """The route a profile asks for; a profile that lacks a part of it is refused, since
        nono would fill the gap with a default of its own."""
        try:
            ((prefix, credential),) = network["custom_credentials"].items()
            policy = credential["endpoint_policy"]
            rules = tuple((rule["method"], rule["path"]) for rule in policy["allow"])
            default = policy["default"]["decision"]
            route = cls(
                prefix=prefix,
                upstream=credential["upstream"],
                credential_key=credential["credential_key"],
                env_var=credential["env_var"],
                inject_header=credential["inject_header"],
                credential_format=credential["credential_format"],
                tls_ca=credential["tls_ca"],
                rules=rules,
            )
        except (KeyError, ValueError) as missing:
            raise ToolRunError(
                f"the {role} profile's credential route is incomplete: {missing}"
            ) from None
        # nono's endpoint rules are an allow list with an implicit deny; a profile asking for
        # anything else, or for an empty list, cannot be expressed and is refused here.
        if default != "deny" or not rules:
            raise ToolRunError(f"the {role} profile's endpoint policy must default to deny")
        # The front compares paths exactly; a pattern would mean one thing to it and another
        # to nono.
        if any(_WILDCARDS & set(path) for _, path in rules):
            raise ToolRunError(f"the {role} profile's endpoint rules must name exact paths")
        return route

    def as_json(self) -> dict[str, Any]:
        return {
            "prefix": self.prefix,
            "upstream": self.upstream,
            "credential_key": self.credential_key,
            "env_var": self.env_var,
            "inject_header": self.inject_header,
            "credential_format": self.credential_format,
            "tls_ca": self.tls_ca,
            "rules": [list(rule) for rule in self.rules],
        }


@dataclass(frozen=True)
class ProxyFront:
    """What a role's profile asks of its proxy's front (network.proxy_front)."""

    max_connections: int
    once: list[tuple[str, str]]  # the writes that pass once per run, with a verified body

    @classmethod
    def from_profile(cls, role: Role, network: dict[str, Any], route: ProxyRoute) -> ProxyFront:
        """The front a profile asks for; without a connection limit it is refused, since a
        front without one lets a role flood it, and so is a once-only write its route does
        not list."""
        try:
            front = network["proxy_front"]
            limit = front["max_connections"]
            once = [(rule["method"], rule["path"]) for rule in front.get("once", [])]
        except (KeyError, TypeError) as missing:
            raise ToolRunError(
                f"the {role} profile's proxy front is incomplete: {missing}"
            ) from None
        if type(limit) is not int or not 1 <= limit <= MOST_CONNECTIONS:
            raise ToolRunError(
                f"the {role} profile's proxy front must allow 1 to {MOST_CONNECTIONS} "
                f"connections at once, not {limit!r}"
            )
        if not set(once) <= set(route.rules):
            raise ToolRunError(f"the {role} profile's once-only writes are not all in its route")
        return cls(limit, once)
