"""The nono launcher's translation of a profile into grants, and of grants into nono-py's
capability calls: pure, so each field's meaning is checked here without starting anything."""

from __future__ import annotations

from typing import Any

import nono_py
import pytest

from app.core.run_tree import OUTPUT_FILES
from app.tools.nono.policy import generate_profile
from app.tools.nono.translate import (
    FileGrant,
    Grants,
    Network,
    ProfileError,
    apply,
    grants,
)
from tests.unit.test_nono_profiles import RUN_VALUES

READ, READ_WRITE = nono_py.AccessMode.READ, nono_py.AccessMode.READ_WRITE


class Recorder:
    """Records the capability calls apply makes, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def allow_path(self, path: str, mode: nono_py.AccessMode) -> None:
        self.calls.append(("allow_path", path, mode))

    def allow_file(self, path: str, mode: nono_py.AccessMode) -> None:
        self.calls.append(("allow_file", path, mode))

    def block_network(self) -> None:
        self.calls.append(("block_network",))

    def allow_tcp_connect_port(self, port: int) -> None:
        self.calls.append(("allow_tcp_connect_port", port))


@pytest.mark.parametrize("role", ["reader", "evaluator", "writer"])
def test_a_shipped_profile_grants_its_directories_for_reading_and_each_output_file_alone(
    role: Any,
) -> None:
    got = grants(role, generate_profile(role, RUN_VALUES))
    workspace = f"{RUN_VALUES.run_dir}/{role}"
    assert got.files == (
        FileGrant("/usr", READ, False),
        FileGrant(RUN_VALUES.code_dir, READ, False),
        FileGrant(f"{workspace}/in", READ, False),
        *(FileGrant(f"{workspace}/out/{name}", READ_WRITE, True) for name in OUTPUT_FILES[role]),
    )
    assert got.network is (Network.BLOCKED if role == "evaluator" else Network.FRONT)


def test_grants_become_nono_py_calls_in_order_the_front_alone_for_a_route() -> None:
    files = (FileGrant("/usr", READ, False), FileGrant("/run/out/check.txt", READ_WRITE, True))
    recorded = Recorder()
    apply(Grants(files, Network.FRONT), recorded, front_port=41234)
    assert recorded.calls == [
        ("allow_path", "/usr", READ),
        ("allow_file", "/run/out/check.txt", READ_WRITE),
        ("block_network",),
        ("allow_tcp_connect_port", 41234),
    ]
    blocked = Recorder()
    apply(Grants((), Network.BLOCKED), blocked)
    assert blocked.calls == [("block_network",)]
    opened = Recorder()
    apply(Grants((), Network.OPEN), opened)
    assert opened.calls == []


def test_a_route_without_its_front_is_refused() -> None:
    with pytest.raises(ProfileError, match="needs the role's front"):
        apply(Grants((), Network.FRONT), Recorder())


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda p: p["filesystem"].update(write=["/tmp"]), r"filesystem fields \['write'\]"),
        (lambda p: p["filesystem"]["read"].append("relative/path"), "filesystem.read holds"),
        (lambda p: p["network"].update(block=False), "network section is not understood"),
        (lambda p: p["network"].update(allow_domain=["x"]), "network section is not understood"),
    ],
    ids=["unknown-field", "relative-path", "block-false", "other-network-field"],
)
def test_a_field_the_launcher_does_not_apply_is_refused_not_ignored(change: Any, said: str) -> None:
    profile = generate_profile("evaluator", RUN_VALUES)
    change(profile)
    with pytest.raises(ProfileError, match=said):
        grants("evaluator", profile)
