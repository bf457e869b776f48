"""The supplier API under load, as its own process: valid reads per second and their p99 while
slow clients hold connections (each trickling a header line every few seconds, and connecting
again when the server cuts it at its request deadline), and the server's peak RSS then and
under a flood of connections that never speak."""

from __future__ import annotations

import contextlib
import secrets
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.controller.services.pki import generate_run_pki
from app.core.repo import REPO_ROOT, SAMPLE_CASE

SLOW_CLIENTS = 50
TRICKLE_SECONDS = 5.0
READERS = 4
READ_SECONDS = 6.0
FLOOD_CONNECTIONS = 1000
STARTUP_SECONDS = 30.0


@dataclass(frozen=True)
class LoadFigures:
    reads_per_s: float
    p50_ms: float
    p99_ms: float
    failed_reads: int
    peak_rss_mib: float
    peak_threads: int


class _Server:
    """``python -m app.supplier_api serve`` on a free loopback port, with its own PKI and key."""

    def __init__(self, directory: Path) -> None:
        pki = generate_run_pki()
        self.key = secrets.token_urlsafe(24)
        files = {"ca.crt": pki.ca_cert_pem, "server.crt": pki.server_cert_pem,
                 "server.key": pki.server_key_pem, "api-key": self.key.encode()}  # fmt: skip
        for name, data in files.items():
            (directory / name).write_bytes(data)
        ready = directory / "ready"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app.supplier_api",
                "serve",
                "--case-dir",
                str(SAMPLE_CASE),
                "--key-file",
                str(directory / "api-key"),
                "--cert",
                str(directory / "server.crt"),
                "--key",
                str(directory / "server.key"),
                "--log",
                str(directory / "requests.jsonl"),
                "--ready-file",
                str(ready),
            ],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the supplier API did not start for the load bench")
            time.sleep(0.02)
        self.port = int(ready.read_text())
        self.context = ssl.create_default_context(cafile=str(directory / "ca.crt"))
        self.peak_threads = 0

    def status(self, field: str) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
        return 0

    def sample_threads(self) -> None:
        self.peak_threads = max(self.peak_threads, self.status("Threads"))

    def connect(self) -> ssl.SSLSocket:
        plain = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return self.context.wrap_socket(plain, server_hostname="localhost")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)


def _trickle(server: _Server, stop: threading.Event) -> None:
    """Keeps SLOW_CLIENTS connections each sending a header line every TRICKLE_SECONDS."""
    held: list[ssl.SSLSocket | None] = [None] * SLOW_CLIENTS
    line = 0
    while not stop.is_set():
        for n, sock in enumerate(held):
            try:
                if sock is None:
                    sock = held[n] = server.connect()
                    sock.sendall(b"GET /cases/rfp-001/suppliers HTTP/1.1\r\n")
                sock.sendall(f"X-Slow-{line}: 1\r\n".encode())
            except OSError:
                if sock is not None:
                    sock.close()
                held[n] = None
        line += 1
        stop.wait(TRICKLE_SECONDS)
    for sock in held:
        if sock is not None:
            sock.close()


def _read(server: _Server, until: float, times: list[float], failures: list[int]) -> None:
    request = (
        "GET /cases/rfp-001/suppliers HTTP/1.1\r\nHost: localhost\r\n"
        f"X-Api-Key: {server.key}\r\nConnection: close\r\n\r\n"
    ).encode()
    while time.monotonic() < until:
        started = time.perf_counter()
        try:
            with server.connect() as tls:
                tls.sendall(request)
                reply = b""
                while chunk := tls.recv(65536):
                    reply += chunk
        except OSError:
            failures.append(1)
            continue
        if reply.startswith(b"HTTP/1.1 200 "):
            times.append(time.perf_counter() - started)
        else:
            failures.append(1)


def supplier_load() -> LoadFigures:
    with tempfile.TemporaryDirectory(prefix="analyst-bench-supplier-") as folder:
        server = _Server(Path(folder))
        try:
            stop = threading.Event()
            trickler = threading.Thread(target=_trickle, args=(server, stop), daemon=True)
            trickler.start()
            time.sleep(1.0)  # every slow client connected and holding a worker
            times: list[float] = []
            failures: list[int] = []
            until = time.monotonic() + READ_SECONDS
            readers = [
                threading.Thread(target=_read, args=(server, until, times, failures))
                for _ in range(READERS)
            ]
            for reader in readers:
                reader.start()
            while any(reader.is_alive() for reader in readers):
                server.sample_threads()
                time.sleep(0.2)
            stop.set()
            trickler.join()
            flood = []
            with contextlib.suppress(OSError):
                for _ in range(FLOOD_CONNECTIONS):
                    flood.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
            time.sleep(0.5)
            server.sample_threads()
            for sock in flood:
                sock.close()
            peak_kib = server.status("VmHWM")
        finally:
            server.stop()
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")
    return LoadFigures(
        reads_per_s=len(times) / READ_SECONDS,
        p50_ms=statistics.median(ordered) * 1000 if ordered else float("nan"),
        p99_ms=p99 * 1000,
        failed_reads=len(failures),
        peak_rss_mib=peak_kib / 1024,
        peak_threads=server.peak_threads,
    )
