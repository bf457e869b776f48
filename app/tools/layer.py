"""What the controller needs from a confinement layer, whichever one it is.

A layer is built from the run (``ConfinementLayer(run)``), proves in ``preflight`` that it can
start a real tool process here, runs one worker action for one role under that role's policy,
and hands the run its own checks. The run calls those checks as named steps:

- ``process``: what a tool process actually got (identity, privileges, its policy as applied);
- ``boundary``: files, processes and network, each refusal beside its control;
- ``submit_draft``: the writer's draft reaches the supplier the way this layer allows;
- ``refuses_upstream``: whether this layer's roles make supplier calls, one of which must be
  shown refused before it reaches the supplier (the correlation check then requires it);
- ``submission``: the checks ``submit_draft`` makes, which stand in the run's business section.

``process_sections`` and ``boundary_sections`` are the sections the two steps make, in the
catalogue's order (app/tools/catalogue/order.py).

What a layer says of itself before any run (``LayerAnswers``): the elements of its roles'
policies, how to build it with or without one of them (``--break``), the places a work
directory must not be, what it refuses in the directory's name, and its prerequisites here.
The controller asks these through the registry of shipped layers (app/tools/registry.py),
never a layer's own modules.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Literal, Protocol

from app.core.catalogue import Entry, Section
from app.core.draft import ExpectedDraft
from app.core.results import Errno, ToolResult
from app.core.roles import ROLES, Layer, Role
from app.core.run import HeadStart, Run
from app.core.run_tree import RunPaths, ToolIdentity
from app.core.tool_counts import ToolCounts
from app.tools.attacks import AttackAnswers
from app.tools.prerequisites import Prerequisite
from app.tools.unconfined import run_unconfined

Direction = Literal["in", "out"]
# How a role's tool process may use a place its policy shows it.
GrantMode = Literal["read-only", "read-write", "own tmpfs", "own /proc"]


@dataclass(frozen=True)
class Grant:
    """One place a role's policy as applied shows its tool process, for the boundary picture:
    the path the role names, how it may use it, and the host path a bind shows there."""

    target: str
    mode: GrantMode
    source: str | None = None

    def as_json(self) -> dict[str, str]:
        shown = {"target": self.target, "mode": self.mode}
        return shown if self.source is None else {**shown, "source": self.source}


def grants_json(grants: Mapping[Role, tuple[Grant, ...]]) -> dict[str, list[dict[str, str]]]:
    """Each role's grants as evidence.json holds them (``policy.grants``)."""
    return {role: [grant.as_json() for grant in found] for role, found in grants.items()}


@dataclass(frozen=True)
class Refusals:
    """The exact errno each layer answers with where the layer-neutral checks expect a no."""

    # A file outside the role's view (another role's, the key, the credentials).
    hidden_file: Errno
    # Why that errno, in the words of the check line.
    hidden_file_reason: str
    # A write to the role's own input, a file its uid could otherwise write.
    input_write: Errno
    input_write_reason: str
    # A new file in the role's own output directory, which its uid owns.
    output_create: Errno
    output_create_reason: str


class ToolRunner(Protocol):
    """What the layer-neutral checks ask of a layer: its tools, its control, its errnos."""

    @property
    def refusals(self) -> Refusals: ...

    def run_tool(self, role: Role, action: str, *args: str) -> ToolResult: ...

    def run_unconfined(self, action: str, *args: str) -> ToolResult: ...

    def role_path(self, role: Role, direction: Direction, name: str) -> str: ...

    def helper_processes(self) -> dict[str, int]: ...


@dataclass(frozen=True)
class LayerReadings:
    """What a layer's checks read from its tool processes, handed to evidence.json."""

    process: Mapping[str, Any]  # what each process reported about itself, by reading
    attacks: AttackAnswers


class LayerChecks(ABC):
    """A layer's own part of the run, called by the orchestrator as named steps."""

    refuses_upstream: ClassVar[bool] = False
    submission: ClassVar[tuple[Entry, ...]]
    process_sections: ClassVar[tuple[Section, ...]]
    boundary_sections: ClassVar[tuple[Section, ...]]

    @abstractmethod
    def process(self) -> None:
        """What a tool process got: its identity, privileges and the policy as applied."""

    @abstractmethod
    def boundary(self) -> None:
        """Files, processes and network: each refusal beside its control."""

    @abstractmethod
    def submit_draft(self, draft_path: Path, expected: ExpectedDraft) -> None:
        """Has the writer's draft submitted to the supplier (201) the way this layer allows,
        once, and only if it is the ``expected`` draft."""

    @abstractmethod
    def readings(self) -> LayerReadings:
        """What the checks above read, once they have all run."""


