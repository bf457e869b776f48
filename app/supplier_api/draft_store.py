"""Submitted recommendation drafts, held in memory: the server is synthetic and stores nothing."""

from __future__ import annotations

import secrets
import threading
from collections import deque
from dataclasses import dataclass

# A long-lived server (the cluster's) must not grow without bound; the oldest drafts go first.
MAX_DRAFTS = 1000


@dataclass(frozen=True)
class Draft:
    recommendation_id: str
    case_id: str
    content_type: str
    body: bytes


class DraftStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._drafts: deque[Draft] = deque(maxlen=MAX_DRAFTS)

    def add(self, case_id: str, content_type: str, body: bytes) -> Draft:
        draft = Draft(f"rec-{secrets.token_hex(8)}", case_id, content_type, body)
        with self._lock:
            self._drafts.append(draft)
        return draft

    def all(self) -> list[Draft]:
        with self._lock:
            return list(self._drafts)
