"""The resource limits of every tool process, from their one source, policies/tool-limits.json.

Both layers hand the same values to the loader (app/tools/loader.py), each as one element of
their policy that a check watches; the benchmark sets what it measures of the tools' own use
beside them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from app.core.errors import BadInput
from app.core.repo import POLICIES_DIR

LIMITS_FILE: Final = POLICIES_DIR / "tool-limits.json"

# Each limit's name in the file, the loader option that sets it, and the resource it names.
OPTIONS: Final = {
    "address_space_bytes": ("--max-address-space", "RLIMIT_AS"),
    "cpu_seconds": ("--max-cpu-seconds", "RLIMIT_CPU"),
    "file_bytes": ("--max-file-bytes", "RLIMIT_FSIZE"),
    "open_files": ("--max-open-files", "RLIMIT_NOFILE"),
    "processes": ("--max-processes", "RLIMIT_NPROC"),
}


@dataclass(frozen=True)
class ToolLimit:
    name: str  # as the file names it
    option: str  # the loader's option
    rlimit: str  # the kernel's name for it
    value: int
    need: str
    headroom: str

    @property
    def key(self) -> str:
        """Its name in a nono profile's process section: max_<name>."""
        return f"max_{self.name}"


@dataclass(frozen=True)
class ToolLimits:
    address_space_bytes: ToolLimit
    cpu_seconds: ToolLimit
    file_bytes: ToolLimit
    open_files: ToolLimit
    processes: ToolLimit

    def all(self) -> tuple[ToolLimit, ...]:
        return (
            self.address_space_bytes,
            self.cpu_seconds,
            self.file_bytes,
            self.open_files,
            self.processes,
        )


def _field(path: Path, name: str, entry: dict[str, Any], key: str) -> Any:
    if key not in entry:
        raise BadInput(f"{path}: limits.{name}.{key} is missing")
    return entry[key]


def _limit(path: Path, name: str, entry: Any) -> ToolLimit:
    if not isinstance(entry, dict):
        raise BadInput(f"{path}: limits.{name} must be an object")
    unknown = sorted(set(entry) - {"value", "rlimit", "need", "headroom"})
    if unknown:
        raise BadInput(f"{path}: limits.{name} has unknown fields {unknown}")
    option, rlimit = OPTIONS[name]
    value = _field(path, name, entry, "value")
    if type(value) is not int or value <= 0:
        raise BadInput(f"{path}: limits.{name}.value must be a positive integer, not {value!r}")
    if _field(path, name, entry, "rlimit") != rlimit:
        raise BadInput(f"{path}: limits.{name}.rlimit must be {rlimit}")
    texts = [_field(path, name, entry, key) for key in ("need", "headroom")]
    if not all(isinstance(text, str) and text for text in texts):
        raise BadInput(f"{path}: limits.{name}.need and .headroom must be non-empty text")
    return ToolLimit(name, option, rlimit, value, texts[0], texts[1])


def read_limits(path: Path = LIMITS_FILE) -> ToolLimits:
    """The limits in ``path``, every field checked; BadInput names the file and field."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BadInput(f"{path}: cannot be read as JSON: {error}") from error
    limits = document.get("limits") if isinstance(document, dict) else None
    if not isinstance(limits, dict):
        raise BadInput(f"{path}: limits must be an object")
    if sorted(limits) != sorted(OPTIONS):
        raise BadInput(f"{path}: limits must name exactly {sorted(OPTIONS)}")
    return ToolLimits(**{name: _limit(path, name, limits[name]) for name in OPTIONS})


@cache
def tool_limits() -> ToolLimits:
    """The committed limits, read once."""
    return read_limits()
