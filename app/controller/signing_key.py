"""The key that signs each run's attestation: locally this installation's own Ed25519 key, made
on first use; in the cluster the stack's asymmetric AWS KMS key, whose private half never leaves
KMS.

The local key lives outside every run tree (no tool process is given its folder: bubblewrap
mounts only what a role lists, nono's Landlock grants only what a profile lists), in a folder of
the controller's alone (0700) as a file of its alone (0600), made with O_EXCL so two first runs
cannot both write it. A key file another user could read, or that is not a regular file, is
refused with the fix, never used.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from securesystemslib.signer import AWSSigner, CryptoSigner, Signature, Signer, SSlibKey

from app.core import cluster_env
from app.core.errors import BadInput, RunStopped
from app.core.signing_policy import key_alias

# Where the key is kept: this variable, else $XDG_CONFIG_HOME (or ~/.config)/procurement-analyst.
KEY_PATH_VARIABLE: Final = "ANALYST_SIGNING_KEY"
KEY_FILE: Final = "attestation-key.pem"
# Where the cluster's Job finds its KMS key (the stack's signing key, by ARN).
KMS_KEY_VARIABLE: Final = "ANALYST_SIGNING_KMS_KEY"


def local_key_path() -> Path:
    chosen = os.environ.get(KEY_PATH_VARIABLE)
    if chosen:
        return Path(chosen)
    if os.environ.get(cluster_env.MODE) == cluster_env.CLUSTER_MODE:
        # A pod without its KMS key (the rehearsal): its run volume, the one writable place.
        return Path(cluster_env.RUN_DIR) / ".config" / "procurement-analyst" / KEY_FILE
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "procurement-analyst" / KEY_FILE


def kms_key() -> str | None:
    """The KMS key this run signs with: the one named by ANALYST_SIGNING_KMS_KEY, else in the
    cluster (not its rehearsal, which has no KMS) the stack's key by its alias; None locally."""
    named = os.environ.get(KMS_KEY_VARIABLE)
    if named:
        return named
    in_cluster = os.environ.get(cluster_env.MODE) == cluster_env.CLUSTER_MODE
    rehearsal = os.environ.get(cluster_env.REHEARSAL) == cluster_env.REHEARSAL_ON
    role = os.environ.get(cluster_env.ROLE_NAME)
    return key_alias(role) if in_cluster and not rehearsal and role else None


@dataclass(frozen=True)
class LocalKey:
    signer: CryptoSigner
    path: Path
    made_now: bool  # first use: the key was made by this run


def local_signer(path: Path | None = None) -> LocalKey:
    """This installation's key, made now if there is none."""
    path = path or local_key_path()
    made_now = False
    if not os.path.lexists(path):
        _make(path)
        made_now = True
    return LocalKey(CryptoSigner(_load_private(path)), path, made_now)


def local_public_key(path: Path | None = None) -> SSlibKey:
    """The public half of this installation's key, for `verify` without --key; never makes one."""
    path = path or local_key_path()
    if not os.path.lexists(path):
        raise BadInput(
            f"{path}: no signing key of this installation",
            "give the run's public key with --key (attestation.pub beside its report), or "
            "--kms-key for a cluster's run",
        )
    return CryptoSigner(_load_private(path)).public_key


def local_key_needles() -> dict[str, bytes]:
    """What a run's files are scanned for so this installation's private key never reaches
    them: its PEM body and its raw bytes. Empty where the run signs with KMS (the private half
    never leaves it) or before the key is first made: one made by this run's signing, after
    every tool has ended, was never where a tool or a document could take it."""
    if kms_key() is not None:
        return {}
    path = local_key_path()
    if not os.path.lexists(path):
        return {}
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    private = _load_private(path)
    pem = private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    body = b"".join(line for line in pem.splitlines() if not line.startswith(b"-----"))
    needles = {"the signing key (PEM)": body}
    # A key given by ANALYST_SIGNING_KEY may have no raw form (RSA, ECDSA): its PEM body alone.
    with contextlib.suppress(ValueError):
        needles["the signing key (raw)"] = private.private_bytes(
            Encoding.Raw, PrivateFormat.Raw, NoEncryption()
        )
    return needles


def _make(path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        pem = Ed25519PrivateKey.generate().private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
        )
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        descriptor = os.open(path, flags, 0o600)
    except FileExistsError:
        return  # another run made it first: that one is used
    except OSError as error:
        raise RunStopped(
            f"{path}: cannot make this installation's signing key ({error.strerror})",
            f"set {KEY_PATH_VARIABLE} to a file in a folder of yours",
        ) from error
    with os.fdopen(descriptor, "wb") as out:
        out.write(pem)


def _load_private(path: Path) -> Any:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise RunStopped(
            f"{path}: cannot open this installation's signing key ({error.strerror})",
            f"remove it to have a new one made, or set {KEY_PATH_VARIABLE}",
        ) from error
    with os.fdopen(descriptor, "rb") as kept:
        found = os.fstat(kept.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid():
            raise RunStopped(
                f"{path}: the signing key is not a regular file of this user's",
                "remove it to have a new one made",
            )
        if stat.S_IMODE(found.st_mode) & 0o077:
            raise RunStopped(
                f"{path}: the signing key may be read by others "
                f"(mode {stat.S_IMODE(found.st_mode):04o})",
                f"chmod 600 {path}, or remove it to have a new one made",
            )
        data = kept.read(64 * 1024)
    try:
        return load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise RunStopped(
            f"{path}: not a PEM private key ({error})", "remove it to have a new one made"
        ) from error


class KmsSigner(AWSSigner):
    """securesystemslib's AWS KMS signer on a client of the caller's (its own would be the
    default session's, without the run's endpoint or credentials)."""

    def __init__(self, client: Any, key_id: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError
        from cryptography.hazmat.primitives.serialization import load_der_public_key

        try:
            answer = client.get_public_key(KeyId=key_id)
        except (BotoCoreError, ClientError) as error:
            raise RunStopped(
                f"KMS key {key_id}: its public key cannot be read ({error})",
                "check that the stack's signing key exists and the role may use it",
            ) from error
        algorithms = answer["SigningAlgorithms"]
        scheme = self._get_default_scheme(algorithms)
        if scheme is None:
            raise RunStopped(
                f"KMS key {key_id}: signs with {algorithms}, none of which securesystemslib "
                "verifies",
                "make it an ECC_NIST_P256 or RSA signing key",
            )
        public = SSlibKey.from_crypto(load_der_public_key(answer["PublicKey"]), scheme=scheme)
        # NOTE: AWSSigner.__init__ would only build a client of its own; the rest is its own.
        self.aws_key_id = key_id
        self._public_key = public
        self.client = client
        self.aws_algo = self.aws_algos[scheme]

    def sign(self, payload: bytes) -> Signature:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return super().sign(payload)
        except (BotoCoreError, ClientError) as error:
            raise RunStopped(
                f"KMS key {self.aws_key_id}: the statement could not be signed ({error})",
                "only the analyst's role may sign with the stack's key "
                "(policies/signing-key-policy.json)",
            ) from error


def signer_for(kms_client: Any | None, kms_key: str | None) -> tuple[Signer, Path | None, bool]:
    """The run's signer: the KMS key when one is named, else this installation's key; with the
    local key's path and whether it was made now."""
    if kms_key:
        return KmsSigner(kms_client, kms_key), None, False
    local = local_signer()
    return local.signer, local.path, local.made_now
