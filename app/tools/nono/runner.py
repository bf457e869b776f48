"""What the nono checks need from the nono layer, so that they need not import it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from app.core.results import ToolResult
from app.core.roles import Role
from app.tools.layer import ToolRunner
from app.tools.nono.digests import CredentialDigests
from app.tools.nono.held import HeldReading
from app.tools.nono.policy import Omissions, ProfileSource, ProfileValues
from app.tools.nono.proxy import RoleProxies


class NonoRunner(ToolRunner, Protocol):
    """A nono layer as its checks see it (implemented by NonoLayer)."""

    @property
    def proxies(self) -> RoleProxies: ...

    @property
    def values(self) -> ProfileValues: ...

    @property
    def digests(self) -> CredentialDigests: ...

    @property
    def profiles(self) -> ProfileSource: ...

    @property
    def omit(self) -> Omissions: ...

    @property
    def committed_dir(self) -> Path: ...

    def profile_path(self, role: Role) -> Path: ...

    def live_profile(self, role: Role) -> dict[str, Any]: ...

    def run_confined(
        self,
        role: Role,
        action: str,
        args: Sequence[str],
        *,
        baseline: bool = True,
        enforcement_mode: str | None = None,
        shipped: bool = False,
        purpose: str = "",
    ) -> ToolResult: ...

    def read_while_held(self, role: Role, *, baseline: bool = True) -> HeldReading: ...

    def next_request_id(self, role: Role) -> str: ...

    def prefetch_credential_digests(self) -> None: ...
