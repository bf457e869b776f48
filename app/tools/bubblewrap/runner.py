"""What the bubblewrap checks need from the bubblewrap layer, so that they need not import it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from app.core.results import ToolResult
from app.core.roles import Role
from app.tools.bubblewrap.policy import BubblewrapPolicy
from app.tools.bubblewrap.preflight import BwrapReadings
from app.tools.layer import ToolRunner
from app.tools.seccomp import SeccompFilter


class BwrapRunner(ToolRunner, Protocol):
    """A bubblewrap layer as its checks see it (implemented by BubblewrapLayer)."""

    @property
    def readings(self) -> BwrapReadings: ...

    def role_argv(self, role: Role, policy: BubblewrapPolicy | None = None) -> list[str]: ...

    def run_confined(
        self,
        role: Role,
        action: str,
        args: Sequence[str],
        *,
        disable_userns: bool | None = None,
        baseline: bool | None = None,
        extra_filters: Sequence[SeccompFilter] = (),
        purpose: str = "",
    ) -> ToolResult: ...

    def argument_lists(self) -> dict[Role, list[str]]: ...
