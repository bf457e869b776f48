"""The nono profile generator: one pure function renders every role's profile from run values.

The same function renders the committed files under policies/nono/ (with placeholders for
every value that differs between machines and runs) and the live profile of a run (with the
run's values), so `fill(committed, run values) == live` is a complete comparison.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from app.core.repo import POLICIES_DIR
from app.core.roles import ROLES, Role
from app.core.run_tree import OUTPUT_FILES
from app.core.tool_environment import TOOL_VARIABLES
from app.core.tool_limits import tool_limits
from app.tools.nono.elements import without
from app.tools.seccomp_policy import GROUP_ELEMENTS

PROFILE_VERSION = "1.0.0"
COMMITTED_DIR = POLICIES_DIR / "nono"


def policy_file(role: Role) -> str:
    """The name of a role's committed launch policy. The format is this project's own, modelled
    on nono's profiles but read by its launcher alone (translate.py), never by nono, which
    would refuse its extra fields: so the files are not named as nono profiles."""
    return f"{role}.launch.json"


# What the system interpreter needs: on a merged-/usr system /usr holds python3, its standard
# library, libc and the dynamic loader (/lib and /lib64 are symlinks into it). Measured: the
# worker starts and runs every action with nothing else readable.
SYSTEM_READ = ("/usr",)

# The variables a role keeps, with values the controller sets (never copied from its own
# environment). Online roles also keep the per-run digest key, for the credential comparison.
BASE_VARIABLES = TOOL_VARIABLES
DIGEST_KEY_VARIABLE = "ANALYST_DIGEST_KEY"

CREDENTIAL_NAME = "supplier"
CREDENTIAL_ENV_VAR = "SUPPLIER_API_KEY"
CREDENTIAL_HEADER = "X-Api-Key"

# A role's front (proxy.py) serves this many of its connections at once and answers 503 past
# it: the worker opens one at a time; the bound is what a role may hold of the proxy host.
PROXY_MAX_CONNECTIONS = 8

# "seccomp" adds nono's static filter under Landlock: with network blocked, socket(AF_INET)
# itself fails (EPERM), not only connect; with proxy-only network, UDP, raw and every non-IP
# socket fail too. Landlock alone filters TCP only.
ENFORCEMENT_MODE = "seccomp"
# The baseline filter the loader installs in each role before the worker is imported, staged by the
# controller in the read-only code directory (app/tools/loader.py).
SECCOMP_FILTER_FILE = "nono-baseline.bpf"


@dataclass(frozen=True)
class ProfileValues:
    """Everything in a profile that differs between runs or machines, as strings."""

    run_dir: str  # the run directory proper: <run_dir>/<role>/{in,out}
    code_dir: str  # the staged worker code
    key_file: str  # the real supplier key, read by the proxy only
    ca_file: str  # the CA the proxy trusts for the supplier
    supplier_host: str  # the approved name:port
    case_id: str

    @classmethod
    def placeholders(cls) -> ProfileValues:
        """The values the committed files carry, identical on every machine and in the cluster."""
        return cls(**{f.name: PLACEHOLDERS[f.name] for f in fields(cls)})


PLACEHOLDERS: dict[str, str] = {
    "run_dir": "<RUN>",
    "code_dir": "<CODE>",
    "key_file": "<SUPPLIER_KEY_FILE>",
    "ca_file": "<SUPPLIER_CA_FILE>",
    "supplier_host": "<SUPPLIER_HOST>",
    "case_id": "<CASE>",
}
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS.values()))


# Makes one role's profile from a run's values: generate_profile, the shipped one, unless a
# test hands the layer another.
ProfileSource = Callable[[Role, ProfileValues], dict[str, Any]]


def draft_rule(case_id: str) -> tuple[str, str]:
    """The writer's one draft: passed once per run, with the body the controller verified."""
    return ("POST", f"/cases/{case_id}/recommendations")


def endpoint_rules(role: Role, case_id: str) -> list[tuple[str, str]]:
    """The HTTP method and path pairs the role's proxy forwards; empty for the offline role."""
    if role == "evaluator":
        return []
    rules = [("GET", f"/cases/{case_id}/suppliers")]
    if role == "writer":
        rules.append(draft_rule(case_id))
    return rules


def intended_variables(role: Role) -> list[str]:
    """The variables a role keeps: the base set, and for an online role the digest key."""
    online = bool(endpoint_rules(role, PLACEHOLDERS["case_id"]))
    return [*BASE_VARIABLES, *([DIGEST_KEY_VARIABLE] if online else [])]


