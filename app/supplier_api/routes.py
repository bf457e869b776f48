"""Maps a method and path to the one operation it names, or to the status that refuses it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.core.ids import is_valid_id

# Each route is a fixed shape; the captured segment is checked against the id rule before
# it is used, so a path can never reach a lookup with anything the contract does not allow.
_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(r"^/cases/([^/]+)/suppliers$"), "availability"),
    ("POST", re.compile(r"^/cases/([^/]+)/recommendations$"), "submit_draft"),
    ("PATCH", re.compile(r"^/suppliers/([^/]+)$"), "update_supplier"),
    ("POST", re.compile(r"^/purchase-orders$"), "purchase_order"),
    ("GET", re.compile(r"^/_log$"), "read_log"),
)


@dataclass(frozen=True)
class Match:
    operation: str | None  # None: refused with ``status``
    argument: str | None = None
    status: int = 200


def match(method: str, path: str) -> Match:
    """The operation for this request, or 404/405/400 when there is none to perform."""
    path_known = False
    for route_method, pattern, operation in _ROUTES:
        found = pattern.fullmatch(path)
        if found is None:
            continue
        path_known = True
        if route_method != method:
            continue
        argument = found.group(1) if pattern.groups else None
        if argument is not None and not is_valid_id(argument):
            return Match(None, status=400)
        return Match(operation, argument)
    return Match(None, status=405 if path_known else 404)
