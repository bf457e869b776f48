"""Probes for a role that reaches the supplier only through its own nono proxy.

The role's code is ordinary: it reads the base URL and the credential from its environment
(``SUPPLIER_BASE_URL``, ``SUPPLIER_API_KEY``, both set by the controller from the proxy's own
variables) and sends the key in the API's ``X-Api-Key`` header with urllib, which also
honours the proxy variables. Nothing here knows whether the credential is real.
"""

from __future__ import annotations

import base64
import http.client
import os
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from .credentials import KEY_VARIABLE
from .protocol import ok, refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .protocol import Action, Result

BASE_URL_VARIABLE = "SUPPLIER_BASE_URL"
TIMEOUT_SECONDS = 10


def _errno_of(error: urllib.error.URLError) -> OSError | None:
    """The kernel's refusal inside a URLError, if that is what it was; None for anything else."""
    reason = error.reason
    if isinstance(reason, OSError) and reason.errno is not None and reason.errno > 0:
        return reason
    return None


def supplier_request(args: list[str]) -> Result:
    """``METHOD PATH [BODY_FILE|-] [REQUEST_ID]``: one supplier call; reports the HTTP status.

    A connection the kernel refused reports its errno; a DNS failure, a timeout or a closed
    connection raises and fails the run rather than reading as a refusal.
    """
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
        kernel = _errno_of(error)
        if kernel is None:
            raise
        return refused(kernel, method=method, path=path, request_id=request_id)
    return ok(method=method, path=path, status=status, request_id=request_id)


def alias_request(args: list[str]) -> Result:
    """``URL [REQUEST_ID]``: asks this role's HTTPS proxy for a tunnel to URL's host and port.

    This is the CONNECT urllib sends for an https:// URL when HTTPS_PROXY is set; the probe
    sends it itself so the proxy's answer is read as a status code, never parsed from an
    error message. A 200 (tunnel open) is reported as such and nothing more is sent.
    """
    url = args[0]
    request_id = args[1] if len(args) > 1 else ""
    target = urlsplit(url)
    proxy_url = urllib.request.getproxies().get("https")
    if not proxy_url:
        raise RuntimeError("no HTTPS proxy in this role's environment")
    proxy = urlsplit(proxy_url)
    headers = {"Host": f"{target.hostname}:{target.port}"}
    if proxy.username is not None:
        token = f"{proxy.username}:{proxy.password or ''}".encode()
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
    connection = http.client.HTTPConnection(
        proxy.hostname or "", proxy.port or 80, timeout=TIMEOUT_SECONDS
    )
    try:
        try:
            connection.request("CONNECT", f"{target.hostname}:{target.port}", headers=headers)
        except OSError as error:
            if error.errno is None:
                raise
            return refused(error, host=target.hostname, port=target.port, request_id=request_id)
        status = connection.getresponse().status
    finally:
        connection.close()
    return ok(host=target.hostname, port=target.port, connect_status=status, request_id=request_id)


ACTIONS: dict[str, Action] = {
    "supplier-request": supplier_request,
    "alias-request": alias_request,
}
