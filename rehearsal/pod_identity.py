"""EKS Pod Identity as the cluster provides it: the webhook's change to a pod, and the agent.

The webhook (amazon-eks-pod-identity-webhook) gives every container of a pod whose service
account has an association, init containers included, the credential variables and a projected
token, audience pods.eks.amazonaws.com, mounted read-only; a container named in the pod's
`eks.amazonaws.com/skip-containers` annotation gets neither (pkg/handler/handler.go,
getPodSpecPatch):
https://docs.aws.amazon.com/eks/latest/userguide/pod-id-how-it-works.html and
https://docs.aws.amazon.com/sdkref/latest/guide/feature-container-credentials.html
The agent listens on 169.254.170.23:80; the SDK's container provider sends the token file's
contents as the Authorization header and gets the role's session. The stand-in here checks
the token, evaluates the role's trust policy for the pod (`rehearsal/trust.py`) and answers
with the session moto issued; everything it serves and refuses is recorded.
"""

from __future__ import annotations

import copy
import json
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from app.core import cluster_env as env
from infra.pod_specs import POD_IDENTITY_SKIP

from .aws import RehearsalAws
from .trust import trust_allows

AGENT_ADDRESS: Final = "169.254.170.23"
AGENT_PORT: Final = 80
CREDENTIALS_PATH: Final = "/v1/credentials"
FULL_URI: Final = f"http://{AGENT_ADDRESS}{CREDENTIALS_PATH}"
AUDIENCE: Final = "pods.eks.amazonaws.com"
VOLUME: Final = "eks-pod-identity-token"
TOKEN_DIR: Final = "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount"
TOKEN_FILE: Final = f"{TOKEN_DIR}/{VOLUME}"
TOKEN_SECONDS: Final = 86400


def webhook_env(region: str) -> dict[str, str]:
    """The variables the webhook adds to each container (where the pod does not set them)."""
    return {
        "AWS_STS_REGIONAL_ENDPOINTS": "regional",
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        env.POD_IDENTITY_URI: FULL_URI,
        env.POD_IDENTITY_TOKEN_FILE: TOKEN_FILE,
    }


def skipped(annotations: dict[str, str]) -> set[str]:
    """The container names the pod's skip annotation lists."""
    listed = annotations.get(POD_IDENTITY_SKIP, "")
    return {name.strip() for name in listed.split(",") if name.strip()}


def mutate(
    pod: dict[str, Any], region: str, skip: set[str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The pod as the webhook admits it, and what it added, in words."""
    admitted = copy.deepcopy(pod)
    admitted.setdefault("volumes", []).append(
        {
            "name": VOLUME,
            "projected": {
                "defaultMode": 0o644,
                "sources": [
                    {
                        "serviceAccountToken": {
                            "audience": AUDIENCE,
                            "expirationSeconds": TOKEN_SECONDS,
                            "path": VOLUME,
                        }
                    }
                ],
            },
        }
    )
    added = [f"volume {VOLUME} (projected service account token, audience {AUDIENCE})"]
    for container in [*admitted.get("initContainers", []), *admitted["containers"]]:
        if container["name"] in (skip or set()):
            added.append(f"container {container['name']}: nothing ({POD_IDENTITY_SKIP})")
            continue
        variables = container.setdefault("env", [])
        present = {entry["name"] for entry in variables}
        new = [(k, v) for k, v in webhook_env(region).items() if k not in present]
        variables.extend({"name": k, "value": v} for k, v in new)
        container.setdefault("volumeMounts", []).append(
            {"name": VOLUME, "mountPath": TOKEN_DIR, "readOnly": True}
        )
        added.append(
            f"container {container['name']}: {', '.join(k for k, _ in new)} and the token at "
            f"{TOKEN_DIR}"
        )
    return admitted, added


@dataclass
class AgentRecord:
    served: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


class PodIdentityAgent:
    """The agent stand-in, on the rehearsal network's 169.254.170.23:80."""

    def __init__(self, aws: RehearsalAws) -> None:
        self.aws = aws
        self.tokens: dict[str, str] = {}  # token -> pod
        self.record = AgentRecord()
        self._server: ThreadingHTTPServer | None = None

    def mint(self, pod: str) -> bytes:
        """The projected token of one pod: opaque and random here (a signed JWT in EKS)."""
        token = f"rehearsal.{secrets.token_urlsafe(32)}"
        self.tokens[token] = pod
        return token.encode()

    def answer(self, authorization: str | None) -> tuple[int, dict[str, str]]:
        pod = self.tokens.get(authorization or "")
        if pod is None:
            self.record.refused.append("a request without a token this agent minted")
            return 401, {"message": "the Authorization header is not a pod's token"}
        session = self.aws.sessions.get(pod)
        allowed, reason = trust_allows(self.aws.trust_policy, self.aws.session_tags(pod))
        if session is None or not allowed:
            self.record.refused.append(f"{pod}: {reason}")
            return 403, {"message": f"AccessDenied: {reason}"}
        self.record.served.append(f"{pod}: {session.assumed_arn} ({reason})")
        expiration = session.credentials["Expiration"]
        return 200, {
            "AccessKeyId": session.credentials["AccessKeyId"],
            "SecretAccessKey": session.credentials["SecretAccessKey"],
            "Token": session.credentials["SessionToken"],
            "AccountId": self.aws.role_arn.split(":")[4],
            "Expiration": expiration.isoformat()
            if isinstance(expiration, datetime)
            else str(expiration),
        }

    def start(self) -> None:
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != CREDENTIALS_PATH:
                    status, body = 404, {"message": "not found"}
                else:
                    status, body = agent.answer(self.headers.get("Authorization"))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the record above is the log; the credentials never are

        self._server = ThreadingHTTPServer((AGENT_ADDRESS, AGENT_PORT), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
