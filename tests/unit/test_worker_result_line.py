"""The worker writes its result line without json (protocol.to_json): the text must be exactly
what json.dumps(value, sort_keys=True) gives, since the controller parses it with json."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from app.tools.worker.protocol import to_json

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


@pytest.mark.parametrize("value", SAMPLES, ids=repr)
def test_each_kind_of_value_is_written_as_json_writes_it(value: Any) -> None:
    assert to_json(value) == json.dumps(value, sort_keys=True)


def test_random_results_are_written_as_json_writes_them() -> None:
    rng = random.Random(20261130)  # fixed: a failure names a value that reproduces
    for _ in range(2000):
        value = {"action": "probe", "result": _random_value(rng)}
        assert to_json(value) == json.dumps(value, sort_keys=True), value


@pytest.mark.parametrize("value", [b"bytes", {1, 2}, {1: "int key"}, object()], ids=repr)
def test_a_type_json_would_not_write_as_given_is_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        to_json(value)
