"""What the bubblewrap layer says of itself before any run (app/tools/layer.py's LayerAnswers):
the layer as shipped or with one element of a role's vector left out, the places its mounts make
unusable for a work directory, and its prerequisites.

Each answer is read from the vector itself, walked once by policy.mounts, never restated.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from app.core.roles import Layer, Role
from app.core.run import Run
from app.core.run_tree import ToolIdentity
from app.tools.bubblewrap.policy import USR_SYMLINKS, BubblewrapPolicy, bwrap_argv, mounts
from app.tools.bubblewrap.preflight import BwrapPrerequisites
from app.tools.bubblewrap.render import COMMITTED_DIR
from app.tools.layer import ConfinementLayer, LayerAnswers, LayerFactory
from app.tools.prerequisites import Prerequisite

# Stands for the run's own directories, which each vector names by their real paths.
_RUN_PLACEHOLDER = PurePosixPath("/run-tree")


def shipped_vector() -> list[str]:
    """The reader's shipped vector, the run's own directories under a placeholder: what the
    questions below read (its options, the system paths it mounts) is the same in every run."""
    return bwrap_argv(
        BubblewrapPolicy(),
        role="reader",
        input_dir=_RUN_PLACEHOLDER / "in",
        output_dir=_RUN_PLACEHOLDER / "out",
        code_dir=_RUN_PLACEHOLDER / "code",
    )


class BubblewrapAnswers(LayerAnswers):
    name = Layer.BUBBLEWRAP
    committed_dir = COMMITTED_DIR

    def factory(self) -> LayerFactory:
        from app.tools.bubblewrap.launcher import BubblewrapLayer

        return BubblewrapLayer

    def without(self, role: Role, element: str) -> LayerFactory:
        from app.tools.bubblewrap.accounting import removal
        from app.tools.bubblewrap.launcher import BubblewrapLayer

        policy = BubblewrapPolicy(omit_for=frozenset((role, key) for key in removal(element)))

        def bubblewrap_without(run: Run) -> ConfinementLayer:
            return BubblewrapLayer(run, policy=policy)

        return bubblewrap_without

    def work_dir_conflicts(self) -> dict[PurePosixPath, str]:
        conflicts: dict[PurePosixPath, str] = {}
        for mount in mounts(shipped_vector()):
            # A system path bound onto itself is the host's, shown as it is; anything else
            # mounted there replaces what the controller sees.
            shown = mount.option == "--ro-bind" and mount.source == mount.destination
            conflicts.setdefault(
                PurePosixPath(mount.destination),
                "which bubblewrap shows to every tool process, the run's secrets with it"
                if shown
                else "which bubblewrap replaces in every tool process, hiding the run's files "
                "there",
            )
        for _, link in USR_SYMLINKS:
            conflicts.setdefault(
                PurePosixPath(link),
                "which bubblewrap replaces with a link into /usr in every tool process",
            )
        return conflicts

    def prerequisites(self, tool: ToolIdentity, directory: Path) -> list[Prerequisite]:
        # Only the vector's options matter here; a run's differs in its paths alone.
        return BwrapPrerequisites(shipped_vector(), tool, directory).items()


ANSWERS = BubblewrapAnswers()
