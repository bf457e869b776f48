"""The confinement layers as shipped, by name, or with one element of one role's policy left
out (``--break``); tests build their own to change a policy in other ways."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import assert_never

from app.core.errors import LayerUnavailable
from app.core.roles import Layer
from app.core.run import Run
from app.tools.layer import ConfinementLayer
from app.tools.nono.prerequisites import NONO_PY_PIN
from app.tools.policy_breaks import PolicyBreak

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
                    f"install it into this environment: pip install {NONO_PY_PIN}",
                ) from error
            return NonoLayer
        case _:
            assert_never(name)


def broken_layer(policy_break: PolicyBreak) -> LayerFactory:
    """The break's layer with its element left out of its role's policy, and out of the
    committed files the run checks it against, as if the change had been merged: the run then
    stops at the check that watches the element, not at the one that compares the files."""
    role, element = policy_break.role, policy_break.element
    match policy_break.layer:
        case Layer.BUBBLEWRAP:
            from app.tools.bubblewrap.accounting import removal
            from app.tools.bubblewrap.launcher import BubblewrapLayer
            from app.tools.bubblewrap.policy import BubblewrapPolicy

            policy = BubblewrapPolicy(omit_for=frozenset((role, key) for key in removal(element)))
            return lambda run: BubblewrapLayer(run, policy=policy)
        case Layer.NONO:
            shipped_layer(Layer.NONO)  # nono-py importable, or the layer is unavailable
            from app.tools.nono import render
            from app.tools.nono.launcher import NonoLayer

            omit = frozenset({(role, element)})

            def nono_without(run: Run) -> ConfinementLayer:
                # In the run's own folder, removed with it; no role's policy grants it.
                committed = run.paths.top / "policies-without"
                render.write(committed, omit=omit)
                return NonoLayer(run, committed_dir=committed, omit=omit)

            return nono_without
        case _:
            assert_never(policy_break.layer)


# Stands for the run's own directories, which each policy names by their real paths.
_RUN_PLACEHOLDER = PurePosixPath("/run-tree")


def work_dir_conflicts(layers: Iterable[Layer]) -> dict[PurePosixPath, str]:
    """The host paths where a tool process of these layers sees something other than the
    controller does, each with a clause saying what: a work directory there would be hidden from
    the tools (a false FAIL) or shown to them (a real leak). Read from each layer's own policy."""
    from app.tools.bubblewrap.policy import (
        USR_SYMLINKS,
        BubblewrapPolicy,
        bwrap_argv,
        mount_destinations,
    )
    from app.tools.nono.policy import SYSTEM_READ

    conflicts: dict[PurePosixPath, str] = {}
    for layer in layers:
        match layer:
            case Layer.BUBBLEWRAP:
                argv = bwrap_argv(
                    BubblewrapPolicy(),
                    role="reader",
                    input_dir=_RUN_PLACEHOLDER / "in",
                    output_dir=_RUN_PLACEHOLDER / "out",
                    code_dir=_RUN_PLACEHOLDER / "code",
                )
                shown = {
                    argv[i + 1]
                    for i, option in enumerate(argv)
                    if option == "--ro-bind" and argv[i + 1] == argv[i + 2]
                }
                for place in mount_destinations(argv):
                    conflicts.setdefault(
                        PurePosixPath(place),
                        "which bubblewrap shows to every tool process, the run's secrets with it"
                        if place in shown
                        else "which bubblewrap replaces in every tool process, hiding the run's "
                        "files there",
                    )
                for _, link in USR_SYMLINKS:
                    conflicts.setdefault(
                        PurePosixPath(link),
                        "which bubblewrap replaces with a link into /usr in every tool process",
                    )
            case Layer.NONO:
                for place in SYSTEM_READ:
                    conflicts.setdefault(
                        PurePosixPath(place),
                        "which nono's profiles let every tool process read, the run's secrets "
                        "with it",
                    )
            case _:
                assert_never(layer)
    return conflicts
