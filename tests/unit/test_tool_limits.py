"""The tool limits' one source (policies/tool-limits.json): read strictly, every bad field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.errors import BadInput
from app.core.tool_limits import LIMITS_FILE, OPTIONS, read_limits, tool_limits
from app.tools.loader import LIMIT_OPTIONS


def _written(tmp_path: Path, change: dict[str, object]) -> Path:
    document = json.loads(LIMITS_FILE.read_text(encoding="utf-8"))
    for name, fields in change.items():
        if fields is None:
            del document["limits"][name]
        else:
            document["limits"][name] = {**document["limits"][name], **fields}  # type: ignore[dict-item]
    path = tmp_path / "tool-limits.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_committed_file_names_each_limit_the_loader_sets() -> None:
    limits = tool_limits()
    assert [limit.option for limit in limits.all()] == list(LIMIT_OPTIONS)
    assert [limit.name for limit in limits.all()] == list(OPTIONS)
    assert limits.processes.value == 1
    assert limits.file_bytes.value == 1024 * 1024


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"cpu_seconds": {"value": 0}}, "limits.cpu_seconds.value must be a positive integer"),
        ({"open_files": {"value": "64"}}, "limits.open_files.value must be a positive integer"),
        ({"open_files": {"value": True}}, "limits.open_files.value must be a positive integer"),
        ({"processes": {"rlimit": "RLIMIT_AS"}}, "limits.processes.rlimit must be RLIMIT_NPROC"),
        ({"file_bytes": {"need": ""}}, "limits.file_bytes.need and .headroom must be non-empty"),
        ({"file_bytes": {"extra": 1}}, "limits.file_bytes has unknown fields ['extra']"),
        ({"address_space_bytes": None}, "limits must name exactly"),
    ],
)
def test_a_bad_field_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, change: dict[str, object], named: str
) -> None:
    path = _written(tmp_path, change)
    with pytest.raises(BadInput) as raised:
        read_limits(path)
    assert str(raised.value).startswith(f"{path}: {named}")
    assert raised.value.exit_code == 2


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tool-limits.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(BadInput, match="cannot be read as JSON"):
        read_limits(path)
