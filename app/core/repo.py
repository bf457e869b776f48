"""Where the checkout (or the image's /opt/analyst) keeps the cases and the committed policies."""

from __future__ import annotations

from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
CASES_DIR: Final = REPO_ROOT / "cases"
POLICIES_DIR: Final = REPO_ROOT / "policies"
SAMPLE_CASE: Final = CASES_DIR / "rfp-001"
