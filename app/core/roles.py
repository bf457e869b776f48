"""The three tool roles and the two confinement layers, named once for the whole project."""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

Role = Literal["reader", "evaluator", "writer"]
ROLES: Final[tuple[Role, ...]] = ("reader", "evaluator", "writer")


class Layer(StrEnum):
    """A confinement layer the controller can run its tool processes under."""

    BUBBLEWRAP = "bubblewrap"
    NONO = "nono"
