"""Where the supplier API is: a local server started for the run, or the cluster's Service.

Locally the controller generates the run's PKI and supplier key, starts the same server code
the cluster's supplier image runs, on loopback, and stops it when the run ends.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from app.controller.services.die_with_controller import dying_with_controller
from app.controller.services.pki import generate_run_pki
from app.controller.services.processes import LoopbackService
from app.core.endpoints import SupplierEndpoint
from app.core.errors import RunStopped, ServiceUnavailable
from app.core.repo import REPO_ROOT
from app.core.run_tree import RunPaths, ToolIdentity, create_secrets_dir, write_secret_file

LOCAL_HOST = "localhost"
ALIAS_HOST = "supplier-api-alias.localhost"
LOOPBACK = "127.0.0.1"
STARTUP_TIMEOUT_SECONDS = 15.0
SUPPLIER_KEY_FILE = "supplier-api-key"
SERVER_KEY_FILE = "supplier-tls.key"


class SupplierServiceError(RunStopped):
    """The local supplier API did not come up in time; the message names the fix."""


class SupplierUnavailable(ServiceUnavailable):
    """The local supplier API ended before it listened: it cannot run here (exit 3)."""


def _ensure_secrets_dir(paths: RunPaths, tool: ToolIdentity) -> Path:
    # The AWS stand-in and this service both keep secrets there; whichever starts first makes it.
    return paths.secrets if paths.secrets.is_dir() else create_secrets_dir(paths, tool)


def _write_public(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chmod(path, 0o644)


class LocalSupplierService(LoopbackService):
    """Runs ``python -m app.supplier_api serve`` on 127.0.0.1 for the length of a ``with`` block."""

    def __init__(
        self,
        paths: RunPaths,
        tool: ToolIdentity,
        case_dirs: list[Path],
        *,
        startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
    ) -> None:
        if not case_dirs:
            raise ValueError("LocalSupplierService needs at least one case folder to serve")
        self.paths = paths
        self.tool = tool
        # Absolute: the server runs from the repository root, not from the caller's directory.
        self.case_dirs = [d.resolve() for d in case_dirs]
        self.startup_timeout = startup_timeout
        # The server's own files: its log, its stderr and its ready file; no role mounts them.
        self.state_dir = paths.top / "supplier"
        self.log_file = self.state_dir / "requests.jsonl"
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr_file = self.state_dir / "stderr.log"
        self._ready = self.state_dir / "ready"
        # Set by start(): the public CA, and the two secret files it wrote.
        self._ca_file = self._server_key = self._key_file = Path()

    def _provision(self) -> tuple[Path, Path, Path, Path]:
        """Writes the PKI and the key: public certificates 0644, private material as secrets."""
        secrets_dir = _ensure_secrets_dir(self.paths, self.tool)
        pki_dir = self.paths.top / "pki"
        pki_dir.mkdir(mode=0o755)
        os.chmod(pki_dir, 0o755)
        self.state_dir.mkdir(mode=0o700)
        pki = generate_run_pki()
        ca_file, cert_file = pki_dir / "ca.crt", pki_dir / "server.crt"
        _write_public(ca_file, pki.ca_cert_pem)
        _write_public(cert_file, pki.server_cert_pem)
        server_key_file = secrets_dir / SERVER_KEY_FILE
        write_secret_file(server_key_file, pki.server_key_pem, self.tool)
        key_file = secrets_dir / SUPPLIER_KEY_FILE
        write_secret_file(key_file, secrets.token_urlsafe(32).encode("ascii"), self.tool)
        return ca_file, cert_file, server_key_file, key_file

    def _command(self, cert: Path, server_key: Path, key_file: Path, ready: Path) -> list[str]:
        command = [sys.executable, "-m", "app.supplier_api", "serve"]
        for case_dir in self.case_dirs:
            command += ["--case-dir", str(case_dir)]
        command += [
            "--key-file", str(key_file),
            "--cert", str(cert),
            "--key", str(server_key),
            "--host", LOOPBACK,
            "--port", "0",
            "--log", str(self.log_file),
            "--ready-file", str(ready),
        ]  # fmt: skip
        return command

    def _wait_ready(self, ready: Path) -> int:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if ready.exists():
                return int(ready.read_text(encoding="ascii"))
            if self._process.poll() is not None:
                break
            time.sleep(0.01)
        code = self._process.poll()
        self.stop()
        stderr = self._stderr_file.read_text(encoding="utf-8", errors="replace").strip()
        if code is not None:
            raise SupplierUnavailable(
                f"the local supplier API exited {code} before it listened "
                f"(stderr: {stderr or 'empty'})",
                "check the case folders and that port binding on 127.0.0.1 is allowed",
            )
        raise SupplierServiceError(
            f"the local supplier API did not say it listens within {self.startup_timeout:.0f}s "
            f"(stderr: {stderr or 'empty'})",
            "the machine may be overloaded, or the server was stopped; run again",
        )

    def start(self) -> None:
        """Writes the PKI and the key and starts the server, without waiting for it."""
        self._ca_file, cert, self._server_key, self._key_file = self._provision()
        # A clean environment: the server needs no AWS variable and no proxy setting.
        env = {"PATH": os.defpath, "PYTHONPATH": str(REPO_ROOT), "LC_ALL": "C.UTF-8"}
        with self._stderr_file.open("wb") as stderr:
            # Tied to the controller's life, in its own session (a Ctrl-C at the terminal is
            # the controller's to handle).
            self._process = subprocess.Popen(
                dying_with_controller(
                    self._command(cert, self._server_key, self._key_file, self._ready)
                ),
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )

    def ready(self) -> SupplierEndpoint:
        """Waits until the server listens; then its TLS key file goes."""
        port = self._wait_ready(self._ready)
        # The server loaded its TLS key before it said it was ready; nothing reads the file again.
        self._server_key.unlink()
        return SupplierEndpoint(
            url=f"https://{LOCAL_HOST}:{port}",
            alias_url=f"https://{ALIAS_HOST}:{port}",
            address=LOOPBACK,
            port=port,
            ca_file=self._ca_file,
            key_file=self._key_file,
        )

    def __enter__(self) -> SupplierEndpoint:
        self.start()
        return self.ready()

    def running(self) -> subprocess.Popen[bytes] | None:
        return self._process

    def detach(self) -> subprocess.Popen[bytes] | None:
        process, self._process = self._process, None
        return process