def generate_profile(role: Role, values: ProfileValues) -> dict[str, Any]:
    """The role's profile: what it reads, the one directory it writes, the variables it keeps,
    and either no network or one host through a credential-holding proxy."""
    workspace = f"{values.run_dir}/{role}"
    read = [*SYSTEM_READ, values.code_dir, f"{workspace}/in"]
    # Each output file alone, not the directory: the role can create no file of its own.
    write = [f"{workspace}/out/{name}" for name in OUTPUT_FILES[role]]
    rules = endpoint_rules(role, values.case_id)
    environment: dict[str, Any] = {"allow_vars": intended_variables(role)}

    network: dict[str, Any]
    if rules:
        # No CONNECT host is listed: a role reaches the supplier through the reverse route
        # alone, at its proxy's front, which refuses every tunnel (proxy.py).
        front: dict[str, Any] = {"max_connections": PROXY_MAX_CONNECTIONS}
        once = [{"method": m, "path": p} for m, p in rules if (m, p) == draft_rule(values.case_id)]
        if once:
            front["once"] = once
        network = {
            "custom_credentials": {
                CREDENTIAL_NAME: {
                    "upstream": f"https://{values.supplier_host}",
                    "credential_key": f"file://{values.key_file}",
                    "env_var": CREDENTIAL_ENV_VAR,
                    "inject_header": CREDENTIAL_HEADER,
                    "credential_format": "{}",
                    "tls_ca": values.ca_file,
                    "endpoint_policy": {
                        "default": {"decision": "deny"},
                        "allow": [{"method": m, "path": p} for m, p in rules],
                    },
                }
            },
            "proxy_front": front,
        }
    else:
        network = {"block": True}

    return {
        "meta": {"name": f"analyst-{role}", "version": PROFILE_VERSION},
        "filesystem": {"read": read, "allow_file": write},
        "environment": environment,
        "network": network,
        "process": {
            "enforcement_mode": ENFORCEMENT_MODE,
            "seccomp_filter": f"{values.code_dir}/{SECCOMP_FILTER_FILE}",
            # The baseline's rule groups the filter holds for this role, beside the groups that
            # are not elements (app/tools/seccomp_policy.py): the launcher compiles exactly these.
            "seccomp_groups": list(GROUP_ELEMENTS),
            # Set by the launcher's loader (app/tools/loader.py), from policies/tool-limits.json.
            **{limit.key: limit.value for limit in tool_limits().all()},
        },
    }


# Profile elements left out on purpose, by role and name (see elements.py): the removal test
# leaves out one at a time to show a named check then fails. Never shipped.
Omissions = frozenset[tuple[Role, str]]
NO_OMISSIONS: Omissions = frozenset()


def committed_profile(
    role: Role, source: ProfileSource = generate_profile, omit: Omissions = NO_OMISSIONS
) -> dict[str, Any]:
    """The role's profile as committed: every run- and machine-specific value a placeholder."""
    profile = source(role, ProfileValues.placeholders())
    for omitted_role, element in sorted(omit):
        if omitted_role == role:
            profile = without(profile, element)
    return profile


def committed_profiles(
    source: ProfileSource = generate_profile, omit: Omissions = NO_OMISSIONS
) -> dict[Role, dict[str, Any]]:
    return {role: committed_profile(role, source, omit) for role in ROLES}


def fill(profile: Any, values: ProfileValues) -> Any:
    """A copy of a committed profile with each placeholder replaced by this run's value."""
    by_placeholder = {PLACEHOLDERS[f.name]: getattr(values, f.name) for f in fields(values)}
    if isinstance(profile, str):
        return _PLACEHOLDER.sub(lambda m: by_placeholder[m.group(0)], profile)
    if isinstance(profile, list):
        return [fill(item, values) for item in profile]
    if isinstance(profile, dict):
        return {key: fill(item, values) for key, item in profile.items()}
    return copy.deepcopy(profile)


def differences(observed: Any, expected: Any, where: str = "") -> list[str]:
    """The dotted paths at which two profiles differ; empty when they are equal."""
    if isinstance(observed, dict) and isinstance(expected, dict):
        found: list[str] = []
        for key in sorted(set(observed) | set(expected), key=str):
            at = f"{where}.{key}" if where else str(key)
            if key not in observed or key not in expected:
                found.append(at)
            else:
                found.extend(differences(observed[key], expected[key], at))
        return found
    return [] if observed == expected else [where or "(whole profile)"]


def to_json(profile: dict[str, Any]) -> str:
    """The one serialisation of committed and live files: equal profiles are equal bytes."""
    return json.dumps(profile, indent=2) + "\n"
