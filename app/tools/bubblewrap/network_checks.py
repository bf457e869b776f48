"""The network a bubblewrap tool process has: loopback alone, and no route to anything."""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Callable
from functools import partial
from typing import Final

from app.core.results import Errno, ToolResult
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.together import run_named

# TEST-NET-1 (RFC 5737): never routed on the internet. Only a UDP connect(), which sends
# nothing, is made to it from the controller.
NO_ROUTE_PROBE: Final = ("192.0.2.1", 443)


def check_network(run: Run, layer: BwrapRunner) -> None:
    checks = run.checks
    address, port = run.supplier.address, run.supplier.port
    loopback = ipaddress.ip_address(address).is_loopback
    checks.require(
        run.supplier_client.tcp_reachable(),
        f"control: the controller itself reaches the supplier API at {address}:{port}",
    )
    # Locally the supplier is on loopback, which every network namespace has of its own;
    # "no route beyond loopback" is then shown against an address the controller routes.
    beyond = False
    probe_address, probe_port = NO_ROUTE_PROBE
    if loopback:
        source, route_error = _route_source(probe_address, probe_port)
        if route_error is not None:
            checks.skip(
                f"no role has a route to {probe_address} (TEST-NET-1)",
                f"the controller's own kernel has no route there either ({route_error}), "
                "so a refusal would prove nothing",
            )
        else:
            beyond = True
            checks.require(
                not ipaddress.ip_address(source).is_loopback,
                f"control: the controller's own kernel has a route to {probe_address} "
                f"(TEST-NET-1), from {source}: shown by a UDP connect(), which sends no packet",
            )
    # Every role's probes at once: each in a network namespace of its own, none sending a byte.
    calls: dict[tuple[Role, str], Callable[[], ToolResult]] = {}
    for role in ROLES:
        calls[role, "interfaces"] = partial(layer.run_tool, role, "interfaces")
        calls[role, "supplier"] = partial(layer.run_tool, role, "tcp-connect", address, str(port))
        if loopback and beyond:
            calls[role, "beyond"] = partial(
                layer.run_tool, role, "tcp-connect", probe_address, str(probe_port)
            )
    got = run_named(calls)
    for role in ROLES:
        names = got[role, "interfaces"].result().data["interfaces"]
        checks.expect_equal(
            names, ["lo"], f"the {role}'s network namespace holds loopback alone: ['lo']"
        )
        connect = got[role, "supplier"].result()
        if loopback:
            expected = Errno.ECONNREFUSED
            claim = (
                f"so the supplier's {address}:{port}, live for the controller, is refused in "
                f"the {role}'s own network namespace, whose {address} is its own loopback with "
                "nothing listening"
            )
        else:
            expected = Errno.ENETUNREACH
            claim = (
                f"so the {role} has no route to the supplier's {address}:{port}, which the "
                "controller reaches"
            )
        checks.require(
            connect.refused_with(expected),
            f"{claim}: {expected}",
            detail=f"observed {connect.observed}",
        )
        if loopback and beyond:
            beyond_result = got[role, "beyond"].result()
            checks.require(
                beyond_result.refused_with(Errno.ENETUNREACH),
                f"and beyond its loopback the {role} has no route at all, not even to "
                f"{probe_address}:{probe_port}, which the controller's kernel routes: "
                f"{Errno.ENETUNREACH}",
                detail=f"observed {beyond_result.observed}",
            )


def _route_source(address: str, port: int) -> tuple[str, str | None]:
    """The source address the controller's kernel picks for address, or the errno refusing it.

    A UDP connect() only chooses a route and a source address: no packet leaves the host.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.connect((address, port))
        return str(sock.getsockname()[0]), None
    except OSError as error:
        return "", errno.errorcode.get(error.errno or 0, str(error))
    finally:
        sock.close()
