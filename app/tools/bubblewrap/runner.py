"""What the bubblewrap checks need from the bubblewrap layer, so that they need not import it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from app.core.results import ToolResult
from app.core.roles import Role
from app.tools.bubblewrap.orphan import Orphan
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
        omit: Iterable[str] = (),
        shipped: bool = False,
        extra_filters: Sequence[SeccompFilter] = (),
        bwrap_env: Mapping[str, str] | None = None,
        purpose: str = "",
    ) -> ToolResult: ...

    def kill_while_held(
        self, role: Role, *, wait_for_death: bool, omit: Iterable[str] = (), purpose: str = ""
    ) -> Orphan: ...

    def argument_lists(self) -> dict[Role, list[str]]: ...
