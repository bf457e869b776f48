"""The confinement layers as shipped, by name; tests build their own to break a policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from app.core.errors import LayerUnavailable
from app.core.roles import Layer
from app.core.run import Run
from app.tools.layer import ConfinementLayer

LayerFactory = Callable[[Run], ConfinementLayer]


def shipped_layer(name: Layer) -> LayerFactory:
    """The layer class for ``name``; nono-py is imported only when the nono layer is chosen."""
    match name:
        case Layer.BUBBLEWRAP:
            from app.tools.bubblewrap.launcher import BubblewrapLayer

            return BubblewrapLayer
        case Layer.NONO:
            try:
                from app.tools.nono.launcher import NonoLayer
            except ImportError as error:
                raise LayerUnavailable(
                    f"nono-py cannot be imported ({error})",
                    "install it into this environment: pip install nono-py==0.16.0",
                ) from error
            return NonoLayer
        case _:
            assert_never(name)