class ConfinementLayer(ABC):
    """One way of confining the three roles. Implementations: bubblewrap, nono."""

    name: ClassVar[Layer]
    refusals: ClassVar[Refusals]

    def __init__(self, run: Run) -> None:
        self.run = run
        # The largest peak memory a tool process of this run reported (KiB), for evidence.json
        # and the benchmark; None until one reports it (nono's roles cannot read their /proc).
        self.tool_peak_kib: int | None = None
        # Tool calls may end at once (CheckLog.at_once): each largest-so-far is kept whole.
        self._peak_lock = threading.Lock()

    def _seen(self, result: ToolResult) -> ToolResult:
        """Notes what a finished tool process reported about itself; returns the result."""
        if result.peak_rss_kib is not None:
            with self._peak_lock:
                self.tool_peak_kib = max(self.tool_peak_kib or 0, result.peak_rss_kib)
        return result

    @abstractmethod
    def preflight(self) -> None:
        """Starts one real tool process; raises LayerUnavailable naming the missing piece."""

    @abstractmethod
    def run_tool(self, role: Role, action: str, *args: str) -> ToolResult:
        """Runs one worker action for one role under this layer's policy for that role."""

    def run_unconfined(self, action: str, *args: str) -> ToolResult:
        """The control: the same action at the tool's uid with no layer at all, in the host's
        view (where the real secrets are root's alone); a secret's control is made in the decoy
        view instead (app/tools/secret_controls.py)."""
        return run_unconfined(
            self.run.paths, self.run.tool, action, args, counts=self.run.tool_counts, decoys=None
        )

    @abstractmethod
    def role_dir(self, role: Role, direction: Direction) -> str:
        """The role's input or output directory as the role itself sees it."""

    @abstractmethod
    def roles_reaching_output(self, role: Role) -> tuple[Role, ...]:
        """The roles whose processes, but for the baseline filter, could change the metadata
        of ``role``'s output files: what a changed mode or attribute is blamed on."""

    def helper_processes(self) -> dict[str, int]:
        """The layer's own processes apart from the controller, by name: what a tool at the
        controller's uid could otherwise reach besides the controller. None by default."""
        return {}

    def role_path(self, role: Role, direction: Direction, name: str) -> str:
        """A file in the role's input or output directory, as the role names it."""
        base = self.role_dir(role, direction)
        return f"{base}/{name}" if name else base

    @abstractmethod
    def grants(self) -> dict[Role, tuple[Grant, ...]]:
        """What each role's policy as this run applied it shows its tool process, read by the
        layer's own walker of that policy: evidence.json's ``policy.grants``."""

    @abstractmethod
    def evidence(self) -> dict[str, Any]:
        """The policy this run actually applied (argument lists, profiles, ``grants``), for
        evidence.json."""

    @abstractmethod
    def policy_in_force(self) -> dict[Role, Any]:
        """Each role's policy as this run applied it (its argument list, its profile)."""

    @abstractmethod
    def committed_policy(self) -> dict[Role, Any]:
        """Each role's committed policy file, read from policies/, with this run's values put
        where it has placeholders: equal to ``policy_in_force`` when the run applied it."""

    @abstractmethod
    def checks(self) -> LayerChecks:
        """This layer's own checks, bound to the run this layer was built for."""

    def secrets_to_scan(self, supplier_key: bytes) -> dict[str, bytes]:
        """Further values (named) that no file of the run may hold: credentials the layer made."""
        return {}

    def close(self) -> None:  # noqa: B027 (an optional hook)
        """Releases what the layer started (proxies). Idempotent."""


LayerFactory = Callable[[Run], ConfinementLayer]


class LayerAnswers(ABC):
    """What a shipped layer says of itself before any run: the controller's and doctor's only
    way to a layer's own knowledge."""

    name: ClassVar[Layer]
    # Where its committed policy files are (policies/<layer>/), elements.json among them.
    committed_dir: ClassVar[Path]

    def policy_elements(self) -> list[tuple[Role, str, str | None]]:
        """Each element of each role's committed policy, in elements.json's order, with the id
        of the check that fails without it (None for a redundant one): what --break names."""
        accounting = json.loads((self.committed_dir / "elements.json").read_text("utf-8"))
        found: list[tuple[Role, str, str | None]] = []
        for role in ROLES:
            for entry in accounting["roles"][role]:
                watched = entry.get("fails_without_it")
                found.append(
                    (role, str(entry["element"]), None if watched is None else str(watched))
                )
        return found

    @abstractmethod
    def factory(self) -> LayerFactory:
        """The layer as shipped; LayerUnavailable when its library cannot be imported here."""

    def head_start(self, paths: RunPaths, counts: ToolCounts) -> HeadStart | None:
        """What the layer starts for a run as soon as its tree is claimed (``paths``), before
        the run's services, to be taken over by the layer the run then builds (the run's
        ``head_start``); ``counts`` are the run's. None by default: nothing."""
        return None

    @abstractmethod
    def without(self, role: Role, element: str) -> LayerFactory:
        """The layer with ``element`` (a name of its committed elements.json) left out of
        ``role``'s policy, and out of the committed files the run checks it against, as if the
        change had been merged: the run then stops at the check that watches the element."""

    @abstractmethod
    def work_dir_conflicts(self) -> dict[PurePosixPath, str]:
        """The host paths where a tool process sees something other than the controller does,
        each with a clause saying what: a work directory there would be hidden from the tools
        (a false FAIL) or shown to them (a real leak)."""

    def work_dir_name_refused(self, base: Path) -> tuple[str, str] | None:
        """What in ``base``'s name this layer cannot carry, and the remedy; None when nothing."""
        return None

    @abstractmethod
    def prerequisites(self, tool: ToolIdentity, directory: Path) -> list[Prerequisite]:
        """The list the layer's preflight stops on, for a run at ``tool`` under ``directory``."""
