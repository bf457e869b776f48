"""The worker's result line (protocol.to_json, held to json.dumps's text in
test_worker_json.py) reads back through the controller's own JSON parser as the very values
the action returned, whatever characters they hold, and a text field through
ToolResult.from_line as the very text."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from app.core.results import ToolResult
from app.tools.worker.protocol import RESULT_PREFIX, emit, ok

# Every kind of character a result may carry: JSON's escapes, other control characters,
# non-ASCII in and beyond the BMP, and lone surrogates (a file name read with surrogateescape).
AWKWARD_TEXTS = [
    "",
    'quote " and backslash \\',
    "".join(chr(code) for code in range(0x20)),
    "\x7f délété — ünïcödé ✓",
    "astral 𝄞 🙂",
    "lone \udcff and \ud800 surrogates",
    "/etc/shadow",
]

SAMPLES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**70,
    1.5,
    -0.0,
    1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
    *AWKWARD_TEXTS,
    [],
    {},
    (1, "two", None),
    {"b": 1, "a": [True, {"z": None, "y": 2.25}], "": ""},
    {"ok": False, "errno": "EACCES", "path": "/input/x", "owner": [1000, 1000]},
]


def _random_text(rng: random.Random) -> str:
    """Mostly ASCII (controls and quotes included), with code points from anywhere."""
    codes = [rng.choice([rng.randrange(0x80), rng.randrange(0x110000)]) for _ in range(12)]
    return "".join(chr(code) for code in codes[: rng.randrange(13)])


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(2**64), 2**64)
    if kind == 2:
        return rng.uniform(-1e6, 1e6)
    if kind in (3, 4):
        return _random_text(rng)
    if kind == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 6:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    return {_random_text(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


def _read_back(capsys: pytest.CaptureFixture[str], value: Any) -> Any:
    """What the controller's JSON parser reads of the line the worker writes for a result
    holding value (from_line reads the line with it, then holds it to its action's shape)."""
    emit("env-names", ok(names=[], value=value))
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(RESULT_PREFIX)
    return json.loads(line[len(RESULT_PREFIX) :])["value"]


@pytest.mark.parametrize("text", AWKWARD_TEXTS, ids=repr)
def test_a_text_field_reads_back_through_the_controllers_parser_as_it_was(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    emit("env-names", ok(names=[text]))
    (line,) = capsys.readouterr().out.splitlines()
    parsed = ToolResult.from_line(
        line[len(RESULT_PREFIX) :], who="the reader's tool process", action="env-names"
    )
    assert parsed.action == "env-names" and parsed.ok and parsed.data == {"names": [text]}


def _same(parsed: Any, value: Any) -> bool:
    # JSON has no tuple and NaN is unequal to itself: the texts are compared instead.
    return json.dumps(parsed, sort_keys=True) == json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("value", SAMPLES, ids=repr)
def test_each_kind_of_value_reads_back_as_it_was(
    capsys: pytest.CaptureFixture[str], value: Any
) -> None:
    assert _same(_read_back(capsys, value), value)


def test_random_results_read_back_as_they_were(capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(20261130)  # fixed: a failure names a value that reproduces
    for _ in range(2000):
        value = _random_value(rng)
        assert _same(_read_back(capsys, value), value), value


@pytest.mark.parametrize("value", [b"bytes", {1, 2}, object()], ids=["bytes", "set", "object"])
def test_a_type_json_cannot_write_is_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        emit("probe", ok(value=value))
