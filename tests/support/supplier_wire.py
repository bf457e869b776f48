"""The supplier API as its own process (`python -m app.supplier_api serve`), and a client that
writes raw bytes to it over TLS: requests no well-behaved client would send."""

from __future__ import annotations

import json
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.controller.services.pki import generate_run_pki
from app.core.repo import REPO_ROOT, SAMPLE_CASE

KEY = b"wire-test-key"
STARTUP_SECONDS = 30.0


@dataclass
class Served:
    """A running supplier API: its port, its CA, and its two log files."""

    process: subprocess.Popen[bytes]
    port: int
    ca_file: Path
    log: Path

    @property
    def other_log(self) -> Path:
        return self.log.with_name(f"{self.log.stem}.other{self.log.suffix}")

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def exchange(self, raw: bytes, *, timeout: float = 10.0) -> bytes:
        """Writes ``raw`` on a new connection and reads until the server closes it (or goes
        quiet for ``timeout``); a server that closes while data is still being written (413,
        414, 431) may reset the connection, and what came back before is returned."""
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as plain,
            self.context().wrap_socket(plain, server_hostname="localhost") as tls,
        ):
            with suppress(OSError):
                tls.sendall(raw)
            received = b""
            with suppress(OSError):
                while chunk := tls.recv(65536):
                    received += chunk
            return received

    def lines(self, path: Path) -> list[dict[str, Any]]:
        """A log file's entries, the rotated one first."""
        found = []
        for each in (path.with_name(path.name + ".1"), path):
            if each.exists():
                found += [json.loads(line) for line in each.read_text().splitlines()]
        return found


def statuses(reply: bytes) -> list[int]:
    """The status code of every response in ``reply``, in order (the bodies are JSON, which
    holds no status line)."""
    return [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)]


def request(method: str, path: str, *headers: str, body: bytes = b"", key: bool = False) -> bytes:
    """One request's bytes; ``key`` adds the right X-Api-Key."""
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost", *headers]
    if key:
        lines.append(f"X-Api-Key: {KEY.decode()}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def write_files(directory: Path) -> dict[str, Path]:
    pki = generate_run_pki()
    files = {
        "ca": (directory / "ca.crt", pki.ca_cert_pem),
        "cert": (directory / "server.crt", pki.server_cert_pem),
        "key": (directory / "server.key", pki.server_key_pem),
        "api-key": (directory / "api-key", KEY + b"\n"),
    }
    for path, data in files.values():
        path.write_bytes(data)
    return {name: path for name, (path, _) in files.items()}


def serve_command(directory: Path, files: dict[str, Path], *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "app.supplier_api", "serve", "--case-dir", str(SAMPLE_CASE),
        "--key-file", str(files["api-key"]), "--cert", str(files["cert"]),
        "--key", str(files["key"]), "--log", str(directory / "requests.jsonl"), *extra,
    ]  # fmt: skip


@contextmanager
def supplier_api(directory: Path) -> Iterator[Served]:
    """The supplier API serving the sample case on a free loopback port until the block ends."""
    files = write_files(directory)
    ready = directory / "ready"
    process = subprocess.Popen(
        serve_command(directory, files, "--ready-file", str(ready)),
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(directory / "stderr.log").open("wb"),
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists():
            assert process.poll() is None, (directory / "stderr.log").read_text()
            assert time.monotonic() < deadline, "the supplier API did not start"
            time.sleep(0.02)
        port = int(ready.read_text())
        yield Served(process, port, files["ca"], directory / "requests.jsonl")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
