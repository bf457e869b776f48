"""The stdlib part of the case contract: the one identifier rule for case and supplier ids,
the case id reserved for the AccessDenied control, and the case folder's fixed file names.

Standard library only: the supplier API's image imports it too.
"""

from __future__ import annotations

import re
from typing import Final

# Case ids and supplier ids become S3 keys, URL paths and file names: nothing else is allowed.
ID_REGEX: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"
ID_PATTERN: Final = re.compile(ID_REGEX)

# The case whose stored object the analyst's role must NOT be able to read.
OTHER_CASE_ID: Final = "rfp-other"


def is_valid_id(value: object) -> bool:
    """True for a case or supplier id the contract allows; anything else never touches a key."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


# A case folder's optional file: what the synthetic supplier API serves as each supplier's
# availability for that case. Without it every supplier of the case is available.
AVAILABILITY_FILE: Final = "supplier-availability.json"
