"""attestation.intoto.jsonl: a run's Statement in a DSSE envelope, signed and read back.

The envelope is securesystemslib's (``dsse.Envelope``): its signature covers DSSE's
pre-authentication encoding of the payload type and the Statement's bytes. The file is one JSON
line, as in-toto's JSON Lines bundles are. Reading it is strict: the file is bounded, the
envelope must be the in-toto payload type, its Statement the v1 type with this project's
predicate type; anything else is named, never followed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import Key, Signer, SSlibKey

from app.report.statement import PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE

# A run's statement is some 60 KB; anything near this is not one.
MAX_ATTESTATION_BYTES: Final = 4 * 1024 * 1024


class AttestationUnreadable(ValueError):
    """The file is not a signed statement of this project's kind; the message says why."""


def signed_line(statement: Mapping[str, Any], signer: Signer) -> bytes:
    """The statement signed by ``signer``, as the one line of attestation.intoto.jsonl."""
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode("utf-8")
    envelope = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(signer)
    return json.dumps(envelope.to_dict(), sort_keys=True).encode("utf-8") + b"\n"


@dataclass(frozen=True)
class ReadAttestation:
    envelope: Envelope
    statement: dict[str, Any]
    keyids: tuple[str, ...]  # the keys the envelope says signed it, unverified

    @property
    def predicate(self) -> dict[str, Any]:
        found = self.statement["predicate"]
        assert isinstance(found, dict)
        return found


def read_attestation(data: bytes) -> ReadAttestation:
    if len(data) > MAX_ATTESTATION_BYTES:
        raise AttestationUnreadable(f"{len(data)} bytes, more than {MAX_ATTESTATION_BYTES}")
    lines = [line for line in data.splitlines() if line.strip()]
    if len(lines) != 1:
        raise AttestationUnreadable(f"{len(lines)} lines, where one envelope is expected")
    try:
        envelope = Envelope.from_dict(json.loads(lines[0]))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise AttestationUnreadable(f"not a DSSE envelope ({error!r:.200})") from error
    if envelope.payload_type != PAYLOAD_TYPE:
        raise AttestationUnreadable(f"payload type {envelope.payload_type!r:.100}")
    try:
        statement = json.loads(envelope.payload)
    except ValueError as error:
        raise AttestationUnreadable(f"the payload is not JSON ({error})") from error
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise AttestationUnreadable(
            f"the payload is not an in-toto Statement v1 ({STATEMENT_TYPE})"
        )
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise AttestationUnreadable(
            f"predicate type {str(statement.get('predicateType'))!r:.200}, not {PREDICATE_TYPE}"
        )
    if not isinstance(statement.get("predicate"), dict) or not isinstance(
        statement.get("subject"), list
    ):
        raise AttestationUnreadable("the Statement has no predicate object or subject list")
    return ReadAttestation(envelope, statement, tuple(envelope.signatures))


def signed_by(attestation: ReadAttestation, key: Key) -> bool:
    """Whether ``key`` made a valid signature over the envelope."""
    try:
        attestation.envelope.verify([key], 1)
    except (VerificationError, ValueError):
        return False
    return True


def public_key_pem(key: Key) -> bytes:
    """The key as PEM (SubjectPublicKeyInfo), whatever form securesystemslib keeps it in (an
    Ed25519 key's value is its raw bytes in hex, an ECDSA or RSA key's is PEM already)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    value = key.keyval.get("public")
    if not isinstance(value, str):
        raise ValueError(f"key {key.keyid} has no public value")
    if key.keytype == "ed25519":
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(value))
        return public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    return value.encode("ascii")


def key_from_pem(data: bytes) -> SSlibKey:
    """A public key in PEM (SubjectPublicKeyInfo), as attestation.pub holds it."""
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        public = load_pem_public_key(data)
    except ValueError as error:
        raise ValueError(f"not a PEM public key ({error})") from error
    return SSlibKey.from_crypto(public)
