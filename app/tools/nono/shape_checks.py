"""Each online role's reads carry nothing: the same GET of its listed pair sent three ways by
the role itself, through its proxy, with its placeholder, in one tool process: plain (the
control: passed on, 200), with a body (the role's own input file) and with a Content-Type;
the last two answered 400 by the role's front and never passed to nono, since nono would add
the real key to whatever the front passed (front.py, shape_refusal). The supplier's own log
shows the rest (correlation.no-body-on-read): no GET of the run arrived with a body.
"""

from __future__ import annotations

from typing import Final

from app.core.catalogue import Claim
from app.core.roles import Role
from app.tools.catalogue import nono as c
from app.tools.nono.front import Refusal
from app.tools.nono.proxy_calls import ProxyCalls, Sent, summary

# The file each online role sends as a GET's body: its own input, what a leak would carry.
BODY_FILES: Final[dict[Role, str]] = {"reader": "case.json", "writer": "private.json"}
# A type any client may put on a request; the front refuses the header, whatever it says.
SOME_TYPE: Final = "application/json"


class ShapeChecks:
    """Each online role's GET plain, with a body and with a type, and their lines."""

    def __init__(self, calls: ProxyCalls, read: str) -> None:
        self.calls = calls
        self.read = read

    def lines(self, role: Role) -> None:
        calls, layer = self.calls, self.calls.layer
        name = BODY_FILES[role]
        body_file = layer.role_path(role, "in", name)
        size = (calls.run.paths.workspace(role).input / name).stat().st_size
        asked = [
            (layer.next_request_id(role), "GET", self.read, shape)
            for shape in ("plain", f"body:{body_file}", f"type:{SOME_TYPE}")
        ]
        plain, with_body, with_type = (calls.keep(s) for s in calls.shaped_requests(role, asked))
        checks = calls.checks
        said = dict(role=role, path=self.read)
        checks.expect_equal(c.SHAPE_CONTROL(**said), plain.observed, 200)
        self._refused(c.WITH_BODY(**said, file=name, size=size), with_body)
        self._refused(c.WITH_TYPE(**said, type=SOME_TYPE), with_type)

    def _refused(self, claim: Claim, sent: Sent) -> None:
        """400, the front's own answer: one record, refused as not its pair's shape, and
        nothing passed to nono."""
        self.calls.checks.require(
            claim,
            sent.observed == 400 and sent.refused_at_front(Refusal.NOT_ITS_SHAPE),
            detail=f"observed {sent.observed}, records {summary(sent.records)}",
        )
