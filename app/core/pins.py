"""What the analyst image builds from source, pinned in one place.

The Pulumi program passes these to the image build as its build arguments (the Dockerfile has
no defaults of its own), and the controller in the cluster compares what it finds with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final


@dataclass(frozen=True)
class SourcePin:
    """One upstream project built from an exact commit, whose release tag must point at it."""

    name: str
    repository: str
    version: str
    commit: str
    build_options: str

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    @property
    def reported_version(self) -> str:
        """What the built program's `--version` prints."""
        return f"{self.name} {self.version}"


BUBBLEWRAP: Final = SourcePin(
    name="bubblewrap",
    repository="https://github.com/containers/bubblewrap.git",
    version="0.13.1",
    commit="362936aea0d5c6e70f7af75d2d44b5a914cb4ba2",
    # Only the bwrap executable: no man page, tests, SELinux or shell completions.
    build_options=(
        "-Dman=disabled -Dtests=false -Dselinux=disabled -Dbash_completion=disabled "
        "-Dzsh_completion=disabled"
    ),
)

# Where the analyst image records what its bwrap was built from (Dockerfile.analyst writes it).
BUBBLEWRAP_BUILD_RECORD: Final = Path("/opt/bubblewrap/BUILD-INFO.json")


def bubblewrap_build_args() -> dict[str, str]:
    """The image build's arguments for bubblewrap, by the names Dockerfile.analyst declares."""
    return {
        "BWRAP_REPOSITORY": BUBBLEWRAP.repository,
        "BWRAP_VERSION": BUBBLEWRAP.version,
        "BWRAP_COMMIT": BUBBLEWRAP.commit,
        "BWRAP_MESON_OPTIONS": BUBBLEWRAP.build_options,
    }
