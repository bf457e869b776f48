"""Probes for a role that reaches the supplier only through its own nono proxy.

The role's code is ordinary: it reads the base URL and the credential from its environment
(``SUPPLIER_BASE_URL``, ``SUPPLIER_API_KEY``, both set by the controller from the proxy's own
variables) and sends the key in the API's ``X-Api-Key`` header with urllib. The other probes
ask the same listener for what any program may ask a proxy for (a tunnel, an absolute URI,
many connections at once), with sockets, so each answer is read as the status it is.
Nothing here knows whether the credential is real.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from .credentials import KEY_VARIABLE
from .protocol import Result, ok, refused

BASE_URL_VARIABLE = "SUPPLIER_BASE_URL"
TIMEOUT_SECONDS = 10


def _errno_of(reason: object) -> OSError | None:
    """The kernel's refusal a URLError's reason is, if that is what it was; None for anything
    else."""
    if isinstance(reason, OSError) and reason.errno is not None and reason.errno > 0:
        return reason
    return None


def supplier_request(args: list[str]) -> Result:
    """``METHOD PATH [BODY_FILE|-] [REQUEST_ID]``: one supplier call; reports the HTTP status.

    A connection the kernel refused reports its errno; a DNS failure, a timeout or a closed
    connection raises and fails the run rather than reading as a refusal.
    """
    # Here, not at the top: a proxy-requests start, which sends with sockets alone, takes 74
    # million instructions without urllib.request and urllib.error, 136 million with them.
    import urllib.error
    import urllib.request

    method, path = args[0], args[1]
    body_file = args[2] if len(args) > 2 and args[2] != "-" else None
    request_id = args[3] if len(args) > 3 else ""
    headers = {"X-Api-Key": os.environ.get(KEY_VARIABLE, ""), "X-Analyst-Request-ID": request_id}
    body = None
    if body_file is not None:
        with open(body_file, "rb") as source:
            body = source.read()
        json_body = body_file.endswith(".json")
        headers["Content-Type"] = "application/json" if json_body else "text/plain"
    request = urllib.request.Request(
        os.environ[BASE_URL_VARIABLE] + path, data=body, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except urllib.error.URLError as error:
        kernel = _errno_of(error.reason)
        if kernel is None:
            raise
        return refused(kernel, method=method, path=path, request_id=request_id)
    return ok(method=method, path=path, status=status, request_id=request_id)


def _front() -> tuple[str, int]:
    """Where this role's proxy listens: the host and port its base URL names."""
    base = urlsplit(os.environ[BASE_URL_VARIABLE])
    return base.hostname or "", base.port or 80


def _status(connection: socket.socket) -> int:
    """The status of the answer on ``connection``; anything but an HTTP status line raises,
    so a closed connection is never read as a refusal."""
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = connection.recv(1)
        if not chunk or len(line) > 256:
            raise RuntimeError(f"the proxy sent no status line: {line[:80]!r}")
        line += chunk
    version, status, _ = (line.decode("ascii") + " ").split(" ", 2)
    if not version.startswith("HTTP/1.") or not status.isdigit():
        raise RuntimeError(f"the proxy sent no status line: {line[:80]!r}")
    return int(status)


def _raw_request(method: str, target: str, request_id: str) -> dict[str, object]:
    """One request line sent as written, as any program may send it, and the answer."""
    authority = target if method == "CONNECT" else urlsplit(target).netloc
    head = (
        f"{method} {target} HTTP/1.1\r\nHost: {authority or _front()[0]}\r\n"
        f"X-Analyst-Request-ID: {request_id}\r\nConnection: close\r\n\r\n"
    )
    fields: dict[str, object] = {"request_id": request_id, "method": method, "target": target}
    try:
        connection = socket.create_connection(_front(), timeout=TIMEOUT_SECONDS)
    except OSError as error:
        if error.errno is None:
            raise
        return refused(error, **fields)
    with connection:
        connection.sendall(head.encode("ascii"))
        return ok(status=_status(connection), **fields)


def proxy_requests(args: list[str]) -> Result:
    """``REQUEST_ID METHOD TARGET [...]``: each request line sent raw to this role's proxy (a
    tunnel, an absolute URI: anything a program may ask a proxy for); reports each answer."""
    if not args or len(args) % 3:
        raise ValueError("proxy-requests takes REQUEST_ID METHOD TARGET triples")
    triples = [args[i : i + 3] for i in range(0, len(args), 3)]
    return ok(requests=[_raw_request(method, target, rid) for rid, method, target in triples])


# What a shaped request adds to a plain origin-form one: ``plain`` nothing, ``body:FILE`` that
# file's bytes as its body (with their length, no type), ``type:TEXT`` a Content-Type (no body).
_SHAPES = ("plain", "body:", "type:")


def _shaped_request(request_id: str, method: str, path: str, shape: str) -> dict[str, object]:
    """One supplier call sent as written, with this role's key variable in ``X-Api-Key`` like
    any client's, in ``shape``; the answer's status."""
    if not shape.startswith(_SHAPES):
        raise ValueError(f"a shape that is not plain, body:FILE or type:TEXT: {shape!r}")
    extra, body = "", b""
    if shape.startswith("body:"):
        with open(shape[len("body:") :], "rb") as source:
            body = source.read()
        extra = f"Content-Length: {len(body)}\r\n"
    elif shape.startswith("type:"):
        extra = f"Content-Type: {shape[len('type:') :]}\r\n"
    prefix = urlsplit(os.environ[BASE_URL_VARIABLE]).path
    head = (
        f"{method} {prefix}{path} HTTP/1.1\r\nHost: {_front()[0]}\r\n"
        f"X-Api-Key: {os.environ.get(KEY_VARIABLE, '')}\r\n"
        f"X-Analyst-Request-ID: {request_id}\r\n{extra}Connection: close\r\n\r\n"
    )
    fields: dict[str, object] = {
        "request_id": request_id,
        "method": method,
        "target": path,
        "body_bytes": len(body),
    }
    try:
        connection = socket.create_connection(_front(), timeout=TIMEOUT_SECONDS)
    except OSError as error:
        if error.errno is None:
            raise
        return refused(error, **fields)
    with connection:
        connection.sendall(head.encode("ascii") + body)
        return ok(status=_status(connection), **fields)


def shaped_requests(args: list[str]) -> Result:
    """``REQUEST_ID METHOD PATH SHAPE [...]``: each supplier call sent raw to this role's proxy,
    in its shape (see _SHAPES): a read with a body, or with a type, beside the same read plain;
    reports each answer."""
    if not args or len(args) % 4:
        raise ValueError("shaped-requests takes REQUEST_ID METHOD PATH SHAPE quadruples")
    quads = [args[i : i + 4] for i in range(0, len(args), 4)]
    return ok(requests=[_shaped_request(*quad) for quad in quads])


ACTIONS = {
    "supplier-request": supplier_request,
    "proxy-requests": proxy_requests,
    "shaped-requests": shaped_requests,
}
