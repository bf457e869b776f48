"""The stdlib part of the case contract: the one identifier rule for case and supplier ids,
the id of the AccessDenied control's case, and the case folder's fixed file names.

Standard library only: the supplier API's image imports it too.
"""

from __future__ import annotations

import re
from typing import Final

# Case ids and supplier ids become S3 keys, URL paths and file names: nothing else is allowed.
ID_REGEX: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"
ID_PATTERN: Final = re.compile(ID_REGEX)

# The case whose stored object the analyst's role must NOT be able to read (the AccessDenied
# control), shipped as the folder cases/rfp-other. Any valid id may be a run's own case, this
# one included, so a run whose case has this id uses the alternate instead: see other_case_id.
OTHER_CASE_ID: Final = "rfp-other"
ALTERNATE_OTHER_CASE_ID: Final = "rfp-other-2"


def other_case_id(case_id: str) -> str:
    """The id of the AccessDenied control's case in a run of ``case_id``: never ``case_id``."""
    return OTHER_CASE_ID if case_id != OTHER_CASE_ID else ALTERNATE_OTHER_CASE_ID


def is_valid_id(value: object) -> bool:
    """True for a case or supplier id the contract allows; anything else never touches a key."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


# A case folder's optional file: what the synthetic supplier API serves as each supplier's
# availability for that case. Without it every supplier of the case is available.
AVAILABILITY_FILE: Final = "supplier-availability.json"
