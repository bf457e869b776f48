"""The shipped confinement layers, by name: the one module that names their packages.

Everything else asks a layer through what it answers (app/tools/layer.py's LayerAnswers); each
layer's own modules stay its own. A layer's library is imported only when that layer is built.
"""

from __future__ import annotations

from typing import assert_never

from app.core.roles import Layer
from app.tools.layer import LayerAnswers


def answers(layer: Layer) -> LayerAnswers:
    """What ``layer`` says of itself: how it is built, its work directory's limits, its
    prerequisites."""
    match layer:
        case Layer.BUBBLEWRAP:
            from app.tools.bubblewrap.answers import ANSWERS as BUBBLEWRAP

            return BUBBLEWRAP
        case Layer.NONO:
            from app.tools.nono.answers import ANSWERS as NONO

            return NONO
        case _:
            assert_never(layer)
