"""What a role holds as its supplier credential, compared without its value leaving the
process: only a keyed digest does, to the controller."""

from __future__ import annotations

import hashlib
import os

from .protocol import Result, ok

KEY_VARIABLE = "SUPPLIER_API_KEY"
DIGEST_KEY_VARIABLE = "ANALYST_DIGEST_KEY"
DIGEST_ITERATIONS = 200_000


def credential_digest(args: list[str]) -> Result:
    """PBKDF2-HMAC-SHA256 of the role's supplier credential under the run's digest key.

    Only the digest leaves the process, and only to the controller, which compares and drops it.
    """
    value = os.environ.get(KEY_VARIABLE)
    digest_key = os.environ[DIGEST_KEY_VARIABLE]
    digest = hashlib.pbkdf2_hmac(
        "sha256", (value or "").encode("utf-8"), digest_key.encode("utf-8"), DIGEST_ITERATIONS
    )
    return ok(present=value is not None, non_empty=bool(value), digest=digest.hex())


ACTIONS = {"credential-digest": credential_digest}
