"""The table of attacks and the list of redundant elements in docs/proofs.md are the code's:
each row is rendered from the data the run checks against, an attack's row keyed by the id of
the check that makes it."""

from __future__ import annotations

from app.core.repo import REPO_ROOT
from app.tools.accounting import Redundant
from app.tools.attacks import ATTACKS, CONTROL_ANSWERS, describe
from app.tools.bubblewrap import accounting as bwrap_accounting
from app.tools.bubblewrap.attack_answers import ANSWERS as BWRAP
from app.tools.catalogue import ATTACK
from app.tools.nono import accounting as nono_accounting
from app.tools.nono.attack_answers import ANSWERS as NONO

PROOFS = (REPO_ROOT / "docs" / "proofs.md").read_text(encoding="utf-8")


def attack_rows() -> list[str]:
    rows = []
    for attack in ATTACKS:
        for probe in attack.probes:
            control = CONTROL_ANSWERS[probe]
            rows.append(
                f"| `{ATTACK.id_for(attack=attack.key)}` | `{probe}` | "
                f"{'succeeds' if control == 'ok' else control} | "
                f"{describe(BWRAP.errnos[probe])} | {describe(NONO.errnos[probe])} |"
            )
    return rows


def redundant_rows() -> list[str]:
    rows = [
        f"- bubblewrap `{key}`: {proof.reason}."
        for key, proof in bwrap_accounting.ACCOUNT.items()
        if isinstance(proof, Redundant)
    ]
    reasons = {
        (element, proof.reason)
        for table in nono_accounting.ACCOUNT.values()
        for element, proof in table.items()
        if isinstance(proof, Redundant)
    }
    rows += [f"- nono `{element}` (every role): {reason}." for element, reason in sorted(reasons)]
    return rows


def test_the_proofs_page_lists_every_attack_with_each_layers_errno() -> None:
    missing = [row for row in attack_rows() if row not in PROOFS]
    assert not missing, "docs/proofs.md rows differ from the code:\n" + "\n".join(missing)


def test_the_proofs_page_lists_every_redundant_element_with_its_reason() -> None:
    missing = [row for row in redundant_rows() if row not in PROOFS]
    assert not missing, "docs/proofs.md rows differ from the code:\n" + "\n".join(missing)


if __name__ == "__main__":
    print("\n".join(attack_rows()))
    print()
    print("\n".join(redundant_rows()))
