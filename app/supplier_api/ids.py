"""The one identifier rule for case and supplier ids, shared by the catalog and the routes."""

from __future__ import annotations

import re

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def is_valid_id(value: object) -> bool:
    """True for a case or supplier id the contract allows; anything else never touches a lookup."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None
