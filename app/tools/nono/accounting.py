"""Every element of each nono profile, accounted for (see app/tools/accounting.py).

Elements are named as elements.py names them, in the committed (placeholder) form of each
profile. Committed as policies/nono/elements.json.
"""

from __future__ import annotations

from typing import Final

from app.core.roles import ROLES, Role
from app.core.run_tree import CHECK_FILE, OUTPUT_FILES
from app.core.tool_limits import tool_limits
from app.tools import catalogue as common
from app.tools.accounting import Proof, Redundant, Watched
from app.tools.attacks import FILTER_GROUP_WATCHERS, LIMIT_WATCHERS
from app.tools.catalogue import nono as c
from app.tools.nono.policy import BASE_VARIABLES, DIGEST_KEY_VARIABLE

LABEL: Final = Redundant("a label for whoever reads the file; the launcher applies nothing from it")
ROUTE: Final = "network.custom_credentials.supplier"
ROUTE_PARTS: Final = (
    "upstream",
    "credential_key",
    "env_var",
    "inject_header",
    "credential_format",
    "tls_ca",
    "endpoint_policy.default.decision",
)
SUPPLIERS: Final = "GET /cases/<CASE>/suppliers"
# The first check that runs the reader beyond its start: it waits there on a FIFO in its
# input after writing its pid to its check.txt.
HELD: Final = c.HELD.id
RECOMMENDATIONS: Final = "POST /cases/<CASE>/recommendations"
FRONT: Final = "network.proxy_front"


def _starts(role: Role, because: str) -> Watched:
    return Watched(c.STARTS.id_for(role=role), because)


def _variables(role: Role) -> dict[str, Proof]:
    claim = c.ENVIRONMENT.id_for(role=role)
    names = [*BASE_VARIABLES, *([] if role == "evaluator" else [DIGEST_KEY_VARIABLE])]
    return {
        f"environment.allow_vars[{name}]": Watched(
            claim,
            "Python coerces the C locale and adds LC_CTYPE"
            if name == "LANG"
            else f"{name} is missing from it",
        )
        for name in names
    }


def _files(role: Role) -> dict[str, Proof]:
    own = common.OWN_DIRECTORIES.id_for(role=role)
    account: dict[str, Proof] = {
        "filesystem.read[/usr]": _starts(role, "no /usr/bin/python3 can run"),
        "filesystem.read[<CODE>]": _starts(role, "its worker and baseline filter are unreadable"),
        f"filesystem.read[<RUN>/{role}/in]": (
            Watched(HELD, "the FIFO it waits on, in its input, answers EACCES")
            if role == "reader"
            else Watched(own, "its own input answers EACCES")
        ),
    }
    for name in OUTPUT_FILES[role]:
        watcher = own
        if name == CHECK_FILE and role == "reader":
            watcher = HELD
        elif name == CHECK_FILE and role == "writer":
            watcher = common.WRITER_WRITES.id
        account[f"filesystem.allow_file[<RUN>/{role}/out/{name}]"] = Watched(
            watcher, "the file answers EACCES"
        )
    return account


def _route(role: Role) -> dict[str, Proof]:
    incomplete = _starts(role, "the launcher refuses an incomplete credential route")
    account: dict[str, Proof] = {f"{ROUTE}.{part}": incomplete for part in ROUTE_PARTS}
    account[f"{FRONT}.max_connections"] = _starts(
        role, "the launcher refuses a proxy front without a connection limit"
    )
    allow = f"{ROUTE}.endpoint_policy.allow"
    if role == "reader":
        account[f"{allow}[{SUPPLIERS}]"] = _starts(
            role, "the launcher refuses a route that allows nothing"
        )
    else:
        account[f"{allow}[{SUPPLIERS}]"] = Watched(
            c.STATUS.id_for(request="writer.read"), "its own proxy answers 403"
        )
        account[f"{allow}[{RECOMMENDATIONS}]"] = _starts(
            role, "the launcher refuses a once-only write its route does not list"
        )
        account[f"{FRONT}.once[{RECOMMENDATIONS}]"] = Watched(
            c.EARLY_DRAFT.id, "its proxy passes a draft before one was verified (201)"
        )
    return account


def _limits() -> dict[str, Proof]:
    """Each limit the loader sets, watched by the attack that tries it, in every role."""
    return {
        f"process.{limit.key}": Watched(common.ATTACK.id_for(attack=attack), because)
        for limit in tool_limits().all()
        for attack, because in [LIMIT_WATCHERS[limit.name]]
    }


def _filter_groups() -> dict[str, Proof]:
    """Each rule group of the baseline that is an element, watched by the attack that tries
    its calls, in every role."""
    return {
        f"process.seccomp_groups[{group}]": Watched(common.ATTACK.id_for(attack=group), because)
        for group, because in FILTER_GROUP_WATCHERS.items()
    }


def _process(role: Role) -> dict[str, Proof]:
    if role == "reader":
        filters = c.HELD_SECCOMP.id
        return {
            "process.enforcement_mode": Watched(filters, "nono's default mode adds no filter"),
            "process.seccomp_filter": Watched(filters, "the baseline is not installed"),
            **_filter_groups(),
            **_limits(),
        }
    if role == "evaluator":
        return {
            "process.enforcement_mode": Watched(
                c.NO_SOCKET.id, "Landlock refuses its connect, but not the socket itself"
            ),
            "process.seccomp_filter": Watched(c.LANDLOCK_ALONE.id, "the baseline is not installed"),
            **_filter_groups(),
            **_limits(),
        }
    return {
        "process.enforcement_mode": Watched(
            common.ATTACK.id_for(attack="udp"), "Landlock filters TCP alone"
        ),
        "process.seccomp_filter": Watched(
            common.ATTACK.id_for(attack="unix"), "nono leaves unix sockets open"
        ),
        **_filter_groups(),
        **_limits(),
    }


def _account(role: Role) -> dict[str, Proof]:
    account: dict[str, Proof] = {"meta.name": LABEL, "meta.version": LABEL}
    account |= _files(role)
    account |= _variables(role)
    if role == "evaluator":
        account["network.block"] = Watched(c.NO_SOCKET.id, "it has the network")
    else:
        account |= _route(role)
    return account | _process(role)


ACCOUNT: Final[dict[Role, dict[str, Proof]]] = {role: _account(role) for role in ROLES}
