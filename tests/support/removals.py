"""Which elements of a layer's committed policies the removal tests leave out, one run each:
every element its accounting (policies/*/elements.json) says a check watches."""

from __future__ import annotations

from app.core.roles import ROLES, Layer
from app.tools.accounting import Watched
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.nono import accounting as nono_accounting
from app.tools.policy_breaks import PolicyBreak, listed


def watched(layer: Layer) -> list[PolicyBreak]:
    """Every ``--break`` element of ``layer`` that a check watches."""
    return [entry for entry in listed() if entry.layer is layer and entry.watched_by is not None]


def accounted_checks(layer: Layer) -> set[tuple[str, str, str]]:
    """(role, element, check) for every watched element of ``layer``, from its accounting."""
    if layer is Layer.BUBBLEWRAP:
        return {
            (role, key, proof.check)
            for role in ROLES
            for key in bwrap_accounting.keys_of(role)
            if isinstance(proof := bwrap_accounting.proof_for(role, key), Watched)
        }
    return {
        (role, element, proof.check)
        for role, table in nono_accounting.ACCOUNT.items()
        for element, proof in table.items()
        if isinstance(proof, Watched)
    }
