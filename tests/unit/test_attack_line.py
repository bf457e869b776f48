"""An attack's line asks every role for every probe its control tried: a probe a role's answers
leave out is a FAIL naming it, never a probe quietly left unchecked."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from app.core.checklog import CheckFailed, CheckLog
from app.core.roles import ROLES
from app.tools.attack_checks import MISSING, AttackChecks
from app.tools.attacks import ATTACKS, CONTROL_ANSWERS
from app.tools.bubblewrap.attack_answers import ANSWERS
from app.tools.catalogue import ATTACKS_SECTION

FILES = ATTACKS[0]


def _attack_checks() -> AttackChecks:
    checks = CheckLog(stream=io.StringIO())
    checks.begin(ATTACKS_SECTION, ipv6=True)
    run = SimpleNamespace(checks=checks, tool=SimpleNamespace(uid=1000))
    made = AttackChecks(run, layer=None, answers=ANSWERS)  # type: ignore[arg-type]
    return made


def _control() -> dict[str, str]:
    return {probe: CONTROL_ANSWERS[probe] for probe in FILES.probes}


def _refused() -> dict[str, dict[str, str]]:
    return {role: {p: ANSWERS.expected(p, role) for p in FILES.probes} for role in ROLES}


def test_every_role_answering_every_probe_as_the_layer_does_passes() -> None:
    attacks = _attack_checks()
    attacks._control_line(FILES, _control())
    attacks._attack_line(FILES, _control(), _refused())
    assert [record.outcome for record in attacks.checks.records] == ["PASS", "PASS"]


def test_a_probe_a_role_leaves_out_is_a_fail_naming_the_role_and_the_probe() -> None:
    attacks = _attack_checks()
    attacks._control_line(FILES, _control())
    seen = _refused()
    del seen["writer"][FILES.probes[0]]
    with pytest.raises(CheckFailed) as failed:
        attacks._attack_line(FILES, _control(), seen)
    assert failed.value.check_id == "attacks.files"
    assert f"writer {FILES.probes[0]} {MISSING}" in failed.value.record.detail
