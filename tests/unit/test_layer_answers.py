"""Each layer answers its own questions (app/tools/layer.py's LayerAnswers), through the one
registry that names the layer packages: the controller and the report read no layer's modules,
the work directory's limits come from each layer's own policy, and the boundary picture draws
what the layer's own walker read from its policy (evidence.json's ``policy.grants``)."""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

import pytest

from app.controller.workdir import work_dir_conflicts
from app.core.repo import REPO_ROOT
from app.core.roles import ROLES, Layer
from app.report.boundary_views import RUN_TREE, role_views
from app.tools.bubblewrap.answers import shipped_vector
from app.tools.bubblewrap.launcher import MOUNT_MODES
from app.tools.bubblewrap.policy import USR_SYMLINKS, Mount, mounts
from app.tools.nono.answers import NONO_REFUSED_CHARACTERS
from app.tools.nono.policy import SYSTEM_READ
from app.tools.registry import answers

LAYER_PACKAGES = ("app.tools.bubblewrap", "app.tools.nono")
REGISTRY = "app.tools.registry"


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_only_the_registry_names_the_layer_packages() -> None:
    """Every import counts, those inside functions too: outside the layers' own packages, one
    module of the app names them."""
    naming = []
    for path in sorted((REPO_ROOT / "app").rglob("*.py")):
        module = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        if module.startswith(LAYER_PACKAGES):
            continue
        if any(name.startswith(LAYER_PACKAGES) for name in _imported(path)):
            naming.append(module)
    assert naming == [REGISTRY]


@pytest.mark.parametrize("layer", list(Layer))
def test_the_registry_gives_each_layer_its_own_answers(layer: Layer) -> None:
    assert answers(layer).name is layer


def test_bubblewrap_names_every_place_its_vector_mounts_or_links() -> None:
    conflicts = answers(Layer.BUBBLEWRAP).work_dir_conflicts()
    destinations = [m.destination for m in mounts(shipped_vector())]
    links = [link for _, link in USR_SYMLINKS]
    assert list(conflicts) == [PurePosixPath(place) for place in [*destinations, *links]]
    # /usr is the host's own, shown as it is: a work directory there is a leak, not a hiding.
    assert "shows to every tool process" in conflicts[PurePosixPath("/usr")]
    assert "replaces in every tool process" in conflicts[PurePosixPath("/input")]
    assert "a link into /usr" in conflicts[PurePosixPath("/lib")]


def test_nono_names_what_its_profiles_let_every_role_read() -> None:
    conflicts = answers(Layer.NONO).work_dir_conflicts()
    assert list(conflicts) == [PurePosixPath(place) for place in SYSTEM_READ]


def test_the_first_layer_to_name_a_place_gives_its_clause() -> None:
    both = work_dir_conflicts([Layer.NONO, Layer.BUBBLEWRAP])
    assert both[PurePosixPath("/usr")].startswith("which nono's profiles")
    assert set(both) == set(work_dir_conflicts([Layer.BUBBLEWRAP])) | set(
        work_dir_conflicts([Layer.NONO])
    )


@pytest.mark.parametrize("character", sorted(NONO_REFUSED_CHARACTERS))
def test_nono_refuses_each_character_its_proxy_cannot_carry(character: str) -> None:
    refused = answers(Layer.NONO).work_dir_name_refused(Path(f"/var/tmp/a{character}b"))
    assert refused is not None
    assert refused[0].startswith(f"holds {character}, which nono refuses")
    # bubblewrap carries any name a run's JSON and check lines can.
    assert answers(Layer.BUBBLEWRAP).work_dir_name_refused(Path(f"/var/tmp/a{character}b")) is None


def test_nono_refuses_a_dotdot_segment_and_takes_a_plain_path() -> None:
    nono = answers(Layer.NONO)
    assert nono.work_dir_name_refused(Path("/var/tmp/a/../b")) == (
        "holds a .. segment, which nono refuses in the path of the key its proxy reads",
        "pass a path without $ & ; < > ` | or .. for the nono layer",
    )
    assert nono.work_dir_name_refused(Path("/var/tmp/a..b")) is None


def test_the_one_walk_reads_each_mount_with_its_source() -> None:
    vector = shipped_vector()
    found = mounts(vector)
    assert found[0] == Mount("--ro-bind", "/usr", "/usr")
    assert Mount("--proc", None, "/proc") in found
    assert Mount("--tmpfs", None, "/tmp") in found
    assert Mount("--bind", "/run-tree/out/check.txt", "/output/check.txt") in found
    # Every mount option the vector uses has a mode in the picture.
    assert {m.option for m in found} == set(MOUNT_MODES)
    # An operand spelled like an option is read as an operand.
    tricky = ["bwrap", "--setenv", "X", "--tmpfs", "--hostname", "--bind", *vector[1:]]
    assert mounts(tricky) == found


def _evidence(layer: str, grants: dict[str, list[dict[str, str]]]) -> dict[str, object]:
    return {
        "layer": layer,
        "endpoints": {"run_tree": "/var/tmp/w/abc"},
        "policy": {"grants": grants},
    }


@pytest.mark.parametrize("layer", list(Layer))
def test_the_picture_draws_the_grants_the_layer_read(layer: Layer) -> None:
    grants = {
        role: [
            {"target": "/input", "mode": "read-only", "source": f"/var/tmp/w/abc/run/{role}/in"},
            {"target": f"/var/tmp/w/abc/run/{role}/out/x", "mode": "read-write"},
            {"target": "/proc", "mode": "own /proc"},
        ]
        for role in ROLES
    }
    for view in role_views(_evidence(layer.value, grants)):
        first, second, third = view.mounts
        assert (first.target, first.mode) == ("/input", "read-only")
        assert first.source == f"{RUN_TREE}/run/{view.role}/in"
        assert (second.target, second.mode, second.source) == (
            f"{RUN_TREE}/run/{view.role}/out/x",
            "read-write",
            None,
        )
        assert (third.mode, third.glyph) == ("own /proc", "\u25cb")


def test_a_run_without_grants_draws_no_mount() -> None:
    for view in role_views(_evidence("bubblewrap", {})):
        assert view.mounts == ()


@pytest.mark.parametrize("layer", list(Layer))
def test_each_layer_lists_the_elements_break_may_leave_out(layer: Layer) -> None:
    listed = answers(layer).policy_elements()
    assert {role for role, _, _ in listed} == set(ROLES)
    assert len(set(listed)) == len(listed), "an element is listed once per role"
    # Most elements are watched by a check that fails without them; the rest are redundant.
    assert any(watched for _, _, watched in listed)
    assert all(watched is None or "." in watched for _, _, watched in listed)
