"""The order of a run's sections, stated once: each layer's own, where they stand among the
controller's, and how a layer's step makes its sections in that order.

A run follows this order (CheckLog.follow): a section begun out of it stops the run with a
CatalogueError. A layer's step (LayerChecks.process, .boundary) does not restate it: it makes
the sections it is given by looking up each one's maker by name (``make_in_order``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from app.core.catalogue import CatalogueError, Entry, Section
from app.core.checklog import CheckLog
from app.tools.catalogue import ATTACKS_SECTION, bubblewrap, controller, nono
from app.tools.layer import LayerChecks


@dataclass(frozen=True)
class LayerOrder:
    """A layer's sections in the order its two steps make them, and the checks of its draft's
    submission, which stand at the end of the run's business section."""

    # What a tool process got: made before the controller's identity section.
    process: tuple[Section, ...]
    # Each refusal beside its control: made once the inputs are staged.
    boundary: tuple[Section, ...]
    submission: tuple[Entry, ...]


BUBBLEWRAP: Final = LayerOrder(
    process=(bubblewrap.LAYER,),
    boundary=(bubblewrap.FILES, bubblewrap.PROCESS, bubblewrap.NETWORK, ATTACKS_SECTION),
    submission=bubblewrap.SUBMISSION,
)
NONO: Final = LayerOrder(
    process=(nono.PROFILES, nono.ENVIRONMENT_SECTION, nono.PROCESS),
    boundary=(
        nono.FILES,
        nono.CREDENTIALS,
        nono.NETWORK,
        ATTACKS_SECTION,
        nono.SUPPLIER_PROXY,
    ),
    submission=nono.SUBMISSION,
)


def run_sections(layer: type[LayerChecks], *, in_cluster: bool) -> tuple[Section, ...]:
    """Every section a run under ``layer`` makes, in the order the run makes them."""
    return (
        *layer.process_sections,
        controller.IDENTITY,
        controller.STORAGE,
        *((controller.CLUSTER,) if in_cluster else ()),
        controller.EGRESS,
        *layer.boundary_sections,
        controller.SUPPLIER,
        controller.business(layer.submission),
        # A cluster run's secrets are the pod's mounted Secrets: none of the run's own to remove.
        *(() if in_cluster else (controller.SECRETS,)),
        controller.MODEL,
        controller.REPORT,
        controller.CORRELATION,
        controller.EVIDENCE,
    )


def make_in_order(
    checks: CheckLog, sections: Sequence[Section], makers: Mapping[str, Callable[[], object]]
) -> None:
    """Makes ``sections`` in the order given, each by the maker ``makers`` names it by, which
    begins it (with the facts it reads) and makes its checks."""
    unmatched = {section.name for section in sections} ^ set(makers)
    if unmatched:
        raise CatalogueError(f"sections and their makers do not match: {sorted(unmatched)}")
    for section in sections:
        makers[section.name]()
        if checks.section != section.name:
            raise CatalogueError(
                f"the maker of section {section.name!r} left section {checks.section!r} begun"
            )
