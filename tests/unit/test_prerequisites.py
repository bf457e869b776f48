"""The prerequisite list's two readers: preflight stops at the first missing piece, doctor shows
them all; and the distribution switches, which this kernel does not have, on stand-in files."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.errors import LayerUnavailable
from app.core.run_tree import ToolIdentity
from app.tools.bubblewrap import preflight
from app.tools.bubblewrap.preflight import BwrapPrerequisites
from app.tools.prerequisites import Finding, Prerequisite, evaluate, holds, missing, require

CALLED: list[str] = []


def _check(claim: str, ok: bool) -> Prerequisite:
    def check() -> Finding:
        CALLED.append(claim)
        return holds("seen") if ok else missing(f"{claim} is missing", f"add {claim}")

    return Prerequisite(claim, check)


def test_require_stops_at_the_first_missing_piece_with_its_fix() -> None:
    CALLED.clear()
    items = [_check("a", True), _check("b", False), _check("c", False)]
    with pytest.raises(LayerUnavailable) as caught:
        require(items)
    assert str(caught.value) == "b is missing; add b"
    assert CALLED == ["a", "b"]


def test_evaluate_reports_every_piece_and_does_not_check_what_waits_for_a_failure() -> None:
    CALLED.clear()
    waiting = Prerequisite("d", lambda: holds("never"), after=("b",))
    outcomes = evaluate([_check("a", True), _check("b", False), waiting, _check("c", False)])
    assert [(o.prerequisite.claim, o.ok) for o in outcomes] == [
        ("a", True),
        ("b", False),
        ("d", False),
        ("c", False),
    ]
    assert outcomes[2].finding is None and outcomes[2].waits_for == ("b",)
    assert CALLED == ["a", "b", "c"]


@pytest.mark.parametrize(("value", "ok"), [("1", False), ("0", True)])
def test_a_distribution_switch_that_refuses_user_namespaces_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, ok: bool
) -> None:
    # Stand-in for Ubuntu's kernel.apparmor_restrict_unprivileged_userns, absent on this kernel.
    switch = tmp_path / "apparmor_restrict_unprivileged_userns"
    switch.write_text(f"{value}\n")
    monkeypatch.setattr(preflight, "USERNS_SWITCHES", ((switch, "1", "the fix"),))
    items = BwrapPrerequisites(["bwrap"], ToolIdentity(1000, 1000), tmp_path).items()
    (item,) = [i for i in items if i.claim.startswith(str(switch))]
    finding = item.check()
    assert finding.ok is ok
    if not ok:
        assert finding.found == f"unprivileged user namespaces are refused ({switch} is 1)"
        assert finding.fix == "the fix"
