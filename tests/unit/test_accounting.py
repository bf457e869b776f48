"""Every element of every committed policy is accounted for, and nothing else is: a new switch
cannot be added without saying which check fails without it (or why it is redundant), and
the removal and redundancy tests then hold that statement to the truth."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest

from app.core.roles import ROLES, Role
from app.tools.accounting import Redundant, Watched
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.bubblewrap import render as bwrap_render
from app.tools.bubblewrap.policy import BubblewrapPolicy, elements, per_call_elements
from app.tools.nono import accounting as nono_accounting
from app.tools.nono import render as nono_render
from app.tools.nono.elements import elements as profile_elements
from app.tools.nono.elements import without
from app.tools.nono.policy import committed_profile

RUN = PurePosixPath("/var/tmp/analyst/run-id/run")


def bwrap_keys(role: Role) -> list[str]:
    """The element names of the role's vector as the launcher builds it for a real run."""
    vector = elements(
        role=role,
        input_dir=RUN / role / "in",
        output_dir=RUN / role / "out",
        code_dir=PurePosixPath("/var/tmp/analyst/run-id/code"),
    )
    fds, loader = per_call_elements([5], BubblewrapPolicy().limits(role))
    return [element.key for element in (*vector, *fds, *loader)]


@pytest.mark.parametrize("role", ROLES)
def test_every_bwrap_element_of_each_role_is_accounted_for(role: Role) -> None:
    keys = bwrap_keys(role)
    assert len(keys) == len(set(keys)), "two elements share a name"
    assert keys == bwrap_accounting.keys_of(role), "the committed form names other elements"
    missing = [key for key in keys if key not in bwrap_accounting.ACCOUNT]
    assert not missing, f"unaccounted elements of the {role}'s vector: {missing}"
    for key in keys:
        proof = bwrap_accounting.proof_for(role, key)
        if isinstance(proof, Watched) and role != "reader":
            # The reader's checks watch its elements one by one; the others', as a whole.
            assert proof.check.startswith((f"bubblewrap.{role}.", "attacks.")), proof


def test_the_bwrap_accounting_names_no_element_that_is_not_there() -> None:
    used = {key for role in ROLES for key in bwrap_keys(role)}
    assert set(bwrap_accounting.ACCOUNT) == used
    for element, dependents in bwrap_accounting.DEPENDENTS.items():
        assert {element, *dependents} <= used


@pytest.mark.parametrize("role", ROLES)
def test_every_nono_profile_element_is_accounted_for(role: Role) -> None:
    names = profile_elements(committed_profile(role))
    assert len(names) == len(set(names)), "two elements share a name"
    assert set(nono_accounting.ACCOUNT[role]) == set(names)


def test_each_element_left_out_leaves_the_rest_as_it_was() -> None:
    for role in ROLES:
        profile = committed_profile(role)
        names = profile_elements(profile)
        for name in names:
            assert profile_elements(without(profile, name)) == [n for n in names if n != name]
    with pytest.raises(KeyError):
        without(committed_profile("reader"), "network.block")


def test_every_proof_says_something() -> None:
    proofs = [*bwrap_accounting.ACCOUNT.values()]
    proofs += [proof for table in nono_accounting.ACCOUNT.values() for proof in table.values()]
    for proof in proofs:
        if isinstance(proof, Watched):
            assert proof.check and proof.because
        else:
            assert isinstance(proof, Redundant) and len(proof.reason) > 20


def test_the_committed_accounting_is_the_code() -> None:
    for directory, render in (
        (bwrap_render.COMMITTED_DIR, bwrap_render.rendered()),
        (nono_render.COMMITTED_DIR, nono_render.rendered()),
    ):
        on_disk = json.loads((directory / "elements.json").read_text())
        assert on_disk == json.loads(render["elements.json"])
        for role in ROLES:
            assert on_disk["roles"][role], f"no elements listed for the {role}"
