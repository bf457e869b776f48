"""The credential comparison's digests: the same PBKDF2 an online role's probe computes over the
credential it holds, under a key made for this run alone, so a digest from one run says nothing
about another.

Each secret's digest is computed once: the credential checks and the secret scan ask for the
same ones. The map is keyed by the secret's SHA-256, so it holds no secret itself.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Iterable
from concurrent.futures import Future

from app.tools import waiting
from app.tools.worker.credentials import DIGEST_ITERATIONS


class CredentialDigests:
    """The run's digest key, and each digest asked for, computed once."""

    def __init__(self) -> None:
        # Held only here and in the online roles' environments.
        self.key = secrets.token_hex(32)
        self._digests: dict[bytes, Future[str]] = {}
        self._lock = threading.Lock()

    def digest(self, secret: bytes) -> str:
        """The secret's digest, computing it if no one has yet (or waiting for it)."""
        return waiting.result(self._future(secret))

    def start(self, secrets_: Iterable[bytes]) -> None:
        """Starts computing these digests in threads of their own and returns at once. A
        PBKDF2 of DIGEST_ITERATIONS takes some 110 ms here and lets other threads run: begun
        while the checks before the credential section wait for their tool processes, the
        section itself waits for none of them (measured: the nono case some 0.3 s shorter)."""
        for secret in secrets_:
            threading.Thread(
                target=self._future, args=(secret,), name="digest", daemon=True
            ).start()

    def _future(self, secret: bytes) -> Future[str]:
        seen = hashlib.sha256(secret).digest()
        with self._lock:
            digest = self._digests.get(seen)
            if digest is not None:
                return digest
            digest = self._digests[seen] = Future()
        try:
            digest.set_result(
                hashlib.pbkdf2_hmac(
                    "sha256", secret, self.key.encode("utf-8"), DIGEST_ITERATIONS
                ).hex()
            )
        except BaseException as error:  # handed to whoever asks for this digest
            digest.set_exception(error)
        return digest
