"""The worker writes its result line without json (protocol.to_json): the text, and any error,
must be exactly what json.dumps(value, sort_keys=True) gives, since the controller parses the
line with json and a tool's output is compared to the controller's own."""

from __future__ import annotations

import json
import random
import re
import struct
from collections import OrderedDict
from typing import Any

import pytest

from app.tools.worker.protocol import emit, ok, to_json

# Every kind of character a result may carry: JSON's escapes, other control characters,
# non-ASCII in and beyond the BMP, and lone surrogates (a file name read with surrogateescape).
AWKWARD_TEXTS = [
    "",
    'quote " and backslash \\',
    "".join(chr(code) for code in range(0x20)),
    "\x7f délété — ünïcödé ✓",
    "astral 𝄞 🙂 \U0010ffff \U00010000",
    "lone \udcff and \ud800 surrogates, a pair written apart \ud83d\ude42",
    "/etc/shadow",
    "~ } | { ` _ ^ ] [ @ ? > = < ; : / . - , + * ) ( ' & % $ # ! 0 9 A Z a z",
]

FLOATS = [
    0.0,
    -0.0,
    1.5,
    0.1,
    1e16,
    1e22,
    1e-7,
    5e-324,
    1e300,
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    -float("nan"),
]


class Number(int):
    def __repr__(self) -> str:
        return "not the number"


class Text(str):
    def __str__(self) -> str:
        return "not the text"

    def __iter__(self) -> Any:
        return iter("not the text")

    def isascii(self) -> bool:
        return False


class Real(float):
    def __repr__(self) -> str:
        return "not the real"


class Items(list[object]):
    pass


class Fields(dict[object, object]):
    pass


SAMPLES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**70,
    -(2**200),
    *FLOATS,
    *AWKWARD_TEXTS,
    [],
    {},
    (),
    (1, "two", None),
    [[], [[]], {}, [{}]],
    {"b": 1, "a": [True, {"z": None, "y": 2.25}], "": ""},
    {"ok": False, "errno": "EACCES", "path": "/input/x", "owner": [1000, 1000]},
    # Keys json writes as strings, each sorted as what it is before it is written.
    {10: "ten", 9: "nine", -1: "minus one"},
    {2.5: "a", float("inf"): "b", float("-inf"): "c", -0.0: "d"},
    {float("nan"): 1},
    {True: 1},
    {False: 0},
    {None: None},
    {"\udcff": 1, "é": 2, "\U0001f642": 3, "\x00": 4},
    # Subclasses are written as the value they hold, whatever they override.
    Number(7),
    {Number(3): Number(4)},
    Text("held"),
    {Text("key"): Text("value")},
    Real(2.5),
    Real("nan"),
    {Real(1.5): 0},
    Items([1, Items([2])]),
    Fields({"b": Fields({}), "a": 1}),
    OrderedDict([("z", 1), ("a", 2)]),
]


def _circular_list() -> list[object]:
    items: list[object] = [1]
    items.append([items])
    return items


def _circular_dict() -> dict[str, object]:
    fields: dict[str, object] = {}
    fields["self"] = {"again": fields}
    return fields


# What json refuses: each must be refused with the same error.
REFUSED: list[Any] = [
    b"bytes",
    bytearray(b"x"),
    {1, 2},
    frozenset(),
    object(),
    1j,
    [1, 2, b"late in a list"],
    {"a": 1, "b": {"c": {1}}},
    {(1, 2): "a tuple key"},
    {b"k": "a bytes key"},
    {"a": 1, 2: "keys of two kinds, unsortable"},
    {None: 1, True: 2},
    10**5000,  # more digits than int's text conversion allows
    _circular_list(),
    _circular_dict(),
]


def _outcome(write: Any, value: Any) -> tuple[str, str]:
    """("text", what was written) or (the error's type, its message)."""
    try:
        return "text", write(value)
    except (TypeError, ValueError) as error:
        return type(error).__name__, str(error)


