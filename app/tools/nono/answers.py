"""What the nono layer says of itself before any run (app/tools/layer.py's LayerAnswers): the
layer as shipped or with one element of a role's profile left out, the places its profiles make
unusable for a work directory, what it refuses in the directory's name, and its prerequisites.

nono-py is imported only when the layer itself is built: a missing package is the layer
unavailable (or doctor's finding), never an import error here.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Final

from app.core.errors import LayerUnavailable
from app.core.roles import Layer, Role
from app.core.run import HeadStart, Run
from app.core.run_tree import RunPaths, ToolIdentity
from app.core.tool_counts import ToolCounts
from app.tools.layer import ConfinementLayer, LayerAnswers, LayerFactory
from app.tools.nono.policy import COMMITTED_DIR, SYSTEM_READ
from app.tools.nono.prerequisites import NONO_PY_PIN, NonoPrerequisites
from app.tools.prerequisites import Prerequisite

# What nono-py 0.16.0 refuses in the file:// URI of its proxy's credential (the supplier key,
# which a run keeps under the work directory): these characters, and a ".." segment. Measured
# against nono-py itself (tests/integration/test_bad_settings.py probes every ASCII character).
NONO_REFUSED_CHARACTERS: Final = frozenset("\n\r$&;<>`|")


class NonoAnswers(LayerAnswers):
    name = Layer.NONO
    committed_dir = COMMITTED_DIR

    def factory(self) -> LayerFactory:
        try:
            from app.tools.nono.launcher import NonoLayer
        except ImportError as error:
            raise LayerUnavailable(
                f"nono-py cannot be imported ({error})",
                f"install it into this environment: pip install {NONO_PY_PIN}",
            ) from error
        return NonoLayer

    def head_start(self, paths: RunPaths, counts: ToolCounts) -> HeadStart:
        """The first launch process, loading while the run's services start (head_start.py)."""
        self.factory()  # nono-py importable, or the layer is unavailable
        from app.tools.nono.head_start import NonoHeadStart

        return NonoHeadStart(counts)

    def without(self, role: Role, element: str) -> LayerFactory:
        self.factory()  # nono-py importable, or the layer is unavailable
        from app.tools.nono import render
        from app.tools.nono.launcher import NonoLayer

        omit = frozenset({(role, element)})

        def nono_without(run: Run) -> ConfinementLayer:
            # In the run's own folder, removed with it; no role's profile grants it.
            committed = run.paths.top / "policies-without"
            render.write(committed, omit=omit)
            return NonoLayer(run, committed_dir=committed, omit=omit)

        return nono_without

    def work_dir_conflicts(self) -> dict[PurePosixPath, str]:
        return {
            PurePosixPath(place): "which nono's profiles let every tool process read, the run's "
            "secrets with it"
            for place in SYSTEM_READ
        }

    def work_dir_name_refused(self, base: Path) -> tuple[str, str] | None:
        refused = sorted(NONO_REFUSED_CHARACTERS & set(str(base)))
        if not refused and ".." not in base.parts:
            return None
        what = " ".join(refused) if refused else "a .. segment"
        return (
            f"holds {what}, which nono refuses in the path of the key its proxy reads",
            "pass a path without $ & ; < > ` | or .. for the nono layer",
        )

    def prerequisites(self, tool: ToolIdentity, directory: Path) -> list[Prerequisite]:
        return NonoPrerequisites(tool, directory).items()


ANSWERS = NonoAnswers()
