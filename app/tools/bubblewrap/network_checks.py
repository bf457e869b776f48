"""The network a bubblewrap tool process has: loopback alone, and no route to anything."""

from __future__ import annotations

import errno
import ipaddress
import socket
from functools import partial
from typing import Final

from app.core.results import Errno
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.catalogue import bubblewrap as c

# TEST-NET-1 (RFC 5737): never routed on the internet. Only a UDP connect(), which sends
# nothing, is made to it from the controller.
NO_ROUTE_PROBE: Final = ("192.0.2.1", 443)


def check_network(run: Run, layer: BwrapRunner) -> None:
    checks = run.checks
    address, port = run.supplier.address, run.supplier.port
    loopback = ipaddress.ip_address(address).is_loopback
    checks.begin(c.NETWORK, loopback=loopback)
    checks.require(
        c.SUPPLIER_CONTROL(address=address, port=port),
        run.supplier_client.tcp_reachable(),
        detail="the controller's TCP connect succeeded",
    )
    # Locally the supplier is on loopback, which every network namespace has of its own;
    # "no route beyond loopback" is then shown against an address the controller routes.
    probe_address, probe_port = NO_ROUTE_PROBE
    route_error: str | None = None
    if loopback:
        source, route_error = _route_source(probe_address, probe_port)
        route = c.ROUTE_CONTROL(address=probe_address)
        if route_error is not None:
            checks.skip(
                route,
                f"the controller's own kernel has no route there either ({route_error}), "
                "so a refusal would prove nothing",
            )
        else:
            checks.require(
                route,
                not ipaddress.ip_address(source).is_loopback,
                detail=f"from {source}",
            )
    beyond = loopback and route_error is None

    def role_network(role: Role) -> None:
        names = layer.run_tool(role, "interfaces").data["interfaces"]
        checks.expect_equal(c.LOOPBACK_ONLY(role=role), names, ["lo"])
        connect = layer.run_tool(role, "tcp-connect", address, str(port))
        if loopback:
            expected = Errno.ECONNREFUSED
            claim = c.SUPPLIER_REFUSED(role=role, address=address, port=port)
        else:
            expected = Errno.ENETUNREACH
            claim = c.SUPPLIER_UNREACHABLE(role=role, address=address, port=port)
        checks.require(claim, connect.refused_with(expected), detail=f"observed {connect.observed}")
        if not loopback:
            return
        no_route = c.NO_ROUTE(role=role, address=probe_address, port=probe_port)
        if not beyond:
            checks.skip(no_route, f"the controller's own kernel has no route there ({route_error})")
            return
        beyond_result = layer.run_tool(role, "tcp-connect", probe_address, str(probe_port))
        checks.require(
            no_route,
            beyond_result.refused_with(Errno.ENETUNREACH),
            detail=f"observed {beyond_result.observed}",
        )

    # Each role in a network namespace of its own; no probe sends a byte.
    checks.at_once(*(partial(role_network, role) for role in ROLES))


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
