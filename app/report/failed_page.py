"""report.html of a run that stopped at a failed check: the page leads with that check (its id,
claim and what was observed), the controls made before it in its section, what to do next, then
every check the run made, from checks.json alone (escaped as every page is)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.report.page import CheckView, check_views, render, sections


@dataclass(frozen=True)
class FailedView:
    run: Mapping[str, Any]  # checks.json's opening fields
    failed: CheckView
    # The controls of its section made before it: what the same operation got unconfined.
    controls: list[CheckView]
    checks: list[CheckView]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.status == status)


def failed_view(checks: Mapping[str, Any], stopped_at: str) -> FailedView:
    views = check_views(checks, "")
    failed = next(view for view in views if view.id == stopped_at)
    before = views[: views.index(failed)]
    controls = [
        view
        for view in before
        if (view.section == failed.section and ".control." in f".{view.id}.")
        or view.id == f"{failed.id}.control"
    ]
    return FailedView(checks, failed, controls, views)


def render_failed(checks: Mapping[str, Any], stopped_at: str) -> bytes:
    view = failed_view(checks, stopped_at)
    return render("failed.html.j2", view=view, sections=sections(view.checks, ()))
