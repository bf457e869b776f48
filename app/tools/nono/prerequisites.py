"""What nono needs on this machine or in this pod, as one ordered list of prerequisites.

Shared by the layer's preflight (the first missing piece stops a run) and `doctor` (every piece
shown); app/tools/prerequisites.py runs them. nono-py is imported inside the first check, so a
missing package is a finding, not an import error.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Final

from app.core.run_tree import ToolIdentity
from app.tools.prerequisites import (
    Finding,
    Prerequisite,
    holds,
    interpreter,
    missing,
    require,
    work_directory,
)

NONO_PY: Final = "nono_py"
NONO_PY_PIN: Final = "nono-py==0.16.0"
IMPORTED = "nono-py imports"
SUPPORTED = "nono can sandbox here: the kernel has Landlock"


class NonoPrerequisites:
    """The nono layer's prerequisites for one tool identity and directory."""

    def __init__(self, tool: ToolIdentity, directory: Path) -> None:
        self.tool = tool
        self.directory = directory
        self._module: ModuleType | None = None

    def items(self) -> list[Prerequisite]:
        return [
            Prerequisite(IMPORTED, self._imports),
            Prerequisite(SUPPORTED, self._supported, after=(IMPORTED,)),
            Prerequisite(
                "Landlock filters TCP (ABI v4 or later), which proxy-only networking needs",
                self._network,
                after=(IMPORTED, SUPPORTED),
            ),
            interpreter(),
            work_directory(self.directory, self.tool),
        ]

    def require(self) -> None:
        """Every prerequisite holds, or LayerUnavailable names the first that does not."""
        require(self.items())

    def _imports(self) -> Finding:
        try:
            self._module = importlib.import_module(NONO_PY)
        except ImportError as error:
            return missing(
                f"nono-py cannot be imported ({error})",
                f"install it into this environment: pip install {NONO_PY_PIN}",
            )
        return holds(f"{NONO_PY} from {self._module.__file__}")

    def _supported(self) -> Finding:
        assert self._module is not None
        info = self._module.support_info()
        if not info.is_supported:
            return missing(
                f"nono cannot sandbox here: {info.details}",
                "run on a Linux kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and "
                "'landlock' in the lsm= boot parameter)",
            )
        return holds(str(info.details))

    def _network(self) -> Finding:
        assert self._module is not None
        abi = self._module.detect_abi()
        if not abi.has_network:
            return missing(
                f"Landlock {abi.version} cannot filter TCP, which proxy-only networking needs",
                "run on Linux 6.7 or newer (Landlock ABI V4+)",
            )
        return holds(f"Landlock {abi.version}")
