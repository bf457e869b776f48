"""Every element the accounting calls redundant changes nothing a tool process observes: its
state with the element and without it is the same.

The state is what the tool itself reads and does: under bubblewrap its whole /proc reading
(ids and maps, the five capability sets, no_new_privs, seccomp, which namespaces are its own,
hostname, mounts, environment, working directory, session, scratch space, parent-death
signal), the owner it sees on its own output file, whether it may nest a user namespace, and
the answer to every attack; under nono its environment, its answer to every attack, and the
seccomp, capability and identity fields the host's /proc shows while it waits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.roles import ROLES, Layer, Role
from app.core.run import Run
from app.core.run_tree import CHECK_FILE
from app.tools.accounting import Redundant
from app.tools.attack_checks import (
    another_roles_output,
    attack_parameters,
    process_targets,
    targets,
)
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import BubblewrapPolicy
from app.tools.layer import ConfinementLayer
from app.tools.nono import accounting as nono_accounting
from app.tools.nono import render
from app.tools.nono.launcher import NonoLayer
from app.tools.worker.system import read_namespaces
from tests.support.elements import Shared, fresh_run, shared_services

pytestmark = pytest.mark.integration

BWRAP_REDUNDANT = sorted(
    key for key, proof in bwrap_accounting.ACCOUNT.items() if isinstance(proof, Redundant)
)
NONO_REDUNDANT = sorted(
    (role, element)
    for role, table in nono_accounting.ACCOUNT.items()
    for element, proof in table.items()
    if isinstance(proof, Redundant)
)
# What differs between any two runs and says nothing about the policy.
HELD_FIELDS = ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs",
               "Seccomp", "Seccomp_filters")  # fmt: skip


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    with shared_services() as services:
        yield services


def attack_answers(run: Run, layer: ConfinementLayer) -> dict[Role, Any]:
    with targets(run) as aim:
        processes = process_targets(run, layer, aim.victim_pid)
        return {
            role: dict(
                layer.run_tool(
                    role,
                    "attack-surface",
                    attack_parameters(
                        run,
                        aim,
                        layer.role_path(role, "out", "").rstrip("/"),
                        role,
                        processes=processes,
                        others=another_roles_output(run, role),
                    ),
                ).data["answers"]
            )
            for role in ROLES
        }


def bwrap_state(shared: Shared, policy: BubblewrapPolicy) -> dict[str, Any]:
    own = read_namespaces()
    with fresh_run(shared, Layer.BUBBLEWRAP) as (run, _):
        layer = BubblewrapLayer(run, policy=policy)
        layer.preflight()
        state: dict[str, Any] = {"attacks": attack_answers(run, layer)}
        for role in ROLES:
            seen = dict(layer.run_tool(role, "proc-status").data)
            seen["namespaces"] = {ns: value != own[ns] for ns, value in seen["namespaces"].items()}
            written = layer.run_tool(role, "write-file", f"/output/{CHECK_FILE}", "state\n")
            seen["output_owner"] = written.data.get("owner")
            seen["nested_userns"] = layer.run_tool(role, "unshare-user").observed
            state[role] = seen
        return state


@pytest.mark.parametrize("element", BWRAP_REDUNDANT)
def test_a_redundant_bwrap_element_changes_nothing_the_tool_observes(
    element: str, shared: Shared
) -> None:
    with_it = bwrap_state(shared, BubblewrapPolicy())
    without_it = bwrap_state(shared, BubblewrapPolicy(omit=frozenset({element})))
    assert with_it["reader"]["uid_map"] == ["1000 1000 1"], "the state is not a real reading"
    assert json.dumps(without_it, sort_keys=True) == json.dumps(with_it, sort_keys=True)


def nono_state(shared: Shared, layer_for: Any) -> dict[str, Any]:
    with fresh_run(shared, Layer.NONO) as (run, _):
        layer = layer_for(run)
        try:
            layer.preflight()
            state: dict[str, Any] = {"attacks": attack_answers(run, layer)}
            for role in ROLES:
                state[role] = sorted(layer.run_tool(role, "env-names").data["names"])
            held = layer.read_while_held("reader").status
            state["held"] = {name: held[name] for name in HELD_FIELDS}
            return state
        finally:
            layer.close()


@pytest.mark.parametrize(
    ("role", "element"), NONO_REDUNDANT, ids=[f"{r}:{e}" for r, e in NONO_REDUNDANT]
)
def test_a_redundant_nono_element_changes_nothing_the_tool_observes(
    role: Role, element: str, shared: Shared, tmp_path: Path
) -> None:
    omit = frozenset({(role, element)})
    committed = tmp_path / "policies"
    render.write(committed, omit=omit)
    with_it = nono_state(shared, NonoLayer)
    without_it = nono_state(shared, lambda run: NonoLayer(run, committed_dir=committed, omit=omit))
    assert with_it["held"]["Seccomp_filters"] == "2", "the state is not a real reading"
    assert without_it == with_it
