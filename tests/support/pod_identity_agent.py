"""A stand-in for the EKS Pod Identity agent on loopback (botocore takes http:// there): it
answers every credential request with one status and body, as the real agent answers a pod with
or without an association for its service account."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

REFUSAL = b'{"message": "no Pod Identity association for this service account"}'


def credentials_body() -> bytes:
    """Credentials in the shape the agent serves them, an hour from expiring."""
    expiry = datetime.now(UTC) + timedelta(hours=1)
    return json.dumps(
        {
            "AccessKeyId": "ASIAEXAMPLEEXAMPLE00",
            "SecretAccessKey": "not-a-real-secret-access-key",
            "Token": "not-a-real-session-token",
            "Expiration": expiry.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    ).encode()


@contextmanager
def pod_identity_agent(status: int, body: bytes) -> Iterator[str]:
    """Serves ``status`` and ``body`` to every GET; yields the credential URI to set."""

    class Agent(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/credentials"
    finally:
        server.shutdown()
        server.server_close()
