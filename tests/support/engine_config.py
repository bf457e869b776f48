"""The engine's stack-config step, ported: type checks against Pulumi.yaml, then defaults.

Before a Pulumi program runs, the CLI merges the project's declared config into the stack's
and refuses any value that does not match its declared type; only then does the program see
the values, as strings (structured values as JSON). The mocks skip that step, so the test
harness runs this port of it first: a config the engine would refuse never reaches the program.

Ported from pulumi/pulumi sdk/go/common/workspace: `validateStackConfigValue` and
`mergeConfig` in config.go, `ValidateConfigValue` and `InferFullTypeName` in project.go.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
PROJECT_FILE = REPO_ROOT / "Pulumi.yaml"


class EngineConfigError(Exception):
    """The engine would refuse this stack's config before running the program."""


@dataclass(frozen=True)
class ConfigValue:
    """A stack config value as the engine stores it: text, and whether it is a JSON object."""

    text: str
    is_object: bool = False

    @staticmethod
    def from_yaml(value: Any) -> ConfigValue:
        """A value as read from a stack file: sequences and maps are objects."""
        if isinstance(value, list | dict):
            return ConfigValue(json.dumps(value), is_object=True)
        if isinstance(value, bool):
            return ConfigValue("true" if value else "false")
        return ConfigValue(str(value))

    def content(self) -> Any:
        return json.loads(self.text) if self.is_object else self.text


def project_document(path: Path = PROJECT_FILE) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return document


def _full_key(project: str, key: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def _type_name(declared: dict[str, Any]) -> str:
    if "items" in declared:
        return f"array<{_type_name(declared['items'])}>"
    return str(declared["type"])


def _valid(type_name: str, items: dict[str, Any] | None, value: Any) -> bool:
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        if isinstance(value, bool):
            return False
        if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
            return True
        if isinstance(value, str):
            try:
                int(value)
            except ValueError:
                return False
            return True
        return False
    if type_name == "boolean":
        return value in ("true", "false") or isinstance(value, bool)
    if not isinstance(value, list) or items is None:
        return False
    return all(_valid(items["type"], items.get("items"), item) for item in value)


def validate(stack: str, values: dict[str, ConfigValue], project: dict[str, Any]) -> None:
    """Refuse, as the engine does, a value whose type differs from the declared one."""
    name = project["name"]
    for key in sorted(project.get("config") or {}):
        declared = project["config"][key]
        found = values.get(_full_key(name, key))
        if found is None or "type" not in declared:
            continue
        if not _valid(declared["type"], declared.get("items"), found.content()):
            raise EngineConfigError(
                f"Stack '{stack}' with configuration key '{key}' must be of type "
                f"'{_type_name(declared)}'"
            )


def program_config(
    stack: str, values: dict[str, ConfigValue], project: dict[str, Any]
) -> dict[str, str]:
    """What the program sees: the stack's values, declared values and defaults, as strings."""
    validate(stack, values, project)
    name = project["name"]
    merged = dict(values)
    for key, declared in (project.get("config") or {}).items():
        full = _full_key(name, key)
        if full in merged:
            continue
        if "value" in declared:
            merged[full] = ConfigValue.from_yaml(declared["value"])
        elif "default" in declared:
            merged[full] = ConfigValue.from_yaml(declared["default"])
        elif full.startswith(f"{name}:"):
            raise EngineConfigError(f"Stack '{stack}' is missing configuration value '{key}'")
    return {key: value.text for key, value in merged.items()}


def stack_file_values(path: Path) -> dict[str, ConfigValue]:
    """The values of a `Pulumi.<stack>.yaml`, as the engine stores them."""
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {
        key: ConfigValue.from_yaml(value) for key, value in (document.get("config") or {}).items()
    }


def _set_path(values: dict[str, ConfigValue], project: str, path: str, text: str) -> None:
    """`pulumi config set --path 'key[0]' value`: a list element (or map entry) of a key."""
    key, _, rest = path.partition("[")
    full = _full_key(project, key)
    if not rest:
        values[full] = ConfigValue(text)
        return
    index = int(rest.removesuffix("]"))
    current = values.get(full)
    items = list(current.content()) if current is not None and current.is_object else []
    while len(items) <= index:
        items.append(None)
    items[index] = text
    values[full] = ConfigValue(json.dumps(items), is_object=True)


def apply_config_command(values: dict[str, ConfigValue], project: str, command: str) -> None:
    """Apply one `pulumi config set|rm ...` line to a stack's values, as the CLI stores it."""
    words = shlex.split(command, comments=True)
    if words[:2] != ["pulumi", "config"] or len(words) < 4:
        raise ValueError(f"not a `pulumi config set|rm` command: {command}")
    verb, rest = words[2], words[3:]
    path = "--path" in rest
    operands = [word for word in rest if not word.startswith("-")]
    if verb == "rm":
        values.pop(_full_key(project, operands[0]), None)
        return
    if verb != "set" or len(operands) != 2:
        raise ValueError(f"expected `pulumi config set [--path] KEY VALUE`: {command}")
    key, text = operands
    if path:
        _set_path(values, project, key, text)
    else:
        values[_full_key(project, key)] = ConfigValue(text)
