"""Renders the README's screenshot of a report: one real local run of the sample case under
bubblewrap, its report.html opened in headless Chromium at 1280 px, the top of the page saved
as docs/images/report.png. Run by `make report-screenshot`."""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
from pathlib import Path

from app.controller.run import run_case
from app.controller.run_plan import RunOptions
from app.core.repo import REPO_ROOT, SAMPLE_CASE
from app.core.roles import Layer
from tests.support import browser

TARGET = REPO_ROOT / "docs" / "images" / "report.png"
WIDTH = 1280
HEIGHT = 1500


def main() -> int:
    if browser.available() is None:
        print("error: chromium is missing; run scripts/browser.sh first", file=sys.stderr)
        return 1
    base = Path(tempfile.mkdtemp(prefix="analyst-screenshot-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        options = RunOptions(
            layer=Layer.BUBBLEWRAP,
            case_dir=SAMPLE_CASE,
            out_dir=base / "report",
            work_base=base / "work",
        )
        outcome = run_case(options, stream=io.StringIO())
        shot = browser.screenshot(outcome.out_dir / "report.html", WIDTH, max_height=HEIGHT)
        TARGET.write_bytes(shot.png)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"wrote {TARGET.relative_to(REPO_ROOT)} ({len(shot.png)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
