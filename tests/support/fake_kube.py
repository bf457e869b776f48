"""A Kubernetes API server on loopback that serves pods (filtered by label selector), their
logs and nodes from plain dicts, with a kubeconfig pointing at it: enough for the official
client to read what the comparison command reads, through its real HTTP path."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml


@dataclass
class FakeCluster:
    pods: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def add_pod(self, name: str, labels: dict[str, str], node: str, created: str, log: str) -> None:
        self.pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "analyst-ns", "labels": labels,
                             "creationTimestamp": created},
                "spec": {"nodeName": node, "containers": [{"name": "main", "image": "i"}]},
                "status": {"phase": "Succeeded", "startTime": created},
            }
        )  # fmt: skip
        self.logs[name] = log

    def add_node(self, name: str, created: str) -> None:
        self.nodes[name] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "creationTimestamp": created},
        }


def _matches(labels: dict[str, str], selector: str) -> bool:
    wanted = dict(part.split("=", 1) for part in selector.split(",") if part)
    return all(labels.get(key) == value for key, value in wanted.items())


def _handler(cluster: FakeCluster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            cluster.requests.append(self.path)
            parts = url.path.strip("/").split("/")
            query = parse_qs(url.query)
            if parts[:3] == ["api", "v1", "namespaces"] and parts[4:] == ["pods"]:
                selector = query.get("labelSelector", [""])[0]
                items = [
                    p for p in cluster.pods
                    if p["metadata"]["namespace"] == parts[3]
                    and _matches(p["metadata"]["labels"], selector)
                ]  # fmt: skip
                body = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}
                self._send(200, json.dumps(body).encode(), "application/json")
            elif parts[:3] == ["api", "v1", "namespaces"] and parts[-1] == "log":
                log = cluster.logs.get(parts[5])
                if log is None:
                    self._send(404, b'{"kind":"Status","code":404}', "application/json")
                else:
                    self._send(200, log.encode(), "text/plain")
            elif parts[:3] == ["api", "v1", "nodes"] and parts[3] in cluster.nodes:
                self._send(200, json.dumps(cluster.nodes[parts[3]]).encode(), "application/json")
            else:
                self._send(404, b'{"kind":"Status","code":404}', "application/json")

    return Handler


@contextmanager
def serving(cluster: FakeCluster, directory: Path) -> Iterator[Path]:
    """Serves the cluster on 127.0.0.1 and yields a kubeconfig for it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(cluster))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig = directory / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "fake", "user": {"token": "not-a-token"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                "current-context": "fake",
            }
        )
    )
    try:
        yield kubeconfig
    finally:
        server.shutdown()
        server.server_close()