def _json_dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _assert_same(value: Any) -> None:
    assert _outcome(to_json, value) == _outcome(_json_dumps, value), repr(value)


@pytest.mark.parametrize("value", SAMPLES, ids=repr)
def test_each_kind_of_value_is_written_as_json_writes_it(value: Any) -> None:
    assert to_json(value) == json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("value", REFUSED, ids=lambda value: type(value).__name__)
def test_what_json_refuses_is_refused_with_its_error(value: Any) -> None:
    outcome = _outcome(to_json, value)
    assert outcome[0] != "text"
    assert outcome == _outcome(_json_dumps, value)


def test_every_code_point_is_written_as_json_writes_it() -> None:
    for start in range(0, 0x110000, 0x1000):
        text = "".join(chr(code) for code in range(start, start + 0x1000))
        assert to_json(text) == json.dumps(text), f"U+{start:04X}..U+{start + 0xFFF:04X}"


def _random_text(rng: random.Random) -> str:
    """Mostly ASCII (controls, quotes and backslashes included), with code points from
    anywhere: the rest of the BMP, surrogates alone, and beyond the BMP."""
    pools = [
        lambda: rng.randrange(0x80),
        lambda: rng.choice([0x22, 0x5C, 0x7F, 0x08, 0x0C, 0x0A, 0x0D, 0x09]),
        lambda: rng.randrange(0x80, 0x10000),
        lambda: rng.randrange(0xD800, 0xE000),
        lambda: rng.randrange(0x10000, 0x110000),
    ]
    return "".join(chr(rng.choice(pools)()) for _ in range(rng.randrange(13)))


def _random_float(rng: random.Random) -> float:
    kind = rng.randrange(3)
    if kind == 0:
        return rng.uniform(-1e6, 1e6)
    if kind == 1:
        return rng.choice(FLOATS)
    # Any 64 bits: subnormals, huge exponents, NaNs with payloads, the infinities.
    value: float = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
    return value


def _random_key(rng: random.Random, kind: int) -> Any:
    if kind == 0:
        return rng.randint(-(2**70), 2**70)
    if kind == 1:
        return _random_float(rng)
    if kind == 2:
        return rng.choice([None, True, False])
    return _random_text(rng)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(2**64), 2**64)
    if kind == 2:
        return _random_float(rng)
    if kind in (3, 4):
        return _random_text(rng)
    if kind == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 6:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    if kind == 7:
        # Keys of one kind, mostly strings; now and then of two (json refuses to sort those).
        kinds = [rng.choice([0, 1, 2, 3, 3, 3])]
        if rng.random() < 0.1:
            kinds.append(rng.randrange(4))
        return {
            _random_key(rng, rng.choice(kinds)): _random_value(rng, depth + 1)
            for _ in range(rng.randrange(5))
        }
    return {_random_text(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


def test_random_values_are_written_as_json_writes_them() -> None:
    rng = random.Random(20261130)  # fixed: a failure names a value that reproduces
    for _ in range(5000):
        _assert_same({"action": "probe", "result": _random_value(rng)})


def test_the_result_line_is_json_dumps_own_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The whole line emit writes, for random results."""
    rng = random.Random(20261201)
    written = 0
    for _ in range(500):
        result = ok(value=_random_value(rng), text=_random_text(rng))
        refusal, message = _outcome(_json_dumps, result)
        if refusal != "text":
            with pytest.raises((TypeError, ValueError), match="^" + re.escape(message) + "$"):
                emit("probe", result)
            assert capsys.readouterr().out == ""
            continue
        emit("probe", result)
        written += 1
        line = capsys.readouterr().out
        payload = json.loads(line.removeprefix("ANALYST_RESULT "))
        expected = {"action": "probe", **result, "peak_rss_kib": payload["peak_rss_kib"]}
        assert line == "ANALYST_RESULT " + json.dumps(expected, sort_keys=True) + "\n"
    assert written > 400  # the refusals are the few with keys of two kinds
