"""The supplier API under clients that hold on: a request trickled one header line at a time
is cut at its deadline, a flood of connections leaves the server's threads and memory bounded
and a connection past the pool is answered 503, and a log on a full filesystem makes a request
a 500 (never a 200 that was not answered) and SIGTERM still exit 0."""

from __future__ import annotations

import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from app.core.repo import REPO_ROOT
from app.supplier_api.server import MAX_REFUSING, MAX_WORKERS, REQUEST_DEADLINE_SECONDS
from tests.support.supplier_wire import (
    Served,
    request,
    serve_command,
    statuses,
    supplier_api,
    write_files,
)

pytestmark = pytest.mark.integration

READ = request("GET", "/cases/rfp-001/suppliers", "Connection: close", key=True)


def _status_field(process: subprocess.Popen[bytes], field: str) -> int:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{process.pid}/status")


def _held(served: Served) -> ssl.SSLSocket:
    """A connection through its handshake that then says nothing."""
    plain = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    return served.context().wrap_socket(plain, server_hostname="localhost")


def test_a_request_trickled_a_line_at_a_time_is_cut_at_its_deadline(tmp_path: Path) -> None:
    with supplier_api(tmp_path) as served, _held(served) as tls:
        started = time.monotonic()
        tls.sendall(b"GET /cases/rfp-001/suppliers HTTP/1.1\r\n")
        closed_after = None
        for n in range(int(REQUEST_DEADLINE_SECONDS) * 3):
            time.sleep(1.0)
            try:
                tls.sendall(f"X-Trickle-{n}: 1\r\n".encode())
            except OSError:
                closed_after = time.monotonic() - started
                break
            tls.settimeout(0.01)
            try:
                if tls.recv(1) == b"":
                    closed_after = time.monotonic() - started
                    break
            except (TimeoutError, ssl.SSLWantReadError):
                pass
        assert closed_after is not None, "the trickling request was never cut"
        assert REQUEST_DEADLINE_SECONDS - 1 < closed_after < REQUEST_DEADLINE_SECONDS + 3


def test_a_connection_flood_is_bounded_and_past_the_pool_answered_503(tmp_path: Path) -> None:
    with supplier_api(tmp_path) as served:
        assert statuses(served.exchange(READ)) == [200]
        holders = [_held(served) for _ in range(MAX_WORKERS)]
        try:
            time.sleep(0.5)  # every worker now waits on one of them
            assert statuses(served.exchange(READ, timeout=5)) == [503]
            # A flood of plain connections that never handshake: each is closed or refused.
            flood = [
                socket.create_connection(("127.0.0.1", served.port), timeout=10) for _ in range(600)
            ]
            time.sleep(1.0)
            threads = _status_field(served.process, "Threads")
            rss_kib = _status_field(served.process, "VmRSS")
            for each in flood:
                each.close()
        finally:
            for each in holders:
                each.close()
        assert threads <= 1 + MAX_WORKERS + 2, threads
        assert rss_kib < 64 * 1024, rss_kib
        # The pool is free again once the holders go.
        deadline = time.monotonic() + REQUEST_DEADLINE_SECONDS
        while statuses(served.exchange(READ)) != [200]:
            assert time.monotonic() < deadline, "the pool did not come back"
            time.sleep(0.2)
        assert MAX_REFUSING > 0


def test_a_full_log_filesystem_answers_500_and_sigterm_is_still_exit_0(tmp_path: Path) -> None:
    """The log on a 64 KiB tmpfs in a private mount namespace, filled before any request."""
    files = write_files(tmp_path)
    logs, ready = tmp_path / "logs", tmp_path / "ready"
    logs.mkdir()
    script = (
        'mount -t tmpfs -o size=64k tmpfs "$1" || exit 99; '
        'head -c 1M /dev/zero > "$1/filler" 2>/dev/null; shift; exec "$@"'
    )
    command = serve_command(tmp_path, files, "--ready-file", str(ready))
    command[command.index("--log") + 1] = str(logs / "requests.jsonl")
    stderr = tmp_path / "stderr.log"
    process = subprocess.Popen(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            str(logs),
            *command,
        ],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr.open("wb"),
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert process.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        served = Served(process, int(ready.read_text()), files["ca"], logs / "requests.jsonl")
        reply = served.exchange(READ)
        assert statuses(reply) == [500], reply
        assert b'"error":"log failed"' in reply
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    errors = stderr.read_text()
    assert code == 0, errors
    assert "Traceback" not in errors
    assert "supplier API: the request log cannot be written (No space left on device)" in errors
