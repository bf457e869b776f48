"""One named element of one role's committed policy, left out on purpose (``--break``), so that
a reader can see the run stop at the check that watches it.

The names are those of the committed ``policies/<layer>/elements.json``, as each layer lists
them (app/tools/layer.py's LayerAnswers.policy_elements), written ``<role>:<element>``:
``reader:--unshare-net`` (a bubblewrap element), ``evaluator:network.block`` (a nono one). A
name that both layers' files hold is taken as the chosen layer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from app.core.errors import BadInput
from app.core.roles import Layer, Role
from app.tools.registry import answers

LIST: Final = "list"
EXAMPLE: Final = "reader:--unshare-net"


@dataclass(frozen=True)
class PolicyBreak:
    """``element`` of ``role``'s committed policy under ``layer``, as elements.json accounts for
    it: ``watched_by`` is the id of the check that fails without it, None for a redundant one."""

    layer: Layer
    role: Role
    element: str
    watched_by: str | None

    @property
    def name(self) -> str:
        return f"{self.role}:{self.element}"


def listed() -> list[PolicyBreak]:
    """Every element of every role's committed policy, both layers, in the files' order."""
    return [
        PolicyBreak(layer, role, element, watched_by)
        for layer in Layer
        for role, element, watched_by in answers(layer).policy_elements()
    ]


def parse(name: str, layer: Layer | None = None) -> PolicyBreak:
    """The break ``name`` asks for, of ``layer``'s policy if given; BadInput when no committed
    policy (of that layer) has such an element, or when, no layer given, both layers do."""
    matches = [entry for entry in listed() if entry.name == name]
    mine = [entry for entry in matches if layer is None or entry.layer is layer]
    if len(mine) == 1:
        return mine[0]
    if mine:
        raise BadInput(
            f"--break {name}: an element of both layers' policies",
            "name the layer: run --layer bubblewrap or run --layer nono",
        )
    if matches:
        (other,) = {entry.layer for entry in matches}
        raise BadInput(
            f"--break {name}: an element of the {other} layer's policy, not the {layer} layer's",
            f"run it with --layer {other}",
        )
    raise BadInput(
        f"--break {name}: no role's committed policy has that element",
        f"give <role>:<element> as --break {LIST} prints them (such as {EXAMPLE})",
    )


def listing() -> list[str]:
    """The lines ``--break list`` prints: each element, by layer, with what watches it."""
    lines = []
    for layer in Layer:
        lines.append(f"{layer.value} (policies/{layer.value}/elements.json):")
        for entry in listed():
            if entry.layer is layer:
                watcher = (
                    f"fails {entry.watched_by}" if entry.watched_by else "redundant: the run passes"
                )
                lines.append(f"  {entry.name}  ({watcher})")
    return lines
