"""The controller's own entry point, with the roles' proxy host swapped for one whose front
passes a read in any shape, as it did before shape_refusal: a GET's body and the role's
Content-Type go on to nono. Test-only: it shows the run's shape checks fail without the rule.

Run as the controller (``-m support.leaky_front run ...``); the proxy host it starts runs
``tests.support.leaky_front`` too, as ``-m``, which patches the front and serves.
"""

from __future__ import annotations

import runpy
import sys

from app.tools.nono import front, proxy_host, proxy_pipe, role_front
from app.tools.nono.front import FrontPolicy, RequestHead


def _any_shape(policy: FrontPolicy, head: RequestHead) -> front.Refusal | None:
    return None


def _verbatim(
    policy: FrontPolicy, head: RequestHead, body: bytes, *, request_id: str, host: str
) -> bytes:
    """The request as the front once built it: the role's Content-Type, and a body on a GET."""
    lines = [
        f"{head.method} {head.target} HTTP/1.1",
        f"Host: {host}",
        f"X-Analyst-Request-ID: {request_id}",
    ]
    for name in (policy.inject_header, "Content-Type"):
        value = head.headers.get(name.lower())
        if value is not None:
            lines.append(f"{name}: {value}")
    if body or head.method != "GET":
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        proxy_pipe.HOST_MODULE = "tests.support.leaky_front"
        sys.argv[0] = "app.controller"
        runpy.run_module("app.controller", run_name="__main__", alter_sys=True)
    else:
        # The names role_front imported from front.py, which it calls.
        vars(role_front).update(shape_refusal=_any_shape, upstream_request=_verbatim)
        sys.exit(proxy_host.main(sys.argv))
