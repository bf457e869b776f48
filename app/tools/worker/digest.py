"""SHA-256 for the worker, without hashlib's start-up cost.

Importing hashlib loads OpenSSL's libcrypto, about 2 ms of a tool process's start, and a run
starts some sixty of them. CPython's own built-in SHA-256 module, the one hashlib itself falls
back to, computes the same digest with nothing to load.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # the built-in modules have no stubs; the type is hashlib's
    from hashlib import sha256
else:
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.11, the system interpreter on Debian 12
        except ImportError:  # an interpreter built without its own SHA-256
            from hashlib import sha256


def sha256_hex(data: bytes) -> str:
    return sha256(data).hexdigest()
